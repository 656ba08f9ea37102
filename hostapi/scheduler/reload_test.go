package scheduler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestReloadWhileCalling reloads a daemon's ops again and again while
// callers call, list and scrape it (run with -race): each call gets the
// ops of one config or the other; after the last reload, its ops are the
// ones served, an op it removed is unknown, and a [limits] change is
// reported, not applied.
func TestReloadWhileCalling(t *testing.T) {
	d, dir := newTestScheduler(t, systemdtest.Conn(t), "")
	apiSock, _ := serveTest(t, d)
	load := func(name, text string) *config.Config {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	both := load("both.toml", "[[op]]\nname = \"echo\"\nexec = [\"/bin/echo\"]\nargs = { max = 1 }\n\n[[op]]\nname = \"extra\"\nexec = [\"/bin/true\"]\n")
	one := load("one.toml", "[[op]]\nname = \"echo\"\nexec = [\"/bin/echo\"]\nargs = { max = 1 }\n\n[limits]\nmax_queue = 3\n")

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			d.Reload([]*config.Config{both, one}[i%2])
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			daemontest.Curl(t, apiSock, nil, "http://unitrun/v1/ops")
			daemontest.Curl(t, apiSock, nil, "http://unitrun/metrics")
		}
	}()
	for range 5 {
		if r := call(t, d, "echo", "hi"); r.State != api.StateSucceeded {
			t.Errorf("echo during reloads: %s %s", r.State, r.Message)
		}
	}
	close(stop)
	wg.Wait()

	if d.Reload(both) {
		t.Error("Reload of a config with the daemon's limits says they differ")
	}
	if r := call(t, d, "extra"); r.State != api.StateSucceeded {
		t.Errorf("extra after the reload that adds it: %s %s", r.State, r.Message)
	}
	if !d.Reload(one) {
		t.Error("Reload of a config with other limits does not say they differ")
	}
	if d.cfg.Limits.MaxQueue == 3 {
		t.Error("Reload applied max_queue from the new config")
	}
	_, err := d.Call(context.Background(), root, "extra", nil)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeUnknownOp {
		t.Errorf("extra after the reload that removes it: %v, want %s", err, api.CodeUnknownOp)
	}
}
