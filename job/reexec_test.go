package job_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// TestStartAcrossDaemonReexec starts commands without pause from 8
// goroutines while the manager is daemon-reexecuted 6 times, each time
// once 10 more commands have ended, so that start calls are in flight
// when the manager closes its connections (or, over its bus, leaves the
// bus). Every command must run exactly once (each appends a line to a
// file of its own) and be reported with its own exit status and output:
// a start call lost with the connection is made again only if it never
// reached systemd. It runs on the manager's private socket and over its
// bus (manager.Options.OverBus, as unitrun run reaches it).
func TestStartAcrossDaemonReexec(t *testing.T) {
	for _, over := range []string{"socket", "bus"} {
		t.Run(over, func(t *testing.T) { startAcrossReexec(t, dialOver(t, over)) })
	}
}

// dialOver opens a connection to the test manager on its private socket
// ("socket") or through its session bus ("bus"), closed when t ends.
func dialOver(t *testing.T, over string) *manager.Conn {
	t.Helper()
	if over == "socket" {
		return systemdtest.Dial(t)
	}
	t.Setenv("XDG_RUNTIME_DIR", filepath.Dir(filepath.Dir(systemdtest.Manager(t).Socket())))
	c, err := manager.Open(context.Background(), "user", manager.Options{OverBus: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Target().Peer {
		t.Fatalf("the test manager was reached on its socket, not its bus: %+v", c.Target())
	}
	return c
}

func startAcrossReexec(t *testing.T, conn *manager.Conn) {
	const workers, reexecs, between = 8, 6, 10
	ctl := systemdtest.Dial(t)
	dir := t.TempDir()
	var (
		stop  atomic.Bool
		ended = make(chan struct{}, 1024)
		mu    sync.Mutex
		runs  []error // by job number: what was wrong with it, if anything
		wg    sync.WaitGroup
		next  atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := int(next.Add(1) - 1)
				err := checkOnce(conn, dir, i)
				mu.Lock()
				for len(runs) <= i {
					runs = append(runs, nil)
				}
				runs[i] = err
				mu.Unlock()
				select {
				case ended <- struct{}{}:
				default:
				}
			}
		}()
	}
	for range reexecs {
		for range between {
			<-ended
		}
		if err := ctl.Reexecute(context.Background()); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("daemon-reexec: %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d commands across %d daemon-reexecs", len(runs), reexecs)
	for _, err := range runs {
		if err != nil {
			t.Error(err)
		}
	}
}

// checkOnce runs command i, which appends a line to dir/i, prints i and
// exits with i%256, and returns what is wrong with what was reported or
// with the number of times it ran.
func checkOnce(mgr *manager.Conn, dir string, i int) error {
	file := filepath.Join(dir, fmt.Sprint(i))
	c := job.Command(mgr, "/bin/sh", "-c", `echo ran >> "$1"; echo "$2"; exit $(($2 % 256))`, "sh", file, fmt.Sprint(i))
	out, err := c.Output()
	if b, rerr := os.ReadFile(file); rerr != nil || string(b) != "ran\n" {
		return fmt.Errorf("command %d ran %q times (%v), want once; reported %v", i, b, rerr, err)
	}
	want := i % 256
	var ee *job.ExitError
	switch {
	case want == 0 && err != nil, want != 0 && !errors.As(err, &ee):
		return fmt.Errorf("command %d: %v, want exit status %d", i, err, want)
	case c.Status == nil || c.Status.ExitCode != want:
		return fmt.Errorf("command %d: status %+v, want exit status %d", i, c.Status, want)
	case string(out) != fmt.Sprintf("%d\n", i):
		return fmt.Errorf("command %d: output %q", i, out)
	}
	return nil
}

// TestStartUnitAcrossDaemonReexec is TestStartAcrossDaemonReexec for
// UnitCmd.Run: 8 goroutines start 48 oneshot units of unit files, one each,
// while the manager is daemon-reexecuted 6 times, each time once 6 more
// have ended. Each unit's command must run exactly once and be reported
// with its own exit status.
func TestStartUnitAcrossDaemonReexec(t *testing.T) {
	const units, workers, reexecs, between = 48, 8, 6, 6
	conn, ctl := systemdtest.Dial(t), systemdtest.Dial(t)
	dir, unitDir := t.TempDir(), systemdtest.RuntimeUnitDir(t)
	names := make([]string, units)
	for i := range names {
		names[i] = unit.RandomName(fmt.Sprintf("unitrun-test-reexec%d-", i), "service")
		systemdtest.WriteUnit(t, filepath.Join(unitDir, names[i]), fmt.Sprintf(
			"[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo ran >> %s/%d; exit %d'\n", dir, i, i))
	}
	if err := ctl.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, units)
	ended := make(chan struct{}, units)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < units; i = int(next.Add(1) - 1) {
				st, err := job.Unit(conn, names[i]).Run(context.Background())
				// Lets systemd unload the unit; made again when a reexec took it.
				for manager.IsConnLost(conn.ResetFailedUnit(context.Background(), names[i])) {
					time.Sleep(50 * time.Millisecond)
				}
				if b, rerr := os.ReadFile(filepath.Join(dir, fmt.Sprint(i))); rerr != nil || string(b) != "ran\n" {
					errs[i] = fmt.Errorf("unit %d ran %q times (%v), want once; reported %v", i, b, rerr, err)
				} else if st == nil || st.ExitCode != i || (i == 0) != (err == nil) {
					errs[i] = fmt.Errorf("unit %d: %v (status %+v), want exit status %d", i, err, st, i)
				}
				ended <- struct{}{}
			}
		}()
	}
	for range reexecs {
		for range between {
			<-ended
		}
		if err := ctl.Reexecute(context.Background()); err != nil {
			t.Errorf("daemon-reexec: %v", err)
			break
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestStartCallLost loses the answer of the call that creates a command's
// unit, as a daemon-reexec does, in each of its three ways: after systemd
// made the unit and the command runs (the answer lost), before it did
// (the call lost), and
// with the name taken meanwhile by a unit that someone else made. The
// command runs exactly once in the first two and is reported with its
// exit status and output; the third is ErrUnitExists, the other unit
// untouched.
func TestStartCallLost(t *testing.T) {
	conn := systemdtest.Dial(t)
	dir := t.TempDir()
	// A script, so that the argv goes over D-Bus: no word holds $ or ;,
	// which would take it through a drop-in of the unit's name.
	script := filepath.Join(dir, "cmd.sh")
	if err := os.WriteFile(script, []byte(`while [ ! -e "$2" ]; do sleep 0.01; done; echo ran >> "$1"; echo out; exit 3`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := func(real job.StartTransient, c *manager.Conn, ctx context.Context, name string) {
		props := []unit.Property{unit.Exec("ExecStart", "/bin/sleep", []string{"sleep", "30"})}
		if _, err := real(c, ctx, name, "fail", props); err != nil {
			t.Errorf("someone else's unit %s: %v", name, err)
		}
	}
	for i, how := range []string{"answer", "call", "taken"} {
		t.Run(how, func(t *testing.T) {
			// The command waits for this file.
			proceed := filepath.Join(dir, how+".proceed")
			if how != "answer" {
				os.WriteFile(proceed, nil, 0o600)
			}
			lost := false
			defer job.SetStartTransient(func(real job.StartTransient) job.StartTransient {
				return func(c *manager.Conn, ctx context.Context, name, mode string, props []unit.Property, aux ...manager.Aux) (godbus.ObjectPath, error) {
					if lost {
						return real(c, ctx, name, mode, props, aux...)
					}
					lost = true
					switch how {
					case "answer":
						// The answer is lost once the command runs: the
						// signals of the unit's start, queued, are older
						// than the state the run reads then, and must
						// not take it back (inactive, before the start).
						real(c, ctx, name, mode, props, aux...)
						for p, _ := c.Properties(ctx, name, manager.UnitIface); p["ActiveState"].Value() != "active"; p, _ = c.Properties(ctx, name, manager.UnitIface) {
							time.Sleep(10 * time.Millisecond)
						}
						go func() {
							time.Sleep(300 * time.Millisecond)
							os.WriteFile(proceed, nil, 0o600)
						}()
					case "taken":
						other(real, c, ctx, name)
					}
					return "", godbus.ErrClosed
				}
			})()
			file := filepath.Join(dir, how)
			c := job.Command(conn, "/bin/sh", script, file, proceed)
			c.Name = fmt.Sprintf("unitrun-test-lost%d-%d.service", i, os.Getpid())
			out, err := c.Output()
			if how == "taken" {
				if !errors.Is(err, job.ErrUnitExists) {
					t.Errorf("Run: %v, want ErrUnitExists", err)
				}
				if _, err := os.Stat(file); err == nil {
					t.Error("the command ran")
				}
				if props, err := conn.Properties(context.Background(), c.Name, manager.UnitIface); err != nil || props["ActiveState"].Value() == "failed" || props["LoadState"].Value() != "loaded" {
					t.Errorf("someone else's unit: %v %v, %v; want it loaded and not failed", props["LoadState"], props["ActiveState"], err)
				}
				conn.StopUnit(context.Background(), c.Name, "replace")
				if !gone(t, c.Name) {
					t.Errorf("someone else's unit %s still loaded after its stop", c.Name)
				}
				return
			}
			var ee *job.ExitError
			if !errors.As(err, &ee) || ee.ExitCode != 3 || string(out) != "out\n" {
				t.Errorf("Run: %v, output %q; want exit status 3 and output \"out\\n\"", err, out)
			}
			if b, err := os.ReadFile(file); string(b) != "ran\n" {
				t.Errorf("the command ran %q times (%v), want once", b, err)
			}
			if !gone(t, c.Name) {
				t.Errorf("unit %s still loaded", c.Name)
			}
		})
	}
}

// TestStartUnitEndsDuringReexec runs a oneshot of a unit file whose
// command exits while the manager re-executes: after the old manager has
// saved its state and closed its connections, before Run's connection is
// back. The new manager ends the start job at once, and a unit of a file
// that nothing keeps is collected then, its outcome with it, before Run
// reads it anew. Run must report the command's own exit status all the
// same, and the unit must be collected once Run has returned. It runs on
// the manager's private socket, where the new manager's signals are lost
// with the connection, and over its bus, whose connection outlives the
// reexec and receives them (there it checks that the reference Run takes
// over the bus is dropped).
func TestStartUnitEndsDuringReexec(t *testing.T) {
	ctl := systemdtest.Dial(t)
	ctx := context.Background()
	for _, tc := range []struct {
		over string
		code int
	}{{"socket", 0}, {"socket", 3}, {"bus", 0}} {
		t.Run(fmt.Sprint(tc.over, tc.code), func(t *testing.T) {
			code := tc.code
			conn := dialOver(t, tc.over)
			dir := t.TempDir()
			proceed, ran := filepath.Join(dir, "proceed"), filepath.Join(dir, "ran")
			name := unit.RandomName("unitrun-test-endreexec-", "service")
			// It spins rather than sleeps, so that it exits within
			// moments of proceed's creation: well before the new
			// manager is back.
			systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), fmt.Sprintf(
				"[Service]\nType=oneshot\nExecStart=/bin/sh -c 'while [ ! -e %s ]; do :; done; echo ran >> %s; exit %d'\n", proceed, ran, code))
			if err := ctl.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			type result struct {
				st  *job.Status
				err error
			}
			done := make(chan result, 1)
			go func() {
				st, err := job.Unit(conn, name).Run(ctx)
				done <- result{st, err}
			}()
			for {
				p, err := ctl.Properties(ctx, name, manager.UnitIface, "ActiveState")
				if err != nil {
					t.Fatal(err)
				}
				if p["ActiveState"].Value() == "activating" {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Reexecute returns once the manager has closed ctl's
			// connection, its state saved: the command's exit is the
			// new manager's to see.
			if err := ctl.Reexecute(ctx); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(proceed, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if b, err := os.ReadFile(ran); err != nil || string(b) != "ran\n" {
				t.Errorf("the command ran %q times (%v), want once", b, err)
			}
			var ee *job.ExitError
			switch {
			case code == 0 && res.err != nil, code != 0 && !errors.As(res.err, &ee):
				t.Errorf("Run: %v, want exit status %d", res.err, code)
			case res.st == nil || res.st.ExitCode != code || res.st.InvocationID == "":
				t.Errorf("Run's status %+v, want exit status %d and the run's invocation ID", res.st, code)
			}
			if code != 0 {
				// Left failed, as systemd leaves it.
				if p, err := ctl.Properties(ctx, name, manager.UnitIface, "ActiveState"); err != nil || p["ActiveState"].Value() != "failed" {
					t.Errorf("unit %s: %v (%v) after Run, want failed", name, p["ActiveState"], err)
				}
				ctl.ResetFailedUnit(ctx, name)
			}
			// Nothing keeps it once Run has returned: systemd collects
			// it (Loaded loads no unit, as a read would).
			loaded, err := ctl.Loaded(ctx, name)
			for deadline := time.Now().Add(5 * time.Second); err == nil && loaded && time.Now().Before(deadline); loaded, err = ctl.Loaded(ctx, name) {
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil || loaded {
				t.Errorf("unit %s still loaded after Run (%v)", name, err)
			}
		})
	}
}
