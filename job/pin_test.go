package job_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// stopByOthers starts c, a sleep, stops its unit as someone else would
// (another connection) and waits until the unit is inactive or unloaded.
func stopByOthers(t *testing.T, c *job.Cmd) {
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
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not stopped after 2 s", c.Unit)
}

// TestPinKeepsOutcome: a unit stopped by someone else before its outcome
// is read stays loaded, its outcome is read afterwards, and the release
// leaves neither it nor its pin: for a live client, by the reference the
// unit keeps for it (AddRef=yes), and with Pin, by its pin also.
func TestPinKeepsOutcome(t *testing.T) {
	c := job.Command(systemdtest.Conn(t), "/bin/sleep", "60")
	stopByOthers(t, c)
	time.Sleep(500 * time.Millisecond) // systemd collects at once; this leaves it the time
	var ee *job.ExitError
	if err := c.Wait(); !errors.As(err, &ee) || ee.Signal != syscall.SIGTERM {
		t.Fatalf("Wait of a unit kept for its client: %v, want killed by SIGTERM", err)
	}
	if !gone(t, c.Unit) {
		t.Errorf("%s still loaded after the release", c.Unit)
	}

	c = job.Command(systemdtest.Conn(t), "/bin/sleep", "60")
	c.Pin = true
	stopByOthers(t, c)
	time.Sleep(500 * time.Millisecond) // systemd collects at once; this leaves it the time
	p, err := systemdtest.Conn(t).Properties(context.Background(), c.Unit, manager.UnitIface)
	if err != nil || p["LoadState"].Value() != "loaded" {
		t.Fatalf("pinned unit after a stop: %v, %v; want loaded", p["LoadState"], err)
	}
	if p, err := systemdtest.Conn(t).Properties(context.Background(), job.PinName(c.Unit), manager.UnitIface); err != nil || p["ActiveState"].Value() != "active" {
		t.Errorf("pin %s: %v, %v; want active", job.PinName(c.Unit), p["ActiveState"], err)
	}
	if err := c.Wait(); !errors.As(err, &ee) || ee.Signal != syscall.SIGTERM {
		t.Fatalf("Wait: %v, want killed by SIGTERM", err)
	}
	if !gone(t, c.Unit) || !gone(t, job.PinName(c.Unit)) {
		t.Errorf("%s or %s still loaded after the release", c.Unit, job.PinName(c.Unit))
	}
}

// startAbandoned starts the shell script, pinned, on a connection of its
// own that it then closes, as a caller that dies after the start does, and
// returns the unit's name.
func startAbandoned(t *testing.T, script string, args ...string) string {
	t.Helper()
	c := job.Command(systemdtest.Dial(t), "/bin/sh", append([]string{"-c", script}, args...)...)
	c.Pin = true
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	c.Manager.Close() // the caller is gone; its Wait never comes
	return c.Unit
}

// TestAttachPinned: a pinned run whose Cmd is abandoned (its process died)
// and whose unit was stopped meanwhile is read by Attach, which releases
// the unit and its pin. The drop-in that carried its command line (a word
// with '$') stays while the pin keeps the unit loaded, and is gone once
// Attach released it: systemd removed it with the unit.
func TestAttachPinned(t *testing.T) {
	ctx := context.Background()
	name := startAbandoned(t, "sleep 0.2; exit $0", "7")
	mgr := systemdtest.Conn(t)
	dropIn := filepath.Join(systemdtest.TransientUnitDir(t), name+".d")
	if _, err := os.Lstat(dropIn); err != nil {
		t.Errorf("the run's drop-in while it runs: %v", err)
	}
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
	if _, err := os.Lstat(dropIn); err != nil {
		t.Errorf("the run's drop-in while its pin keeps it loaded: %v", err)
	}
	st, err := job.Attach(ctx, mgr, name, nil)
	var ee *job.ExitError
	if !errors.As(err, &ee) || st.ExitCode != 7 {
		t.Fatalf("Attach: %v %+v, want exit status 7", err, st)
	}
	if !gone(t, name) || !gone(t, job.PinName(name)) {
		t.Errorf("%s or its pin still loaded after Attach", name)
	}
	if _, err := os.Lstat(dropIn); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in after Attach released the unit: %v, want it gone", err)
	}
}

// TestPinnedSuccessKept: a pinned run that exits 0 while no one watches it
// goes inactive (a pinned unit has no RemainAfterExit), and stays loaded
// with its outcome until Attach reads it and releases it and its pin.
func TestPinnedSuccessKept(t *testing.T) {
	ctx := context.Background()
	name := startAbandoned(t, "sleep 0.2; echo done")
	mgr := systemdtest.Conn(t)
	systemdtest.WaitActiveState(t, mgr, name, "inactive")
	time.Sleep(500 * time.Millisecond) // systemd collects at once; this leaves it the time
	p, err := mgr.Properties(ctx, name, manager.ServiceIface)
	if err != nil || p["ExecMainStatus"].Value() != int32(0) || p["ExecMainCode"].Value() != int32(1) {
		t.Fatalf("pinned unit after its exit: %v, %v; want loaded, exited with status 0", p, err)
	}
	st, err := job.Attach(ctx, mgr, name, nil)
	if err != nil || st.ExitCode != 0 || st.Result != "success" {
		t.Fatalf("Attach: %v %+v, want a success", err, st)
	}
	if !gone(t, name) || !gone(t, job.PinName(name)) {
		t.Errorf("%s or its pin still loaded after Attach", name)
	}
}

// TestKeepLeavesPinnedUnit: a pinned run whose Keep says true after Exited
// is not released by Wait: the unit and its pin stay loaded with the
// outcome, which Attach reads later, releasing both; Wait reports the run
// as usual.
func TestKeepLeavesPinnedUnit(t *testing.T) {
	ctx := context.Background()
	c := job.Command(systemdtest.Conn(t), "/bin/sh", "-c", "exit 7")
	c.Pin = true
	exited := false
	c.Exited = func(*job.Status, error) { exited = true }
	c.Keep = func() bool { return exited }
	var ee *job.ExitError
	if err := c.Run(); !errors.As(err, &ee) || ee.ExitCode != 7 {
		t.Fatalf("Run: %v, want exit status 7", err)
	}
	mgr := systemdtest.Conn(t)
	for _, name := range []string{c.Unit, job.PinName(c.Unit)} {
		if p, err := mgr.Properties(ctx, name, manager.UnitIface); err != nil || p["LoadState"].Value() != "loaded" {
			t.Fatalf("%s after Wait of a kept run: %v, %v; want loaded", name, p["LoadState"], err)
		}
	}
	st, err := job.Attach(ctx, mgr, c.Unit, nil)
	if !errors.As(err, &ee) || st.ExitCode != 7 {
		t.Fatalf("Attach to the kept unit: %v %+v, want exit status 7", err, st)
	}
	if !gone(t, c.Unit) || !gone(t, job.PinName(c.Unit)) {
		t.Errorf("%s or its pin still loaded after Attach", c.Unit)
	}
}
