package scheduler_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// TestManagerGoneAndBack runs the daemon binary on a manager of its own,
// makes that manager exit while the daemon runs and a job is running, then
// boots it again. While it is gone, calls on both front ends are refused
// with manager_unavailable and the daemon still answers reads; once the
// manager is back the same daemon runs jobs again. When the manager
// exited the orderly way, through exit.target (as "systemctl --user exit"
// and a logout do), it stopped the job's unit, with SIGTERM, before it
// closed its connections: the job is recorded as killed by SIGTERM. When
// it exited at once (its D-Bus Exit method), no unit is stopped and the
// job's unit, with its outcome, goes with the manager: the job is failed,
// saying its outcome was lost.
func TestManagerGoneAndBack(t *testing.T) {
	t.Run("exit.target", func(t *testing.T) {
		managerGoneAndBack(t, func(c *manager.Conn, ctx context.Context) error {
			_, err := c.StartUnit(ctx, "exit.target", "replace-irreversibly")
			return err
		}, func(t *testing.T, rec *api.Record) {
			if rec.State != api.StateFailed || rec.Signal != "TERM" || rec.Message != "signal: SIGTERM" {
				t.Errorf("job running when the manager exited: %+v: want failed by SIGTERM, the stop of its unit", rec)
			}
		})
	})
	t.Run("Exit", func(t *testing.T) {
		managerGoneAndBack(t, (*manager.Conn).Exit, func(t *testing.T, rec *api.Record) {
			if rec.State != api.StateFailed || !strings.Contains(rec.Message, "outcome is lost") {
				t.Errorf("job running when the manager exited: %+v: want failed, its outcome lost", rec)
			}
		})
	})
}

// managerGoneAndBack is TestManagerGoneAndBack with the manager made to
// exit by exit, and the record of the job that ran then checked by check.
func managerGoneAndBack(t *testing.T, exit func(*manager.Conn, context.Context) error, check func(*testing.T, *api.Record)) {
	ctx := faultCtx(t, 2*time.Minute)
	e, d := ownManagerDaemon(ctx, t)
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

	conn, err := manager.Dial(ctx, e.Target())
	if err != nil {
		t.Fatal(err)
	}
	// The job's command must run before the manager exits, else the
	// exit stops a unit still starting.
	waitRunning(ctx, t, c, conn, running)
	err = exit(conn, ctx)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Let the manager end by itself: Stop would make it exit at once.
	for e.Running() && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Stop(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The daemon learns of it from its connection, not at once: a call
	// that comes first is taken, and fails when its unit cannot start.
	for !strings.Contains(d.Log(), "the connection to the manager") && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	_, err = c.Call(ctx, "exit", []string{"3", "0", "0"})
	var he *api.Error
	if !errors.As(err, &he) || he.Code != api.CodeManagerUnavailable {
		t.Errorf("HTTP call with the manager gone: %v, want code %s", err, api.CodeManagerUnavailable)
	}
	ok, id, msg, err := seqCall(ctx, d.Argv, seqRequest(t, "exit", "4", "0", "0"))
	if err != nil || ok || id != "" || !strings.HasPrefix(msg, api.CodeManagerUnavailable+": ") {
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
		if errors.As(err, &he) && he.Code == api.CodeManagerUnavailable {
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
	check(t, rec)
}

// waitRunning waits until the command of job id runs in its unit and the
// unit's start job is over: the unit is active. (A main PID alone is
// not enough: systemd sets it at the fork, while the start job runs until
// the exec, and a stop then cancels that job.)
func waitRunning(ctx context.Context, t *testing.T, c *client.Client, conn *manager.Conn, id string) *api.Record {
	t.Helper()
	rec, err := c.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	systemdtest.WaitActiveState(t, conn, rec.Unit, "active")
	return rec
}

// TestJobEndsWhileDisconnected stops a job's unit while the daemon's
// connection to the manager is down: the daemon is SIGSTOPped across a
// daemon-reexec, which closes the manager's connections, and the unit is
// stopped meanwhile. Its pin keeps it loaded, with its outcome; the
// daemon, once it has redialled, records that outcome, not an outcome
// lost.
func TestJobEndsWhileDisconnected(t *testing.T) {
	ctx := faultCtx(t, 2*time.Minute)
	e, d := ownManagerDaemon(ctx, t)
	c := client.New(d.API)
	conn, err := manager.Dial(ctx, e.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	id, err := c.Call(ctx, "exit", []string{"1", "0", "600"})
	if err != nil {
		t.Fatal(err)
	}
	rec := waitRunning(ctx, t, c, conn, id)
	if err := d.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A stopped daemon would not stop at the test's end: whatever fails
	// below, it runs again first.
	defer d.Cmd.Process.Signal(syscall.SIGCONT)
	if err := conn.Reexecute(ctx); err != nil {
		t.Fatal(err)
	}
	// A call that meets the connection still closing fails; conn redials.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := conn.StopUnit(ctx, rec.Unit, "replace")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stop after daemon-reexec: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		props, err := conn.Properties(ctx, rec.Unit, manager.UnitIface)
		if err == nil && props["ActiveState"].Value() == "inactive" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unit %s not inactive after its stop: %v, %v", rec.Unit, props["ActiveState"], err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := d.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	rec, err = c.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != api.StateFailed || rec.Signal != "TERM" || rec.Message != "signal: SIGTERM" {
		t.Errorf("job stopped while the daemon was disconnected: %+v: want failed by SIGTERM, as its unit kept", rec)
	}
}

// ownManagerDaemon boots a manager of the test's own and starts the daemon
// binary on it, with reloadConfig's ops.
func ownManagerDaemon(ctx context.Context, t *testing.T) (*manager.Embedded, *systemdtest.Daemon) {
	t.Helper()
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
	return e, d
}
