// Package systemdtest boots a real systemd for a test binary: a user manager
// in a private mount namespace (the embedded manager recipe), one per test
// binary, torn down when the tests end. Tests that touch systemd run against
// it; nothing is mocked.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { systemdtest.Main(m) }
//
// Main fails the whole binary, loudly, if the manager cannot boot, and after
// the tests fails it if any unit of ours is still loaded: named unitrun-*
// or unitrun.TYPE, of any type.
package systemdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/flock"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/manager/boot"
)

var (
	embedded *manager.Embedded
	conn     *manager.Conn
)

// Main boots the manager, runs the tests, checks that no unit of ours is
// left behind and stops the manager. It exports UNITRUN_MANAGER (and
// XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS) so that subprocesses such as
// the unitrun CLI, systemctl --user and systemd-run --user reach it.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	sweep()
	dir, err := os.MkdirTemp(runtimeBase(), "unitrun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemdtest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	lock, err := holdLock(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemdtest:", err)
		return 1
	}
	defer lock.Close()
	// Removed last, after the manager whose units may run it.
	defer func() {
		if build.path != "" {
			os.RemoveAll(filepath.Dir(build.path))
		}
	}()
	embedded = &manager.Embedded{Dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := embedded.Ensure(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "systemdtest: FAIL: cannot boot a systemd user manager for the tests: %v\n", err)
		return 1
	}
	defer embedded.Stop(context.Background(), 10*time.Second)
	conn, err = manager.Dial(ctx, embedded.Target())
	if err != nil {
		fmt.Fprintf(os.Stderr, "systemdtest: FAIL: %v\n", err)
		return 1
	}
	defer conn.Close()
	// The manager joins its session bus a moment after it boots; units
	// are kept for their callers (AddRef=) through that bus, so the tests
	// start once it is there.
	for !conn.CanRef(ctx) {
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "systemdtest: FAIL: the manager is not on its session bus: %v\n", ctx.Err())
			return 1
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Setenv(manager.EnvManager, "private:"+embedded.Socket())
	for _, kv := range embedded.Env() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	code := m.Run()
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "systemdtest: FAIL: units left behind after the tests: %s\n", strings.Join(left, " "))
		if code == 0 {
			code = 1
		}
	}
	return code
}

// harnessLock is the file in a test binary's manager directory that the
// binary holds a flock on while it runs.
const harnessLock = "harness.lock"

// buildNote is the file in a test binary's manager directory that names
// the directory of its build of the unitrun command ([Binary]).
const buildNote = "build"

