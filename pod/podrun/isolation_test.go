package podrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// An isolated pod's app runs under the pod's own systemd, PID 1 of the
// app's PID namespace, with the pod's name as hostname; its status files
// and logs land in the state directory the runner reads. The pod ends
// once both apps have (exitPolicy all), so that ok runs however the two
// are scheduled.
func TestIsolatedPodOwnSystemd(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: guarded
isolation: namespaces
exitPolicy: all
apps:
  - name: look
    exec: ["/bin/sh", "-c", "cat /proc/1/comm; readlink /proc/1/exe; hostname; readlink /proc/self/ns/pid; exit 3"]
  - name: ok
    exec: ["/bin/true"]
`, "")
	defer containerLog(t, r, name)
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 3)
	wantApp(t, s, "look", record.AppFailed, 3)
	wantApp(t, s, "ok", record.AppExited, 0)
	log, err := os.ReadFile(pod.LogFile(r.StateDir, name, "look"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 || lines[0] != "systemd" || !strings.HasSuffix(lines[1], "/systemd") || lines[2] != "guarded" || lines[3] == hostNS {
		t.Errorf("the app saw PID 1, hostname and PID namespace as %q (the host's namespace is %s)", lines, hostNS)
	}
	if host, _ := os.Hostname(); host == "guarded" {
		t.Errorf("the host's hostname changed to %s", host)
	}
	if c, err := record.ReadExitCode(r.StateDir, name, "look"); err != nil || c != 3 {
		t.Errorf("status file of look: %d, %v", c, err)
	}
}

// containerLog prints the log of isolated pod name's systemd if the test
// has failed.
func containerLog(t *testing.T, r *Runner, name string) {
	if !t.Failed() {
		return
	}
	b, err := os.ReadFile(filepath.Join(record.Dir(r.StateDir, name), containerRun, "unitrun-manager.log"))
	t.Logf("log of pod %s's systemd (%v):\n%s", name, err, b)
	out, _ := exec.Command("systemctl", "--user", "status", pod.ContainerUnit(name)).CombinedOutput()
	t.Logf("%s", out)
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(pod.LogFile(r.StateDir, name, "any")), "*"))
	for _, l := range logs {
		b, _ = os.ReadFile(l)
		t.Logf("%s:\n%s", filepath.Base(l), b)
	}
}

// stoppable is an isolated pod whose apps run until stopped: a exits by
// SIGTERM (a success, 143), b traps it and exits 7 (the pod's code).
const stoppable = `
name: %s
isolation: namespaces
apps:
  - name: a
    exec: ["/bin/sleep", "600"]
  - name: b
    exec: ["/bin/sh", "-c", "trap 'exit 7' TERM; echo trapped; sleep 600 & wait"]
    restartPolicy: Always
`

// waitLog waits until app's log of pod name holds want.
func waitLog(t *testing.T, r *Runner, name, app, want string) {
	t.Helper()
	for range 1200 {
		if b, _ := os.ReadFile(pod.LogFile(r.StateDir, name, app)); string(b) == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("app %s of pod %s never wrote %q", app, name, want)
}

// waitStarted waits until app of pod name has recorded the start of its run.
func waitStarted(t *testing.T, r *Runner, name, app string) {
	t.Helper()
	for range 1200 {
		s, _ := pod.ReadPod(r.StateDir, name)
		for _, a := range s.Apps {
			if a.Name == app && !a.StartedAt.IsZero() {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("app %s of pod %s never started", app, name)
}

// Every way to stop an isolated pod from outside stops it gracefully: each
// app gets SIGTERM and each exit is recorded, in the status files too.
func TestIsolatedPodStopFromOutside(t *testing.T) {
	ways := []struct {
		name string
		stop func(t *testing.T, r *Runner, name string)
	}{
		{"runner", func(t *testing.T, r *Runner, name string) {
			if _, err := r.Stop(context.Background(), name, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"systemctl", func(t *testing.T, r *Runner, name string) {
			if out, err := exec.Command("systemctl", "--user", "stop", pod.ContainerUnit(name)).CombinedOutput(); err != nil {
				t.Fatalf("systemctl stop: %v\n%s", err, out)
			}
		}},
		{"rtmin4", func(t *testing.T, r *Runner, name string) { signal(t, r, name, sigRTMin+4) }},
		{"rtmin3", func(t *testing.T, r *Runner, name string) { signal(t, r, name, sigRTMin+3) }},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			r := newRunner(t)
			name := run(t, r, fmt.Sprintf(stoppable, "out-"+w.name), "")
			defer containerLog(t, r, name)
			// a's command must have started (the start job waited only
			// for the start hook, which records the start and then executes
			// it), and b must have set its trap.
			waitStarted(t, r, name, "a")
			waitLog(t, r, name, "b", "trapped\n")
			w.stop(t, r, name)
			s := wait(t, r, name)
			wantPod(t, s, pod.PodFailed, 7)
			wantApp(t, s, "a", record.AppExited, 128+15)
			wantApp(t, s, "b", record.AppFailed, 7)
			for app, want := range map[string]int{"a": 143, "b": 7} {
				if c, err := record.ReadExitCode(r.StateDir, name, app); err != nil || c != want {
					t.Errorf("status file of %s: %d, %v; want %d", app, c, err, want)
				}
			}
			if n := appOf(t, s, "b").Restarts; n != 0 {
				t.Errorf("b restarted %d times at the stop", n)
			}
			waitInactive(t, r, name)
		})
	}
}

// signal sends signal n to isolated pod name's systemd.
func signal(t *testing.T, r *Runner, name string, n int) {
	t.Helper()
	pid, err := readContainerPID(r.StateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.Signal(n)); err != nil {
		t.Fatal(err)
	}
}

// waitInactive waits until pod name's container service has stopped, and
// checks that it did not fail.
func waitInactive(t *testing.T, r *Runner, name string) {
	t.Helper()
	if waitUnitEnded(t, r, pod.ContainerUnit(name)) == "failed" {
		t.Errorf("container service of %s failed", name)
	}
}

// Two isolated pods run at once, each in namespaces of its own.
func TestIsolatedPodsSideBySide(t *testing.T) {
	r := newRunner(t)
	const manifest = `
name: %s
isolation: namespaces
apps:
  - name: look
    exec: ["/bin/sh", "-c", "hostname; readlink /proc/self/ns/pid; readlink /proc/self/ns/mnt; sleep 1"]
`
	ctx := context.Background()
	var names []string
	for _, n := range []string{"left", "right"} {
		m, err := r.Create(ctx, []byte(fmt.Sprintf(manifest, n)))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
		t.Cleanup(func() {
			if err := r.Remove(context.Background(), m.Name, true); err != nil {
				t.Errorf("remove pod %s: %v", m.Name, err)
			}
		})
	}
	errs := make(chan error, len(names))
	for _, n := range names {
		go func() { errs <- r.Start(ctx, n, "") }()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[string]string)
	for _, n := range names {
		defer containerLog(t, r, n)
		s := wait(t, r, n)
		wantPod(t, s, pod.PodSucceeded, 0)
		log, err := os.ReadFile(pod.LogFile(r.StateDir, n, "look"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Fields(string(log))
		if len(lines) != 3 || lines[0] != n {
			t.Fatalf("pod %s's app printed %q", n, lines)
		}
		for _, ns := range lines[1:] {
			if other, ok := seen[ns]; ok {
				t.Errorf("pods %s and %s share namespace %s", other, n, ns)
			}
			seen[ns] = n
		}
	}
}

// With network: none an isolated pod has a network namespace of its own,
// with the loopback device only.
func TestIsolatedPodNoNetwork(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: offline
isolation: namespaces
network: none
apps:
  - name: net
    exec: ["/bin/cat", "/proc/net/dev"]
`, "")
	defer containerLog(t, r, name)
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	log, err := os.ReadFile(pod.LogFile(r.StateDir, name, "net"))
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	for _, line := range strings.Split(string(log), "\n") {
		if dev, _, ok := strings.Cut(line, ":"); ok {
			devices = append(devices, strings.TrimSpace(dev))
		}
	}
	if len(devices) != 1 || devices[0] != "lo" {
		t.Errorf("the app sees network devices %q, want only lo", devices)
	}
}

