package job_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// TestKilledClient kills the client of a run (the unitrun CLI) with
// SIGKILL at each point of the run, the run's command line holding a ';'
// (so it goes through a drop-in), and checks that once the command has
// ended no unit of the name is loaded, no drop-in of it is left, and the
// next run of the name executes its own argv, not the killed run's.
func TestKilledClient(t *testing.T) {
	bin := systemdtest.Binary(t)
	conn := systemdtest.Conn(t)
	dir := systemdtest.TransientUnitDir(t)
	for _, tc := range []struct {
		point string
		kill  func(t *testing.T, name string)
	}{
		{"before its unit is created", func(t *testing.T, name string) {
			// What a client killed between writing its drop-in and
			// creating its unit leaves: the drop-in, and no unit.
			d := filepath.Join(dir, name+".d")
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			leftover := "[Service]\nExecStart=\nExecStart=@/bin/sh \"sh\" \"-c\" \"echo OLD; true\"\n"
			if err := os.WriteFile(filepath.Join(d, "50-unitrun-exec.conf"), []byte(leftover), 0o644); err != nil {
				t.Fatal(err)
			}
			leaveTempDropIn(t, d)
		}},
		{"while it writes its drop-in", func(t *testing.T, name string) {
			// A client killed in atomicfile.Write leaves its temporary file.
			d := filepath.Join(dir, name+".d")
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			leaveTempDropIn(t, d)
		}},
		{"while its command runs", func(t *testing.T, name string) {
			cli := startCLI(t, bin, "run", "-q", "-u", name, "--", "sh", "-c", "echo OLD; sleep 0.5")
			cli.Process.Kill()
			cli.Wait()
		}},
		{"after its command exited, before the release", func(t *testing.T, name string) {
			gate := filepath.Join(t.TempDir(), "gate")
			cli := startCLI(t, bin, "run", "-q", "-u", name, "--", "sh", "-c", `echo OLD; while [ ! -e "$1" ]; do sleep 0.02; done; exit 3`, "sh", gate)
			cli.Process.Signal(syscall.SIGSTOP) // it sees the end, but cannot release
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			systemdtest.WaitActiveState(t, conn, name, "failed")
			cli.Process.Kill()
			cli.Wait()
		}},
		{"with --no-wait", func(t *testing.T, name string) {
			out, err := exec.Command(bin, "run", "--no-wait", "-u", name, "--", "sh", "-c", "echo OLD; true").CombinedOutput()
			if err != nil {
				t.Fatalf("run --no-wait: %v: %s", err, out)
			}
		}},
	} {
		t.Run(tc.point, func(t *testing.T) {
			name := unit.RandomName("unitrun-test-killed-", "service")
			tc.kill(t, name)
			if !gone(t, name) {
				t.Fatalf("%s still loaded after its command ended, with its client killed", name)
			}
			if tc.point != "before its unit is created" && tc.point != "while it writes its drop-in" {
				if _, err := os.Lstat(filepath.Join(dir, name+".d")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("drop-in of the killed run: %v, want it gone", err)
				}
			}
			for _, argv := range [][]string{{"echo", "NEW"}, {"sh", "-c", "echo NEW; true"}} {
				out, err := exec.Command(bin, append([]string{"run", "-q", "-u", name, "--"}, argv...)...).CombinedOutput()
				if err != nil || string(out) != "NEW\n" {
					t.Errorf("next run of %s, %q: %v, output %q; want NEW", name, argv, err, out)
				}
				if _, err := os.Lstat(filepath.Join(dir, name+".d")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("drop-in dir of %s after the next run: %v, want it gone", name, err)
				}
			}
		})
	}
}