// holdLock takes the flock on dir's harnessLock, which it makes aside and
// renames into place locked, so that no sweep takes it first.
func holdLock(dir string) (*os.File, error) {
	aside := filepath.Join(dir, harnessLock+".new")
	f, err := os.OpenFile(aside, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(aside, filepath.Join(dir, harnessLock)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweep stops the managers, and removes the directories and builds, that test
// binaries killed before their end left behind: those whose harnessLock
// nobody holds. A manager left running holds its cgroup, its journald and
// any unit it was running, and would outlive every later run.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(runtimeBase(), "unitrun-test-*"))
	for _, dir := range dirs {
		lock := filepath.Join(dir, harnessLock)
		if _, err := os.Lstat(lock); err != nil {
			continue // a binary's that has not taken its lock yet
		}
		unlock, err := flock.TryLock(lock)
		if err != nil {
			continue // a live test binary's
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		(&manager.Embedded{Dir: dir}).Stop(ctx, 5*time.Second)
		cancel()
		unlock()
		if b, err := os.ReadFile(filepath.Join(dir, buildNote)); err == nil && strings.HasPrefix(filepath.Base(string(b)), "unitrun-bin-") {
			os.RemoveAll(string(b))
		}
		fmt.Fprintln(os.Stderr, "systemdtest: removed the manager a killed test binary left in", dir)
		os.RemoveAll(dir)
	}
}

// runtimeBase is where the manager's runtime directory goes: on a tmpfs,
// as a manager's /run is on a systemd host, where there is one. Its unit
// files and the pods' state are replaced by renames, which on a disk file
// system start writeback each time (0.5 to 0.9 ms on this project's test
// machines, whose /tmp and /run are on ext4).
func runtimeBase() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err == nil && st.Type == tmpfsMagic {
		return "/dev/shm"
	}
	return os.TempDir()
}

// RunDir returns a new directory, removed when t ends, where the
// manager's runtime directory is: for state that a user keeps under /run,
// such as pods' (/run/unitrun), so that the tests write it as fast as a
// systemd host does.
func RunDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(runtimeBase(), "unitrun-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// tmpfsMagic is statfs's f_type of a tmpfs (TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

// ours reports whether u, a unit name, is one that unitrun names: any
// unit of any type named unitrun-* (jobs, pins, ops, pods and their
// slices, targets and timers) or unitrun.TYPE (the pods' parent
// unitrun.slice, the daemon's unitrun.socket and unitrun.service).
func ours(u string) bool {
	return strings.HasPrefix(u, "unitrun-") || strings.HasPrefix(u, "unitrun.")
}

// leftovers lists the units of ours still loaded, after
// giving collection a moment.
func leftovers() []string {
	var left []string
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		names, err := conn.ListUnitNames(ctx, "unitrun")
		cancel()
		if err != nil {
			return []string{"(cannot list units: " + err.Error() + ")"}
		}
		left = slices.DeleteFunc(names, func(u string) bool { return !ours(u) })
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// Conn returns the connection to the test manager, shared by all tests.
func Conn(t testing.TB) *manager.Conn {
	t.Helper()
	if conn == nil {
		t.Fatal("systemdtest: no manager: call systemdtest.Main from TestMain")
	}
	return conn
}

// Manager returns the test manager.
func Manager(t testing.TB) *manager.Embedded {
	t.Helper()
	if embedded == nil {
		t.Fatal("systemdtest: no manager: call systemdtest.Main from TestMain")
	}
	return embedded
}

// Dial opens a separate connection to the test manager, closed when the
// test ends.
func Dial(t testing.TB) *manager.Conn {
	t.Helper()
	c, err := manager.Dial(context.Background(), Manager(t).Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var build struct {
	sync.Once
	path string
	err  error
}

// Binary builds the unitrun command once per test binary and returns its
// path, with the small binaries installed beside it, built as a release
// builds them (static, CGO_ENABLED=0): the hook that pods run at each exit
// of an app (cmd/unitrun-hook) and the puller of images (cmd/unitrun-pull). Under Main the build is removed once the tests have run.
func Binary(t testing.TB) string {
	t.Helper()
	build.Do(func() {
		dir, err := os.MkdirTemp("", "unitrun-bin-")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(dir, "unitrun")
		if embedded != nil {
			// For the sweep, should this binary be killed.
			os.WriteFile(filepath.Join(embedded.Dir, buildNote), []byte(dir), 0o600)
		}
		out, err := exec.Command("go", "build", "-o", build.path, "github.com/unitrun/unitrun/cmd/unitrun").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		// The binaries installed beside unitrun, static as dist/release
		// builds them.
		for _, b := range []string{"unitrun-hook", "unitrun-pull"} {
			beside := exec.Command("go", "build", "-o", filepath.Join(dir, b), "github.com/unitrun/unitrun/cmd/"+b)
			beside.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := beside.CombinedOutput(); err != nil {
				build.err = fmt.Errorf("go build: %v\n%s", err, out)
				return
			}
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// RuntimeUnitDir returns the test manager's runtime unit directory.
func RuntimeUnitDir(t testing.TB) string {
	t.Helper()
	dir, err := Conn(t).RuntimeUnitDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TransientUnitDir returns the test manager's transient unit directory.
func TransientUnitDir(t testing.TB) string {
	t.Helper()
	dir, err := Conn(t).TransientUnitDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteUnit writes a unit file for the test and removes it, and reloads the
// manager, when the test ends.
func WriteUnit(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(path)
		Conn(t).Reload(context.Background())
	})
}

// Alive reports whether process pid exists and is not a zombie (a process
// that has exited but whose parent has not reaped it yet).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// BootSystem boots a systemd system manager as PID 1 of new namespaces for
// the test (DESIGN.md's second recipe) and powers it off when the test
// ends. Run clients inside it with its Command method; there, systemd is PID
// 1 and unitrun's auto manager choice finds the system manager.
func BootSystem(t testing.TB) *boot.Container {
	t.Helper()
	dir, err := os.MkdirTemp("", "unitrun-sys-")
	if err != nil {
		t.Fatal(err)
	}
	units := filepath.Join(dir, "units")
	if err := os.Mkdir(units, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(units, "unitrun-test.target"), []byte("[Unit]\nDescription=unitrun test system\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &boot.Container{Dir: filepath.Join(dir, "run"), Target: "unitrun-test.target", UnitPath: []string{units}, Hostname: "unitrun-test"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Boot(ctx); err != nil {
		t.Fatalf("systemdtest: cannot boot a system manager: %v", err)
	}
	t.Cleanup(func() {
		c.Stop(20 * time.Second)
		os.RemoveAll(dir)
	})
	return c
}

// callerScript sets up a container-like caller: a /run of its own that
// holds only the daemon's socket sock, bind-mounted at the path at (under
// /run), then drops to the caller's uid and gid.
const callerScript = `set -e
sock=$1; at=$2; uid=$3; gid=$4; shift 4
mount -t tmpfs -o mode=0755 unitrun-caller /run
mkdir -p "$(dirname "$at")"
touch "$at"
mount --bind "$sock" "$at"
exec setpriv --reuid "$uid" --regid "$gid" --clear-groups -- "$@"`

// CallerSocket is where a Caller sees the daemon's socket: where the
// shipped unitrun.socket unit listens.
const CallerSocket = api.DefaultSocket

// Caller returns a command that runs argv as a node agent in a privileged
// container would: in new mount, PID and network namespaces (no network at
// all), as uid and gid, with a /run of its own in which only the daemon's
// socket (bind-mounted from socket) appears, at CallerSocket, which
// $UNITRUN_SOCKET names.
func Caller(socket string, uid, gid int, argv ...string) *exec.Cmd {
	args := []string{"--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc", "--net",
		"/bin/sh", "-c", callerScript, "unitrun-caller", socket, CallerSocket, fmt.Sprint(uid), fmt.Sprint(gid)}
	cmd := exec.Command("unshare", append(args, argv...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "UNITRUN_SOCKET=" + CallerSocket}
	return cmd
}