// An app with a rootfs runs with it as its root directory, with /proc of
// the pod's PID namespace mounted in it.
func TestIsolatedPodRootfs(t *testing.T) {
	root := systemdtest.Rootfs(t)
	if err := os.WriteFile(filepath.Join(root, "inside"), []byte("in the app's root\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: rooted
isolation: namespaces
apps:
  - name: app
    rootfs: %s
    exec: ["/bin/sh", "-c", "read line < /inside; echo \"$line\"; read c < /proc/1/comm; echo $c; if [ -e %s ]; then echo host visible; fi"]
`, root, root), "")
	defer containerLog(t, r, name)
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	log, err := os.ReadFile(pod.LogFile(r.StateDir, name, "app"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(log); got != "in the app's root\nsystemd\n" {
		t.Errorf("the app in its rootfs printed %q", got)
	}
}

// An exec probe of an app with a rootfs runs chrooted into it: a probe
// that tests for a file only the rootfs has passes every time, or the pod
// would fail (fail-pod after one failure).
func TestIsolatedPodRootfsExecProbe(t *testing.T) {
	root := systemdtest.Rootfs(t, "/bin/sleep")
	if err := os.WriteFile(filepath.Join(root, "only-in-rootfs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: rooted-probe
isolation: namespaces
apps:
  - name: app
    rootfs: %s
    exec: ["/bin/sleep", "4"]
    probe:
      exec: ["/bin/sh", "-c", "test -e /only-in-rootfs"]
      initialDelaySeconds: 0
      periodSeconds: 1
      failureThreshold: 1
      action: fail-pod
`, root), "")
	defer containerLog(t, r, name)
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	if p := s.Apps[0].Probe; p == nil || p.LastResult != record.ProbeSuccess {
		t.Errorf("probe of the rootfs app: %+v, want its last result a success", p)
	}
}

