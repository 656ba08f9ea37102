package manager_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want manager.Spec
		err  string
	}{
		{"", manager.Spec{Kind: manager.KindAuto}, ""},
		{"auto", manager.Spec{Kind: manager.KindAuto}, ""},
		{"system", manager.Spec{Kind: manager.KindSystem}, ""},
		{"user", manager.Spec{Kind: manager.KindUser}, ""},
		{"embedded", manager.Spec{Kind: manager.KindEmbedded}, ""},
		{"private:/run/x/../systemd/private", manager.Spec{Kind: manager.KindPrivate, Path: "/run/systemd/private"}, ""},
		{"private:relative", manager.Spec{}, "must be absolute"},
		{"System", manager.Spec{}, "must be auto, system, user, private:PATH or embedded"},
	} {
		got, err := manager.ParseSpec(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("ParseSpec(%q) = %v, %v; want an error naming the input and %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSpec(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if err == nil && tc.in != "" {
			if again, _ := manager.ParseSpec(got.String()); again != got {
				t.Errorf("ParseSpec(%q).String() = %q does not parse back", tc.in, got.String())
			}
		}
	}
}

// A relative embedded manager directory is refused by Open, naming where
// it came from, before anything is tried or created: the embedded
// manager's boot took it from the caller's working directory.
func TestOpenRelativeEmbeddedDir(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	t.Setenv(manager.EnvEmbeddedDir, "env-dir")
	for _, tc := range []struct {
		spec string
		o    manager.Options
		want string
	}{
		{"embedded", manager.Options{EmbeddedDir: "m"}, `--embedded-dir "m": must be an absolute path`},
		{"auto", manager.Options{EmbeddedDir: "m"}, `--embedded-dir "m": must be an absolute path`},
		{"embedded", manager.Options{}, `$UNITRUN_EMBEDDED_DIR "env-dir": must be an absolute path`},
	} {
		c, err := manager.Open(context.Background(), tc.spec, tc.o)
		if err == nil {
			c.Close()
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("Open(%q, %+v): %v; want %s", tc.spec, tc.o, err, tc.want)
		}
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("Open with a relative embedded dir left %v", names)
	}
}

func TestOpenUnreachableNamesWhatWasTried(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := manager.Open(ctx, "private:/nonexistent/unitrun/private", manager.Options{})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/unitrun/private") {
		t.Fatalf("Open: %v, want an error naming the socket tried", err)
	}
}

// TestOpenAutoUnreachableMessage: auto's error lists each manager it
// tried with the address it dialed, and one it skipped without an
// address (no user manager in the environment) with its reason alone.
func TestOpenAutoUnreachableMessage(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	_, _, err := manager.Probe(context.Background(), "auto", manager.Options{EmbeddedDir: filepath.Join(t.TempDir(), "none")}, false)
	if err == nil || strings.Contains(err.Error(), "()") || strings.Contains(err.Error(), "user: manager user") || !strings.Contains(err.Error(), "; user: ") || !strings.Contains(err.Error(), "; embedded (unix:path=") {
		t.Errorf("Probe auto: %v; want each manager tried named once, with no empty address", err)
	}
}

