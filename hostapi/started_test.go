package hostapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestRecoverNeverStarted recovers two running records whose units are
// gone and left no outcome: the one never marked started (its daemon died
// before creating the unit) runs now and records its real exit status; the
// one marked started fails saying its outcome is lost.
func TestRecoverNeverStarted(t *testing.T) {
	d1, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	store := d1.store
	running := func(marked bool) *Record {
		id := store.NewID()
		r := &Record{ID: id, Op: "echo", Args: []string{"again", "5"}, State: StateRunning,
			Unit: "unitrun-op-echo-" + strings.ToLower(id) + ".service", CreatedAt: time.Now().UTC()}
		if err := store.Put(r); err != nil {
			t.Fatal(err)
		}
		if marked {
			if err := store.markStarted(id); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	unstarted, lost := running(false), running(true)
	d2 := NewDaemon(d1.cfg, store, systemdtest.Conn(t))
	if err := d2.Recover(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := d2.Wait(ctx, unstarted.ID)
	if err != nil || r.State != StateFailed || exitCode(r) != 5 || r.OutputTail != "out:again:uid:0\nerr\n" {
		t.Errorf("never started job: %+v, %v: want it run, exit code 5 and its output", r, err)
	}
	r, err = d2.Wait(ctx, lost.ID)
	if err != nil || r.State != StateFailed || r.ExitCode != nil || !strings.Contains(r.Message, "left no outcome") {
		t.Errorf("started job without outcome: %+v, %v: want failed, its outcome lost", r, err)
	}
	d2.Close() // the outcome is recorded as soon as known, the mark may follow
	if ok, err := store.started(unstarted.ID); !ok || err != nil {
		t.Errorf("never started job after its run: marked %v, %v", ok, err)
	}
}
