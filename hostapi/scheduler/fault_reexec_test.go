package scheduler_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// reexecConfig has an op like loadConfig's echo whose command also
// appends a line to a file named by its first arg in @DIR@.
const reexecConfig = `
[[op]]
name = "echo"
exec = ["/bin/sh", "-c", "echo ran >> @DIR@/\"$1\"; echo \"$1\"; exit \"$2\"", "sh"]
args = { min = 2, max = 2, pattern = "^[0-9]+$" }
prefix = "unitrun-reexec-"

[limits]
max_live_jobs = 512
`

// TestReexecsUnderLoad has 40 callers, half over HTTP and half over
// SEQPACKET, call without pause while the manager is daemon-reloaded,
// then daemon-reexecuted twice, each after 20 more calls were answered,
// so that start calls are in flight when the manager closes its
// connections. Every call must be answered with its own job's exit status
// and output, and every job's command must have run exactly once: a
// reexec costs latency, never an outcome.
func TestReexecsUnderLoad(t *testing.T) {
	const callers, between = 40, 20
	dir := t.TempDir()
	d := systemdtest.StartDaemon(t, strings.ReplaceAll(reexecConfig, "@DIR@", dir))
	ctx := faultCtx(t, 3*time.Minute)
	mgr := systemdtest.Dial(t)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", d.API)
		}}}
	defer hc.CloseIdleConnections()

	var stop atomic.Bool
	var calls atomic.Int64
	answered := make(chan struct{}, 4096)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load() && ctx.Err() == nil; n++ {
				tag, code := strconv.Itoa(c*100000+n), (c+n)%7
				var err error
				if c%2 == 0 {
					err = httpEcho(ctx, hc, tag, code)
				} else {
					err = seqEcho(ctx, d.Argv, tag, code)
				}
				calls.Add(1)
				if err != nil {
					t.Errorf("caller %d call %d: %v", c, n, err)
				}
				answered <- struct{}{}
			}
		}()
	}
	for _, step := range []struct {
		name string
		do   func(context.Context) error
	}{{"daemon-reload", mgr.Reload}, {"daemon-reexec", mgr.Reexecute}, {"daemon-reexec", mgr.Reexecute}, {"end", nil}} {
		for range between {
			select {
			case <-answered:
			case <-ctx.Done():
				t.Fatalf("before %s: %v", step.name, ctx.Err())
			}
		}
		if step.do != nil {
			if err := step.do(ctx); err != nil {
				t.Errorf("%s: %v", step.name, err)
			}
		}
	}
	stop.Store(true)
	go func() {
		for range answered {
		}
	}()
	wg.Wait()
	close(answered)
	t.Logf("%d calls across a daemon-reload and 2 daemon-reexecs", calls.Load())

	runs, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(runs)) != calls.Load() {
		t.Errorf("%d commands ran for %d calls", len(runs), calls.Load())
	}
	for _, e := range runs {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); string(b) != "ran\n" {
			t.Errorf("the command of call %s ran %q times (%v), want once", e.Name(), b, err)
		}
	}
	healthy(ctx, t, d, "echo", "1", "0")
	waitNoUnits(ctx, t, "unitrun-reexec-")
}