func TestOpenPrivateReachesTestManager(t *testing.T) {
	ctx := context.Background()
	c, err := manager.Open(ctx, os.Getenv(manager.EnvManager), manager.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil || !strings.HasPrefix(v, "2") {
		t.Errorf("Version = %q, %v", v, err)
	}
	dir, err := c.RuntimeUnitDir(ctx)
	want := filepath.Join(systemdtest.Manager(t).Dir, "systemd", "user")
	if err != nil || dir != want {
		t.Errorf("RuntimeUnitDir = %q, %v; want %q", dir, err, want)
	}
}

// TestOpenOverBus: with OverBus, a user manager found on its private
// socket is reached through its session bus, which then keeps units for
// the caller on the same connection; a manager whose bus is not there is
// reached on its socket (a runtime directory with no bus beside the
// socket: a link to it), and so is one named by its socket (private:PATH).
func TestOpenOverBus(t *testing.T) {
	ctx := context.Background()
	socket := systemdtest.Manager(t).Socket()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Dir(filepath.Dir(socket)))
	c, err := manager.Open(ctx, "user", manager.Options{OverBus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Target().Peer || !c.CanRef(ctx) {
		t.Errorf("over the bus: target %+v, CanRef %v; want the bus, which keeps units", c.Target(), c.CanRef(ctx))
	}
	if v, err := c.Version(ctx); err != nil || !strings.HasPrefix(v, "2") {
		t.Errorf("Version over the bus = %q, %v", v, err)
	}
	link := filepath.Join(t.TempDir(), "systemd", "private")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(socket, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", filepath.Dir(filepath.Dir(link)))
	c2, err := manager.Open(ctx, "user", manager.Options{OverBus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !c2.Target().Peer {
		t.Errorf("no bus beside the socket: target %+v, want the socket", c2.Target())
	}
	if v, err := c2.Version(ctx); err != nil || !strings.HasPrefix(v, "2") {
		t.Errorf("Version on the socket = %q, %v", v, err)
	}
	c3, err := manager.Open(ctx, "private:"+socket, manager.Options{OverBus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if !c3.Target().Peer || !c3.CanRef(ctx) {
		t.Errorf("named by its socket: target %+v, CanRef %v; want the socket, with the bus beside it for references", c3.Target(), c3.CanRef(ctx))
	}
}

// Concurrent first uses of an embedded manager boot exactly one, and Stop
// leaves no process and no cgroup behind.
func TestEmbeddedConcurrentEnsureAndStop(t *testing.T) {
	dir, err := os.MkdirTemp("", "unitrun-mgr-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	booted := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := &manager.Embedded{Dir: dir}
			started, err := e.Ensure(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			if started {
				booted++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if booted != 1 {
		t.Fatalf("%d of 4 concurrent Ensure calls booted a manager, want 1", booted)
	}
	e := &manager.Embedded{Dir: dir}
	pid := e.PID()
	if pid == 0 || !e.Running() {
		t.Fatalf("manager not running after Ensure (pid %d)", pid)
	}
	c, err := manager.Open(ctx, "embedded", manager.Options{EmbeddedDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if c.Target().Spec != "embedded" || len(c.Target().Env) != 2 {
		t.Errorf("target %+v", c.Target())
	}
	c.Close()
	if err := e.Stop(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if systemdtest.Alive(pid) || e.Running() {
		t.Errorf("manager %d still running after Stop", pid)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*/" + e.Cgroup()); len(left) > 0 {
		t.Errorf("cgroups left after Stop: %v", left)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/" + e.Cgroup()); len(left) > 0 {
		t.Errorf("cgroups left after Stop: %v", left)
	}
}

// With $XDG_RUNTIME_DIR pointing at a running user manager (the harness
// exports it), "user" reaches it, and so does auto where systemd is not PID 1.
func TestOpenUserAndAuto(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []string{"user", "auto"} {
		_, tries, err := manager.Probe(ctx, spec, manager.Options{}, false)
		if err != nil {
			t.Fatalf("Probe(%s): %v", spec, err)
		}
		last := tries[len(tries)-1]
		if last.Target.Spec != "user" || last.Err != nil || !last.Target.Peer {
			t.Errorf("Probe(%s) chose %+v", spec, last)
		}
	}
}

// When the manager goes away, new calls fail with a clear error instead of
// hanging; once it is back, the same connection serves again.
func TestConnSurvivesManagerDeath(t *testing.T) {
	ctx := context.Background()
	e := bootEmbedded(t)
	c, err := manager.Dial(ctx, e.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	old := manager.ReconnectWait
	manager.ReconnectWait = 300 * time.Millisecond
	defer func() { manager.ReconnectWait = old }()

	w := c.Watch("unitrun-test-none.service")
	defer w.Close()
	syscall.Kill(e.PID(), syscall.SIGKILL)
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == manager.EventDisconnected {
			break
		}
	}
	if _, err := c.Version(ctx); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("Version with the manager dead: %v, want a not-reachable error", err)
	}
	if _, err := e.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	manager.ReconnectWait = 10 * time.Second
	if v, err := c.Version(ctx); err != nil || v == "" {
		t.Fatalf("Version after the manager came back: %q, %v", v, err)
	}
	// Stop leaves nothing in the cgroup, not even what the killed manager
	// left behind (its session bus).
	cg := "/sys/fs/cgroup/unified/" + e.Cgroup()
	if _, err := os.Stat(cg); err != nil {
		cg = "/sys/fs/cgroup/" + e.Cgroup()
	}
	if err := e.Stop(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg); err == nil {
		procs, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
		t.Errorf("cgroup %s still there after Stop, holding %q", cg, procs)
	}
}

// TestListUnitNamesPrefix lists the loaded units by a prefix that holds a
// backslash, as escaped unit names do: the manager matches it literally.
func TestListUnitNamesPrefix(t *testing.T) {
	conn := systemdtest.Conn(t)
	ctx := context.Background()
	dir := systemdtest.RuntimeUnitDir(t)
	names := []string{`unitrun-test-a\x2db.service`, `unitrun-test-ax2db.service`}
	for _, n := range names {
		systemdtest.WriteUnit(t, filepath.Join(dir, n), "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n")
		// Started to the end, so that the stop below finds no start job
		// to cancel: a oneshot killed while it starts fails and stays.
		if _, err := job.Unit(conn, n).Run(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.StopUnit(context.Background(), n, "replace") })
	}
	got, err := conn.ListUnitNames(ctx, `unitrun-test-a\x2d`)
	if err != nil || len(got) != 1 || got[0] != names[0] {
		t.Errorf(`ListUnitNames("unitrun-test-a\x2d") = %q, %v; want [%s]`, got, err, names[0])
	}
	got, err = conn.ListUnitNames(ctx, "unitrun-test-a")
	if err != nil || len(got) != 2 {
		t.Errorf(`ListUnitNames("unitrun-test-a") = %q, %v; want both`, got, err)
	}
}

// execStart is an ExecStart= value as the manager's D-Bus API takes it.
type execStart struct {
	Path             string
	Args             []string
	UncleanIsFailure bool
}

// runWatched starts a transient oneshot /bin/true named name and reads
// each watch up to its start job's JobRemoved. It returns the properties
// each watch saw in EventChanged events (nil for one that saw none) and
// whether each saw the JobRemoved.
func runWatched(t *testing.T, conn *manager.Conn, name string, watches ...*manager.Watch) (props []map[string]bool, jobs []bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Cleanup(func() { conn.StopUnit(context.Background(), name, "replace") })
	job, err := conn.StartTransientUnit(ctx, name, "fail", []unit.Property{
		{Name: "Type", Value: dbus.MakeVariant("oneshot")},
		{Name: "RemainAfterExit", Value: dbus.MakeVariant(true)},
		{Name: "ExecStart", Value: dbus.MakeVariant([]execStart{{Path: "/bin/true", Args: []string{"true"}}})},
	})
	if err != nil {
		t.Fatal(err)
	}
	props, jobs = make([]map[string]bool, len(watches)), make([]bool, len(watches))
	for i, w := range watches {
		for !jobs[i] {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("watch %d: %v", i, err)
			}
			switch ev.Kind {
			case manager.EventChanged:
				if props[i] == nil {
					props[i] = map[string]bool{}
				}
				for k := range ev.Props {
					props[i][k] = true
				}
			case manager.EventJobRemoved:
				jobs[i] = ev.Job == job
			}
		}
		w.Close()
	}
	return props, jobs
}

// TestWatchProps runs units on the test manager, a private socket, under
// watches that read one property, none, or all: the first sees only that
// property, the second no EventChanged, and both their job's end, also
// beside a watch of all, which sees the others.
func TestWatchProps(t *testing.T) {
	conn := systemdtest.Conn(t)
	name := unit.RandomName("unitrun-test-watchprops-", "service")
	props, jobs := runWatched(t, conn, name, conn.WatchProps(name, "ActiveState"), conn.WatchProps(name))
	if !jobs[0] || !jobs[1] {
		t.Errorf("JobRemoved seen: %v, want both", jobs)
	}
	if !reflect.DeepEqual(props[0], map[string]bool{"ActiveState": true}) {
		t.Errorf("the watch of ActiveState saw %v", props[0])
	}
	if props[1] != nil {
		t.Errorf("the watch of no property saw %v", props[1])
	}

	name = unit.RandomName("unitrun-test-watchprops-", "service")
	props, _ = runWatched(t, conn, name, conn.WatchProps(name, "ActiveState"), conn.WatchProps(name), conn.Watch(name))
	if !reflect.DeepEqual(props[0], map[string]bool{"ActiveState": true}) || props[1] != nil {
		t.Errorf("beside a watch of all, the watches of ActiveState and of none saw %v and %v", props[0], props[1])
	}
	if !props[2]["ExecMainStatus"] || !props[2]["SubState"] {
		t.Errorf("the watch of all saw %v", props[2])
	}
}

// TestWaitJob starts transient oneshots on the test manager and waits for
// each start job with Watch.WaitJob: its result is systemd's own, "done"
// for a command that succeeds, "failed" for one that fails, "canceled"
// for one stopped while it starts; and a stop job of a unit that goes
// away with it ends too.
func TestWaitJob(t *testing.T) {
	conn := systemdtest.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(name string, argv ...string) (*manager.Watch, dbus.ObjectPath) {
		t.Helper()
		t.Cleanup(func() {
			conn.StopUnit(context.Background(), name, "replace")
			conn.ResetFailedUnit(context.Background(), name)
		})
		w := conn.WatchProps(name)
		t.Cleanup(w.Close)
		job, err := conn.StartTransientUnit(ctx, name, "fail", []unit.Property{
			{Name: "Type", Value: dbus.MakeVariant("oneshot")},
			{Name: "ExecStart", Value: dbus.MakeVariant([]execStart{{Path: argv[0], Args: argv}})},
		})
		if err != nil {
			t.Fatal(err)
		}
		return w, job
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/true"}, "done"},
		{[]string{"/bin/false"}, "failed"},
	} {
		w, job := start("unitrun-test-waitjob-"+c.want+".service", c.argv...)
		if got, err := w.WaitJob(ctx, job, nil); got != c.want || err != nil {
			t.Errorf("%s: WaitJob = %q, %v; want %q", c.argv[0], got, err, c.want)
		}
	}

	name := "unitrun-test-waitjob-canceled.service"
	w, job := start(name, "/bin/sleep", "30")
	systemdtest.WaitActiveState(t, conn, name, "activating")
	sw := conn.WatchProps(name)
	defer sw.Close()
	stop, err := conn.StopUnit(ctx, name, "replace")
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	got, err := w.WaitJob(ctx, job, func(manager.Event) { seen++ })
	if got != "canceled" || err != nil || seen == 0 {
		t.Errorf("start stopped while it runs: WaitJob = %q, %v after %d events; want canceled", got, err, seen)
	}
	if res, err := sw.WaitJob(ctx, stop, nil); res != "done" || err != nil {
		t.Errorf("its stop job: %q, %v; want done", res, err)
	}
}

// A file system that the host mounts after the embedded manager booted, on
// a shared mount (as systemd makes /), reaches the manager's units: its
// mount namespace is a slave of the host's. (It was private: a unit saw the
// directory under the mount, and a command there was not found.)
func TestEmbeddedSeesLaterMounts(t *testing.T) {
	shared := t.TempDir()
	for _, args := range [][]string{{"--bind", shared, shared}, {"--make-shared", shared}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v %s", args, err, out)
		}
	}
	t.Cleanup(func() { exec.Command("umount", "-R", shared).Run() })
	ctx := context.Background()
	e := bootEmbedded(t)
	later := filepath.Join(shared, "later")
	if err := os.Mkdir(later, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", later).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(later, "file"), []byte("seen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := manager.Dial(ctx, e.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, err := job.Command(c, "/bin/cat", filepath.Join(later, "file")).Output()
	if err != nil || string(out) != "seen\n" {
		t.Errorf("a unit reading a file of a later mount: %q, %v; want %q", out, err, "seen\n")
	}
}

// bootEmbedded boots an embedded manager of the test's own in a temp
// dir; the test's cleanup stops it and removes the dir.
func bootEmbedded(t *testing.T) *manager.Embedded {
	t.Helper()
	e := systemdtest.OwnEmbedded(t)
	if _, err := e.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// A read of a unit that is not loaded loads it, and systemd collects it
// again (UnitRemoved) before a start loads it anew: DropBefore drops such
// events from before StartUnitAt's answer, so that only the start's own
// reach the watch, its JobRemoved among them.
func TestDropBefore(t *testing.T) {
	conn := systemdtest.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := unit.RandomName("unitrun-test-dropbefore-", "service")
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), "[Service]\nType=oneshot\nExecStart=/bin/true\n")
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	w, seen := conn.WatchProps(name), conn.WatchProps(name)
	defer w.Close()
	defer seen.Close()
	if _, err := conn.Properties(ctx, name, manager.UnitIface, "LoadState"); err != nil {
		t.Fatal(err)
	}
	// w has it queued too.
	for {
		ev, err := seen.Next(ctx)
		if err != nil {
			t.Fatalf("no UnitRemoved of the unit that the read loaded: %v", err)
		}
		if ev.Kind == manager.EventRemoved {
			break
		}
	}
	job, at, err := conn.StartUnitAt(ctx, name, "replace")
	if err != nil {
		t.Fatal(err)
	}
	w.DropBefore(at)
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("no JobRemoved of the start: %v", err)
		}
		if ev.Stamp.Before(at) {
			t.Fatalf("an event from before the start is left: %+v", ev)
		}
		if ev.Kind == manager.EventJobRemoved && ev.Job == job {
			if ev.Result != "done" {
				t.Errorf("start job %s, want done", ev.Result)
			}
			return
		}
	}
}
