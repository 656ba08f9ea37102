package job_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// stoppedByOthers starts c, a sleep, stops its unit as someone else would
// (another connection) and returns the unit's LoadState once it is inactive
// and systemd has had the time to collect it.
func stoppedByOthers(t *testing.T, c *job.Cmd) string {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other := systemdtest.Dial(t)
	if _, err := other.StopUnit(ctx, c.Unit, "replace"); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		p, err := other.Properties(ctx, c.Unit, manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		if s := p["ActiveState"].Value(); s == "inactive" || s == "failed" || p["LoadState"].Value() != "loaded" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // systemd collects at once; this leaves it the time
	p, err := other.Properties(ctx, c.Unit, manager.UnitIface)
	if err != nil {
		t.Fatal(err)
	}
	return p["LoadState"].Value().(string)
}

// TestPinKeepsOutcome: a pinned unit stopped by someone else before its
// outcome is read stays loaded, its outcome is read afterwards, and the
// release leaves neither it nor its pin; without the pin systemd collects
// the unit at the stop.
func TestPinKeepsOutcome(t *testing.T) {
	c := job.Command(systemdtest.Conn(t), "/bin/sleep", "60")
	if state := stoppedByOthers(t, c); state != "not-found" {
		t.Errorf("unpinned unit after a stop: %s, want not-found (collected)", state)
	}
	c.Wait()

	c = job.Command(systemdtest.Conn(t), "/bin/sleep", "60")
	c.Pin = true
	if state := stoppedByOthers(t, c); state != "loaded" {
		t.Fatalf("pinned unit after a stop: %s, want loaded", state)
	}
	var ee *job.ExitError
	if err := c.Wait(); !errors.As(err, &ee) || ee.Signal != syscall.SIGTERM {
		t.Fatalf("Wait: %v, want killed by SIGTERM", err)
	}
	pin := c.Unit[:len(c.Unit)-len(".service")] + ".path"
	if !gone(t, c.Unit) || !gone(t, pin) {
		t.Errorf("%s or %s still loaded after the release", c.Unit, pin)
	}
}

// TestAttachPinned: a pinned run whose Cmd is abandoned (its process died)
// and whose unit was stopped meanwhile is read by Attach, which releases
// the unit and its pin.
func TestAttachPinned(t *testing.T) {
	ctx := context.Background()
	c := job.Command(systemdtest.Dial(t), "/bin/sh", "-c", "sleep 0.2; exit 7")
	c.Pin = true
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	name := c.Unit
	c.Manager.Close() // the caller is gone; its Wait never comes
	mgr := systemdtest.Conn(t)
	for range 100 {
		p, err := mgr.Properties(ctx, name, manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		if p["SubState"].Value() == "exited" || p["ActiveState"].Value() == "failed" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := mgr.ResetFailedUnit(ctx, name); err != nil {
		t.Logf("reset-failed: %v", err)
	}
	st, err := job.Attach(ctx, mgr, name, nil)
	var ee *job.ExitError
	if !errors.As(err, &ee) || st.ExitCode != 7 {
		t.Fatalf("Attach: %v %+v, want exit status 7", err, st)
	}
	if !gone(t, name) || !gone(t, name[:len(name)-len(".service")]+".path") {
		t.Errorf("%s or its pin still loaded after Attach", name)
	}
}