// leaveTempDropIn writes into the drop-in directory d the temporary file
// that a client killed while writing its drop-in leaves there.
func leaveTempDropIn(t *testing.T, d string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(d, ".50-unitrun-exec.conf.tmp-2718281828"), []byte("[Service]\nExecStart=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startCLI starts the unitrun CLI and returns once its command has
// written its first line (so its unit runs); the test kills it.
func startCLI(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cli := exec.Command(bin, args...)
	out, err := cli.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "OLD\n" {
		cli.Process.Kill()
		cli.Wait()
		t.Fatalf("first line of the run: %q, %v; want OLD", line, err)
	}
	return cli
}

// TestAddRefAcrossReexec: a unit kept for its client (AddRef=yes) whose
// run has ended (failed) stays loaded, with its outcome, across a
// daemon-reexec of the manager (systemd 252 keeps the names it tracks on
// the bus, which the reexec leaves), although nothing but the reference
// keeps it (no RemainAfterExit, CollectMode inactive-or-failed): for a
// client on the manager's private socket, which keeps units over the bus
// beside it, and for one over the bus alone.
func TestAddRefAcrossReexec(t *testing.T) {
	for _, over := range []string{"socket", "bus"} {
		t.Run(over, func(t *testing.T) { addRefAcrossReexec(t, dialOver(t, over)) })
	}
}

func addRefAcrossReexec(t *testing.T, mgr *manager.Conn) {
	ctx := context.Background()
	c := sh(t, "exit 7")
	c.Manager = mgr
	c.Exited = func(*job.Status, error) {
		if err := systemdtest.Dial(t).Reexecute(ctx); err != nil {
			t.Error(err)
		}
		// The connection redials after the reexec; a call may meet the
		// old one still.
		var p map[string]dbus.Variant
		var err error
		for range 100 {
			if p, err = systemdtest.Conn(t).Properties(ctx, c.Unit, manager.ServiceIface); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil || p["ExecMainStatus"].Value() != int32(7) {
			t.Errorf("%s after a daemon-reexec: %v, %v; want loaded, exit status 7", c.Unit, p["ExecMainStatus"], err)
		}
		// Only the reference keeps it: nothing else would.
		if p["RemainAfterExit"].Value() != false {
			t.Errorf("%s has RemainAfterExit=%v, want no", c.Unit, p["RemainAfterExit"])
		}
		if u, err := systemdtest.Conn(t).Properties(ctx, c.Unit, manager.UnitIface); err != nil || u["CollectMode"].Value() != "inactive-or-failed" || u["ActiveState"].Value() != "failed" {
			t.Errorf("%s: CollectMode %v, ActiveState %v (%v); want inactive-or-failed, failed", c.Unit, u["CollectMode"], u["ActiveState"], err)
		}
	}
	var ee *job.ExitError
	if err := c.Run(); !errors.As(err, &ee) || ee.ExitCode != 7 {
		t.Fatalf("Run: %v, want exit status 7", err)
	}
	if !gone(t, c.Unit) {
		t.Errorf("%s still loaded after the release", c.Unit)
	}
}

// TestManagerStopLeavesNoDropIn: "unitrun manager stop" stops every unit
// of the embedded manager as a stop job does, and systemd removes the
// drop-in of a run whose client is gone (--no-wait) as it frees its unit,
// so a later manager's unit of that name cannot read it. The manager's
// runtime unit directory is removed first: a run's drop-in still reaches
// its unit where that directory is not there (as for a user manager until
// a unit is written into it).
func TestManagerStopLeavesNoDropIn(t *testing.T) {
	dir, err := os.MkdirTemp("", "unitrun-emb-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	e := &manager.Embedded{Dir: dir}
	defer e.Stop(context.Background(), 10*time.Second)
	env := append(os.Environ(), manager.EnvEmbeddedDir+"="+dir, manager.EnvManager+"=embedded")
	bin := systemdtest.Binary(t)
	if _, err := e.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "systemd", "user")); err != nil {
		t.Fatal(err)
	}
	name := unit.RandomName("unitrun-test-stopped-", "service")
	run := exec.Command(bin, "run", "--no-wait", "-u", name, "--", "sh", "-c", "sleep 100; true")
	run.Env = env
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("run --no-wait: %v: %s", err, out)
	}
	dropIn := filepath.Join(dir, "systemd", "transient", name+".d")
	if _, err := os.Lstat(dropIn); err != nil {
		t.Fatalf("drop-in of the running unit: %v", err)
	}
	began := time.Now()
	stop := exec.Command(bin, "manager", "stop")
	stop.Env = env
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("manager stop: %v: %s", err, out)
	}
	t.Logf("manager stop took %v", time.Since(began))
	if _, err := os.Lstat(dropIn); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in after manager stop: %v, want it gone", err)
	}
}
