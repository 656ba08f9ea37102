package scheduler_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// streamConfig has an op that writes 20 MB of output over a few seconds.
const streamConfig = `
[[op]]
name = "stream"
exec = ["/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do head -c 200000 /dev/zero; sleep 0.03; i=$((i+1)); done"]

[[op]]
name = "true"
exec = ["/bin/true"]

[limits]
read_header_timeout = "1s"
write_timeout = "1s"
`

// TestBadClients follows a 20 MB log with 20 callers that go away mid
// stream and 10 that never read, while 10 others send their headers a
// byte at a time: the daemon answers other calls throughout, a caller that
// reads gets the whole log, and the daemon's fds come back to where they
// were (the callers that never read still holding their connections) with
// its threads bounded.
func TestBadClients(t *testing.T) {
	d := systemdtest.StartDaemon(t, streamConfig)
	ctx := faultCtx(t, 2*time.Minute)
	healthy(ctx, t, d, "true")
	base := readProcStats(t, d.Cmd.Process.Pid)
	c := client.New(d.API)
	id, err := c.Call(ctx, "stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	request := "GET /v1/jobs/" + id + "/logs?follow=1 HTTP/1.1\r\nHost: unitrun\r\n\r\n"
	dial := func() net.Conn {
		conn, err := net.Dial("unix", d.API)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}

	var wg sync.WaitGroup
	for range 20 { // read 100 kB, then go away
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := dial()
			defer conn.Close()
			conn.Write([]byte(request))
			if _, err := io.CopyN(io.Discard, conn, 100_000); err != nil {
				t.Errorf("dropper: %v", err)
			}
		}()
	}
	var stalled []net.Conn // send the request, never read
	for range 10 {
		conn := dial()
		defer conn.Close()
		conn.Write([]byte(request))
		stalled = append(stalled, conn)
	}
	for range 10 { // headers a byte at a time: cut off by read_header_timeout
		wg.Go(func() {
			if err := slowHeaders(ctx, d.API, 50*time.Millisecond, nil); err != nil {
				t.Errorf("slow headers: %v", err)
			}
		})
	}
	for range 10 {
		healthy(ctx, t, d, "true")
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	if rec, err := c.Wait(ctx, id); err != nil || !rec.Done() {
		t.Fatalf("stream job: %+v, %v", rec, err)
	}
	var n countWriter
	if err := c.Logs(ctx, id, true, &n); err != nil || n != 20_000_000 {
		t.Errorf("full log read: %d bytes, %v: want 20000000", n, err)
	}
	after := settleFDs(ctx, t, d, base.FDs+5)
	t.Logf("daemon before: %v; after, 10 stalled callers still connected: %v", base, after)
	if after.FDs > base.FDs+5 {
		t.Errorf("daemon fds %d after the bad callers, %d before: want at most 5 more", after.FDs, base.FDs)
	}
	if after.Threads > base.Threads+30 {
		t.Errorf("daemon threads %d after the bad callers, %d before", after.Threads, base.Threads)
	}
	healthy(ctx, t, d, "true")
	for _, conn := range stalled {
		conn.Close()
	}
}

// countWriter counts the bytes written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