// pod rm of an isolated pod leaves no unit on the manager, no unit file,
// no state and no process: while it runs, the pod's systemd is in the
// container service's cgroup, and that cgroup is gone after rm.
func TestIsolatedPodRemoveLeavesNothing(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	m, err := r.Create(ctx, []byte("name: vanish\nisolation: namespaces\napps:\n  - name: sleeps\n    exec: [/bin/sleep, \"600\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, m.Name, ""); err != nil {
		t.Fatal(err)
	}
	pid, err := readContainerPID(r.StateDir, m.Name)
	if err != nil {
		t.Fatal(err)
	}
	props, err := r.Mgr.Properties(ctx, pod.ContainerUnit(m.Name), manager.ServiceIface)
	if err != nil {
		t.Fatal(err)
	}
	cg, _ := props["ControlGroup"].Value().(string)
	if cg == "" {
		t.Fatal("the container service has no cgroup")
	}
	dirs := cgroupDirs(cg)
	if !slicesContainsPID(dirs, pid) {
		t.Errorf("the pod's systemd %d is not in the service's cgroup %s (%v)", pid, cg, dirs)
	}
	if err := r.Remove(ctx, m.Name, true); err != nil {
		t.Fatal(err)
	}
	if names, err := r.Mgr.ListUnitNames(ctx, "unitrun-pod"); err != nil || len(names) != 0 {
		t.Errorf("units left after pod rm: %v, %v", names, err)
	}
	unitDir, err := r.Mgr.RuntimeUnitDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(unitDir, pod.ContainerUnit(m.Name))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("container unit file left after pod rm: %v", err)
	}
	if _, err := os.Stat(record.Dir(r.StateDir, m.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state left after pod rm: %v", err)
	}
	if systemdtest.Alive(pid) {
		t.Errorf("the pod's systemd %d is alive after pod rm", pid)
	}
	for _, d := range cgroupDirs(cg) {
		t.Errorf("cgroup %s left after pod rm", d)
	}
}

// cgroupDirs returns the directories of cgroup path cg in the hierarchies
// that exist.
func cgroupDirs(cg string) []string {
	var dirs []string
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"} {
		d := filepath.Join(root, cg)
		if fi, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil && !fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// slicesContainsPID reports whether pid is in one of dirs or below.
func slicesContainsPID(dirs []string, pid int) bool {
	want := strconv.Itoa(pid)
	found := false
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			if slices.Contains(strings.Fields(string(b)), want) {
				found = true
			}
			return nil
		})
	}
	return found
}

