package front_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// briefOp runs a second and stops when its caller goes away.
const briefOp = `
[[op]]
name = "brief"
exec = ["/bin/sh", "-c", "sleep 1; echo done"]
on_disconnect = "stop"
`

// TestHalfClosedCaller has callers shut down their writing side once
// their request is sent, as many clients do, and wait for the answer: a
// SEQPACKET call, an HTTP call with "wait", an HTTP wait and an HTTP
// cancel each get the job's final record, and a job whose op stops on
// disconnect runs to its end. A SEQPACKET caller that closes its
// connection has gone, and its job is stopped.
func TestHalfClosedCaller(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), briefOp)
	apiSock, argv := serveTest(t, d)
	ctx := t.Context()

	c, err := net.Dial("unixpacket", argv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("brief\x00"))
	c.(*net.UnixConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if ok, id, msg, err := api.ParseResponse(buf[:n]); err != nil || !ok || msg != "exit status 0" {
		t.Errorf("SEQPACKET half-closed: %v %q %q, %v: want ok and exit status 0", ok, id, msg, err)
	}

	// halfClosedHTTP sends req, shuts down its writing side and returns
	// the answer.
	halfClosedHTTP := func(req string) (int, api.Record) {
		t.Helper()
		c, err := net.Dial("unix", apiSock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte(req))
		c.(*net.UnixConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		defer resp.Body.Close()
		var rec api.Record
		if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
			t.Errorf("%q: %s: %v", req, resp.Status, err)
		}
		return resp.StatusCode, rec
	}
	body := `{"wait": true}`
	status, rec := halfClosedHTTP(fmt.Sprintf("POST /v1/ops/brief HTTP/1.1\r\nHost: unitrun\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	if status != http.StatusOK || rec.State != api.StateSucceeded || rec.OutputTail != "done\n" {
		t.Errorf("HTTP call half-closed: %d %+v: want 200 and the succeeded record", status, rec)
	}

	started, err := d.Call(ctx, root, "brief", nil)
	if err != nil {
		t.Fatal(err)
	}
	status, rec = halfClosedHTTP("GET /v1/jobs/" + started.ID + "/wait HTTP/1.1\r\nHost: unitrun\r\n\r\n")
	if status != http.StatusOK || rec.ID != started.ID || rec.State != api.StateSucceeded {
		t.Errorf("HTTP wait half-closed: %d %+v: want 200 and the succeeded record", status, rec)
	}

	started, err = d.Call(ctx, root, "linger", nil)
	if err != nil {
		t.Fatal(err)
	}
	status, rec = halfClosedHTTP("DELETE /v1/jobs/" + started.ID + " HTTP/1.1\r\nHost: unitrun\r\n\r\n")
	if status != http.StatusOK || rec.ID != started.ID || rec.State != api.StateCanceled {
		t.Errorf("HTTP cancel half-closed: %d %+v: want 200 and the canceled record", status, rec)
	}

	// A caller that closes its connection has gone.
	c, err = net.Dial("unixpacket", argv)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("stopme\x00"))
	var id string
	for id == "" {
		recs, _ := d.List()
		for _, r := range recs {
			if tail := daemontest.Output(d, r.ID); r.Op == "stopme" && strings.HasPrefix(tail, "started") && !r.Done() {
				id = r.ID
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Close()
	if r, err := d.Wait(ctx, id); err != nil || r.State != api.StateCanceled {
		t.Errorf("stopme after its SEQPACKET caller closed: %+v, %v: want canceled", r, err)
	}
}
