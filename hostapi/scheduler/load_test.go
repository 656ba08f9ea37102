package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// loadConfig has an op whose output and exit status depend on its args,
// and room for every caller's job at once.
const loadConfig = `
[[op]]
name = "echo"
exec = ["/bin/sh", "-c", "echo \"$1\"; exit \"$2\"", "sh"]
args = { min = 2, max = 2, pattern = "^[0-9]+$" }
prefix = "unitrun-load-"

[limits]
max_live_jobs = 512
`

// TestLoadBothFrontEnds has 200 callers, half over HTTP and half over
// SEQPACKET, call an op for 5 s, each call with its own args: every call
// must get its own right answer, and once the load is over the daemon's
// fds come back to within 5 of where they were and its memory stays
// bounded.
func TestLoadBothFrontEnds(t *testing.T) {
	const callers = 200
	d := systemdtest.StartDaemon(t, loadConfig)
	ctx := faultCtx(t, 3*time.Minute)
	healthy(ctx, t, d, "echo", "1", "0")
	base := readProcStats(t, d.Cmd.Process.Pid)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", d.API)
		}}}

	end := time.Now().Add(5 * time.Second)
	var calls, bad atomic.Int64
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				tag, code := strconv.Itoa(c*100000+n), (c+n)%5
				var err error
				if c%2 == 0 {
					err = httpEcho(ctx, hc, tag, code)
				} else {
					err = seqEcho(ctx, d.Argv, tag, code)
				}
				calls.Add(1)
				if err != nil {
					bad.Add(1)
					t.Errorf("caller %d call %d: %v", c, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	hc.CloseIdleConnections()
	after := settleFDs(ctx, t, d, base.FDs+5)
	t.Logf("%d calls by %d callers, %d wrong; daemon before: %v; after: %v", calls.Load(), callers, bad.Load(), base, after)
	if calls.Load() < callers {
		t.Errorf("%d calls: want at least one per caller", calls.Load())
	}
	if after.FDs > base.FDs+5 {
		t.Errorf("daemon fds %d after the load, %d before: want at most 5 more", after.FDs, base.FDs)
	}
	if after.RSSKiB > base.RSSKiB+128<<10 {
		t.Errorf("daemon RSS %d KiB after the load, %d KiB before: want at most 128 MiB more", after.RSSKiB, base.RSSKiB)
	}
	healthy(ctx, t, d, "echo", "1", "0")
	waitNoUnits(ctx, t, "unitrun-load-")
}

// httpEcho calls echo with tag and code over HTTP, waiting, and checks the
// record: its own output and exit status.
func httpEcho(ctx context.Context, hc *http.Client, tag string, code int) error {
	body := fmt.Sprintf(`{"args": [%q, "%d"], "wait": true}`, tag, code)
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://unitrun/v1/ops/echo", strings.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	var rec api.Record
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil || resp.StatusCode != http.StatusOK || rec.ExitCode == nil || *rec.ExitCode != code || rec.OutputTail != tag+"\n" {
		return fmt.Errorf("HTTP %s: %s: %v: want exit status %d and output %q", resp.Status, data, err, code, tag)
	}
	return nil
}

// seqEcho calls echo with tag and code over SEQPACKET and checks the
// response: a job id and its exit status.
func seqEcho(ctx context.Context, sock, tag string, code int) error {
	pkt, err := api.EncodeRequest("echo", []string{tag, strconv.Itoa(code)})
	if err != nil {
		return err
	}
	ok, id, msg, err := seqCall(ctx, sock, pkt)
	if err != nil || ok != (code == 0) || id == "" || msg != "exit status "+strconv.Itoa(code) {
		return fmt.Errorf("SEQPACKET: %v %q %q, %v: want exit status %d", ok, id, msg, err, code)
	}
	return nil
}