// pod stop with a timeout kills, through the pod's own systemd, an app
// that ignores SIGTERM, and still records every exit.
func TestIsolatedPodStopTimeoutKills(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: stubborn-iso
isolation: namespaces
apps:
  - name: ignores
    stopTimeout: 5min
    exec: ["/bin/sh", "-c", "trap '' TERM; echo trapped; while :; do sleep 0.1; done"]
  - name: polite
    exec: ["/bin/sleep", "600"]
`, "")
	defer containerLog(t, r, name)
	stopStubborn(t, r, name)
	waitInactive(t, r, name)
}

// Probes of an isolated pod run inside it: an HTTP probe reaches its app
// on the loopback device of the pod's own network namespace, and restarts
// it through the pod's own systemd.
func TestIsolatedPodProbeRestarts(t *testing.T) {
	r := newRunner(t)
	manifest := strings.Replace(flakyPod(t, "probe-iso", record.RestartApp), "apps:\n", "isolation: namespaces\nnetwork: none\napps:\n", 1)
	name := run(t, r, manifest, "")
	defer containerLog(t, r, name)
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts >= 2 })
	if s.Phase != pod.PodRunning {
		t.Errorf("pod %s after two probe restarts: %s", name, s.Phase)
	}
}

// A command name of an app with a rootfs is looked up inside the rootfs,
// its symlinks resolved there: rootcmd, an absolute symlink to /bin/sh
// that only the rootfs has, runs as the app and as its exec probe (which
// ends the pod at its first failure).
func TestIsolatedPodRootfsCommandByName(t *testing.T) {
	root := systemdtest.Rootfs(t, "/bin/sleep")
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/sh", filepath.Join(root, "usr/bin/rootcmd")); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: rooted-by-name
isolation: namespaces
apps:
  - name: app
    rootfs: %s
    exec: ["rootcmd", "-c", "echo in root; while [ ! -e /stop ]; do sleep 0.1; done"]
    probe:
      exec: ["rootcmd", "-c", "exit 0"]
      periodSeconds: 1
      failureThreshold: 1
      action: fail-pod
`, root), "")
	defer containerLog(t, r, name)
	waitLog(t, r, name, "app", "in root\n")
	s := poll(t, r, name, func(s pod.PodStatus) bool { p := s.Apps[0].Probe; return p != nil })
	if p := s.Apps[0].Probe; p.LastResult != record.ProbeSuccess {
		t.Errorf("probe of the rootfs app: %+v, want a success", p)
	}
	if err := os.WriteFile(filepath.Join(root, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
}

// A stop that comes while an isolated pod's own systemd still boots, before
// it has a handler for the signal that powers it off (which the kernel
// drops for the PID 1 of a namespace without one), stops the pod once it
// has booted, gracefully: it does not wait for the container's stop
// timeout and the SIGKILL that ends it.
func TestIsolatedPodStoppedWhileBooting(t *testing.T) {
	r := newRunner(t)
	name := create(t, r, `
name: stopped-booting
isolation: namespaces
apps:
  - name: a
    exec: ["/bin/sleep", "600"]
    stopTimeout: 5s
`)
	defer containerLog(t, r, name)
	ctx := context.Background()
	if _, err := r.Mgr.StartUnit(ctx, pod.ContainerUnit(name), "replace"); err != nil {
		t.Fatal(err)
	}
	// The container writes its systemd's pid as soon as it has started it.
	pidFile := filepath.Join(record.Dir(r.StateDir, name), containerPID)
	for {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := r.Mgr.StopUnit(ctx, pod.ContainerUnit(name), "replace"); err != nil {
		t.Fatal(err)
	}
	waitInactive(t, r, name) // "failed" if the stop timed out and killed it
	s, err := r.Status(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if a := appOf(t, s, "a"); a.ExitCode != nil && *a.ExitCode == 128+9 {
		t.Errorf("app a was killed (SIGKILL) at the stop: %+v", a)
	}
}
