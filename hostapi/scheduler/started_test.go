package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestRecoverNeverStarted recovers three running records whose units are
// gone and left no outcome: the one never marked started (its daemon died
// before creating the unit) runs now and records its real exit status; the
// one marked started fails saying its outcome is lost; the unmarked one of
// an earlier boot of the host (which may have lost the mark in a crash)
// fails saying the host restarted, and is not run again.
func TestRecoverNeverStarted(t *testing.T) {
	d1, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	store := d1.store
	running := func(marked bool, boot string) *api.Record {
		id := store.NewID()
		r := &api.Record{ID: id, Op: "echo", Args: []string{"again", "5"}, State: api.StateRunning, BootID: boot,
			Unit: "unitrun-op-echo-" + strings.ToLower(id) + ".service", CreatedAt: time.Now().UTC()}
		if err := store.Put(r); err != nil {
			t.Fatal(err)
		}
		if marked {
			if err := store.MarkStarted(id); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	if d1.bootID == "" {
		t.Fatal("the daemon read no boot ID from /proc/sys/kernel/random/boot_id")
	}
	unstarted, lost := running(false, d1.bootID), running(true, d1.bootID)
	rebooted := running(false, "0123456789abcdef0123456789abcdef")
	d2 := New(d1.cfg, store, systemdtest.Conn(t))
	if err := d2.Recover(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := d2.Wait(ctx, unstarted.ID)
	if err != nil || r.State != api.StateFailed || daemontest.ExitCode(r) != 5 || r.OutputTail != "out:again:uid:0\nerr\n" {
		t.Errorf("never started job: %+v, %v: want it run, exit code 5 and its output", r, err)
	}
	r, err = d2.Wait(ctx, lost.ID)
	if err != nil || r.State != api.StateFailed || r.ExitCode != nil || !strings.Contains(r.Message, "left no outcome") {
		t.Errorf("started job without outcome: %+v, %v: want failed, its outcome lost", r, err)
	}
	r, err = d2.Wait(ctx, rebooted.ID)
	if err != nil || r.State != api.StateFailed || r.ExitCode != nil || !strings.Contains(r.Message, "the host restarted while the job ran") {
		t.Errorf("job of an earlier boot: %+v, %v: want failed, the host restarted", r, err)
	}
	d2.Close() // the outcome is recorded as soon as known, the mark may follow
	if ok, err := store.Started(rebooted.ID); ok || err != nil {
		t.Errorf("job of an earlier boot: marked started %v, %v: want it not run again", ok, err)
	}
	if ok, err := store.Started(unstarted.ID); !ok || err != nil {
		t.Errorf("never started job after its run: marked %v, %v", ok, err)
	}
}
