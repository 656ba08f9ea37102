package hostapi_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/hostapi"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// TestManagerGoneAndBack runs the daemon binary on a manager of its own,
// stops that manager while the daemon runs and a job is running, then
// boots it again. While it is gone, calls on both front ends are refused
// with manager_unavailable and the daemon still answers reads; once the
// manager is back the same daemon runs jobs again, and the job that ran
// is failed, saying its outcome was lost with its manager.
func TestManagerGoneAndBack(t *testing.T) {
	ctx := faultCtx(t, 2*time.Minute)
	dir, err := os.MkdirTemp("", "unitrun-mgr-")
	if err != nil {
		t.Fatal(err)
	}
	e := &manager.Embedded{Dir: dir}
	if _, err := e.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Stop(ctx, 10*time.Second)
		os.RemoveAll(dir)
	})
	d := systemdtest.NewDaemon(t, reloadConfig)
	d.Env = append([]string{manager.EnvManager + "=private:" + e.Socket()}, e.Env()...)
	d.Start(t)
	c := client.New(d.API)

	runs := func(code string) {
		t.Helper()
		id, err := c.Call(ctx, "exit", []string{"1", code, "0"})
		if err != nil {
			t.Fatal(err)
		}
		if rec, err := c.Wait(ctx, id); err != nil || rec.ExitCode == nil || *rec.ExitCode != 0 && code == "0" || rec.OutputTail != "job 1\n" {
			t.Fatalf("job: %+v, %v: want exit status %s", rec, err, code)
		}
	}
	runs("0")
	running, err := c.Call(ctx, "exit", []string{"2", "0", "600"})
	if err != nil {
		t.Fatal(err)
	}

	if err := e.Stop(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(ctx, "exit", []string{"3", "0", "0"})
	var he *hostapi.Error
	if !errors.As(err, &he) || he.Code != hostapi.CodeManagerUnavailable {
		t.Errorf("HTTP call with the manager gone: %v, want code %s", err, hostapi.CodeManagerUnavailable)
	}
	ok, id, msg, err := seqCall(ctx, d.Argv, seqRequest(t, "exit", "4", "0", "0"))
	if err != nil || ok || id != "" || !strings.HasPrefix(msg, hostapi.CodeManagerUnavailable+": ") {
		t.Errorf("SEQPACKET call with the manager gone: %v %q %q, %v", ok, id, msg, err)
	}
	if recs, err := c.Jobs(ctx); err != nil || len(recs) != 2 {
		t.Errorf("jobs with the manager gone: %d, %v: want the 2 accepted ones", len(recs), err)
	}

	if _, err := e.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		id, err := c.Call(ctx, "exit", []string{"1", "6", "0"})
		if errors.As(err, &he) && he.Code == hostapi.CodeManagerUnavailable {
			continue // the daemon has not redialled yet
		}
		if err != nil {
			t.Fatalf("call once the manager is back: %v", err)
		}
		rec, err := c.Wait(ctx, id)
		if err != nil || rec.ExitCode == nil || *rec.ExitCode != 6 {
			t.Fatalf("job once the manager is back: %+v, %v: want exit status 6", rec, err)
		}
		break
	}
	healthy(ctx, t, d, "exit", "1", "0", "0")
	rec, err := c.Wait(ctx, running)
	if err != nil {
		t.Fatalf("job running when the manager went away: %v", err)
	}
	// The manager's exit stops the unit; what its ExecStopPost= did is
	// not seen then, so the daemon says the outcome is lost.
	if rec.State != hostapi.StateFailed || !strings.Contains(rec.Message, "outcome is lost") {
		t.Errorf("job running when the manager went away: %+v: want failed, its outcome lost", rec)
	}
}
