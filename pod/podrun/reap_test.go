package podrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

// An app that systemd stopped between two runs (pod stop in its
// RestartSec window or its back-off) ends with the exit of its last run:
// a success stays a success, a failure a failure, and the restart that
// never ran is not counted.
func TestReapEndsWithLastExit(t *testing.T) {
	for _, c := range []struct {
		result string
		code   int
		want   record.AppState
	}{
		{"success", 0, record.AppExited},
		{"exit-code", 3, record.AppFailed},
	} {
		dir := t.TempDir()
		at := time.Now().Add(-time.Second).Round(0)
		s := record.AppStatus{Name: "a", State: record.AppRestarting, ExitCode: &c.code, Result: c.result, Restarts: 2, Backoff: time.Second, LastExitAt: at}
		if err := record.WriteApp(dir, "p", s); err != nil {
			t.Fatal(err)
		}
		if err := Reap(dir, "p", "a"); err != nil {
			t.Fatal(err)
		}
		got, err := record.ReadApp(dir, "p", "a")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != c.want || *got.ExitCode != c.code || got.Restarts != 2 || !got.FinishedAt.Equal(at) {
			t.Errorf("last exit %s %d: reaped as %s, exit code %d, restarts %d, finished at %v; want %s, %d, 2, %v",
				c.result, c.code, got.State, *got.ExitCode, got.Restarts, got.FinishedAt, c.want, c.code, at)
		}
	}
}

// A run that a stop ends before its command runs is no success, whatever
// the signal: a first run fails, with a message that says it never got
// that far and no start time, and so does the pod; a restart is no run,
// and the app ends with its last run's exit. The pod's lock, held here,
// keeps each run short of its command (ExecApp records the run's start
// under it) until the stop has killed the run; Start, which waits for the
// runs to begin, returns once the stop has ended the pod, with its end.
func TestPodStoppedBeforeCommand(t *testing.T) {
	r := newRunner(t)
	name := create(t, r, `
name: early
apps:
  - name: a
    exec: ["/bin/sleep", "600"]
  - name: b
    exec: ["/bin/sleep", "600"]
`)
	unlock := lock(t, r, name)
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background(), name, "") }()
	s := stopLocked(t, r, name, unlock, "a", "b")
	wantPod(t, s, pod.PodFailed, 128+15)
	var ended *EndedError
	if err := <-started; !errors.As(err, &ended) || ended.Status.Phase != pod.PodFailed {
		t.Errorf("start of a pod stopped while it started: %v; want the pod's end, Failed", err)
	}
	for _, a := range s.Apps {
		if a.State != record.AppFailed || a.ExitCode == nil || *a.ExitCode != 128+15 || a.Signal != "TERM" ||
			a.Message != "ended before its command ran" || !a.StartedAt.IsZero() || !a.LastStartedAt.IsZero() {
			t.Errorf("app %s, stopped before its command ran: %+v", a.Name, a)
		}
	}

	name = create(t, r, `
name: again
restartPolicy: OnFailure
restartBackoff: {initial: 1s}
apps:
  - name: a
    exec: ["/bin/sh", "-c", "exit 3"]
`)
	if err := r.Start(context.Background(), name, ""); err != nil {
		t.Fatal(err)
	}
	for appState(t, r, name, "a") != record.AppRestarting {
		time.Sleep(20 * time.Millisecond)
	}
	s = stopLocked(t, r, name, lock(t, r, name), "a")
	wantPod(t, s, pod.PodFailed, 3)
	if a := appOf(t, s, "a"); a.State != record.AppFailed || a.ExitCode == nil || *a.ExitCode != 3 || a.Message != "" || a.Restarts != 0 || a.StartedAt.IsZero() {
		t.Errorf("app a, its restart stopped before its command ran: %+v; want failed with its first run's 3", a)
	}
	if code, err := record.ReadExitCode(r.StateDir, name, "a"); err != nil || code != 3 {
		t.Errorf("status file of a: %d, %v; want its first run's 3", code, err)
	}
}

// A stop while an app's first run waits in its await hook (ExecStartPre=,
// for the sidecar before it), before the start hook has a process, ends
// that run as a stop before its command ran does anywhere: by the stop's
// SIGTERM, 143, though systemd tells the exit hook of no exit status then
// (only $SERVICE_RESULT signal), failed, with no start time. The sidecar's
// startup probe never passes, so the app waits until the stop.
func TestPodStoppedInItsAwait(t *testing.T) {
	r := newRunner(t)
	name := create(t, r, `
name: awaiting
apps:
  - name: side
    sidecar: true
    exec: ["/bin/sleep", "600"]
    startupProbe: {exec: ["/bin/false"], periodSeconds: 1, failureThreshold: 600}
  - name: main
    exec: ["/bin/echo", "main"]
`)
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background(), name, "") }()
	waitService(t, r, pod.AppUnit(name, "main"), func(p map[string]dbus.Variant) bool {
		control, _ := p["ControlPID"].Value().(uint32)
		main, _ := p["MainPID"].Value().(uint32)
		return control != 0 && main == 0
	})
	s, err := r.Stop(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ended *EndedError
	if err := <-started; err != nil && !errors.As(err, &ended) {
		t.Errorf("start of a pod stopped while an app awaited its sidecar: %v", err)
	}
	wantPod(t, s, pod.PodFailed, 128+15)
	a := appOf(t, s, "main")
	if a.State != record.AppFailed || a.ExitCode == nil || *a.ExitCode != 128+15 || a.Signal != "TERM" ||
		a.Message != "ended before its command ran" || !a.StartedAt.IsZero() || !a.LastStartedAt.IsZero() {
		t.Errorf("app main, stopped in its await hook: %+v; want failed, 143, TERM, ended before its command ran", a)
	}
	if code, err := record.ReadExitCode(r.StateDir, name, "main"); err != nil || code != 128+15 {
		t.Errorf("status file of main: %d, %v; want 143", code, err)
	}
	if data, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "main")); len(data) != 0 {
		t.Errorf("main's command ran: it printed %q", data)
	}
}

// stopResult is what a stop of a pod returned.
type stopResult struct {
	s   pod.PodStatus
	err error
}

// stopInBackground stops pod name and sends what the stop returned.
func stopInBackground(r *Runner, name string) <-chan stopResult {
	stopped := make(chan stopResult, 1)
	go func() {
		s, err := r.Stop(context.Background(), name, 0)
		stopped <- stopResult{s, err}
	}()
	return stopped
}

// lock takes the lock of pod name and returns its release, which the test's
// end calls too.
func lock(t *testing.T, r *Runner, name string) func() {
	t.Helper()
	unlock, err := record.Lock(r.StateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(unlock) }
	t.Cleanup(release)
	return release
}

// stopLocked stops pod name, whose lock the test holds, once a run of each
// app has a process (which waits for the lock); releases the lock once
// the stop has killed them, and returns the pod's status after the stop.
func stopLocked(t *testing.T, r *Runner, name string, unlock func(), apps ...string) pod.PodStatus {
	t.Helper()
	for _, app := range apps {
		waitService(t, r, pod.AppUnit(name, app), func(p map[string]dbus.Variant) bool {
			pid, _ := p["MainPID"].Value().(uint32)
			return pid != 0
		})
	}
	stopped := stopInBackground(r, name)
	for _, app := range apps {
		waitService(t, r, pod.AppUnit(name, app), func(p map[string]dbus.Variant) bool {
			code, _ := p["ExecMainCode"].Value().(int32)
			return code == 2 // CLD_KILLED
		})
	}
	unlock()
	res := <-stopped
	if res.err != nil {
		t.Fatalf("stop pod %s: %v", name, res.err)
	}
	return res.s
}

// waitService waits until the service properties of unit u satisfy ok.
func waitService(t *testing.T, r *Runner, u string, ok func(map[string]dbus.Variant) bool) {
	t.Helper()
	for range 1500 {
		p, err := r.Mgr.Properties(context.Background(), u, manager.ServiceIface)
		if err != nil {
			t.Fatal(err)
		}
		if ok(p) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: the state waited for never came", u)
}

// A run that ends before its start is done (an app that fails at once)
// runs its ExecStopPost= with the unit's start job still pending: that is
// no stop, and reap-app must let the exit restart, or the restart goes
// uncounted and the app is recorded as ended while systemd runs it again.
// A stop job, and a restart's before its stop is done, are stops.
func TestStoppedByJob(t *testing.T) {
	conn := systemdtest.Conn(t)
	open := func(context.Context) (*manager.Conn, error) { return systemdtest.Dial(t), nil }
	ctx := context.Background()
	// The stops wait for this file, which the cleanup writes.
	done := filepath.Join(t.TempDir(), "done")
	start := func(name string, props ...unit.Property) {
		t.Helper()
		props = append(props, unit.Property{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")})
		if _, err := conn.StartTransientUnit(ctx, name, "replace", props); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(done, nil, 0o644); err != nil {
				t.Error(err)
			}
			// A stop under test may be done and the unit gone already.
			if _, err := conn.StopUnit(ctx, name, "replace"); err != nil && !manager.IsNoSuchUnit(err) {
				t.Error(err)
			}
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if ok, err := conn.Loaded(ctx, name); err != nil || !ok {
					return
				}
			}
			t.Errorf("%s: still loaded 10s after its stop", name)
		})
	}
	pending := func(name string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			props, err := conn.Properties(ctx, name, manager.UnitIface)
			if err != nil {
				t.Fatal(err)
			}
			if manager.JobPending(props) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no job pending after 10s", name)
			}
		}
	}
	sleep := func(key string) unit.Property { return unit.Exec(key, "/bin/sleep", []string{"/bin/sleep", "60"}) }

	// A oneshot's start job is pending until its ExecStart= ends.
	starting := "unitrun-test-starting.service"
	start(starting, unit.Property{Name: "Type", Value: dbus.MakeVariant("oneshot")}, sleep("ExecStart"))
	pending(starting)
	if stoppedByJob(ctx, open, starting) {
		t.Errorf("a pending start job read as a stop")
	}

	// A stop job is pending while ExecStop= runs; so is a restart's.
	for _, restart := range []bool{false, true} {
		name := fmt.Sprintf("unitrun-test-stopping-%v.service", restart)
		start(name, sleep("ExecStart"), unit.Exec("ExecStop", "/bin/sh", []string{"/bin/sh", "-c", "until test -e " + done + "; do sleep 0.05; done"}))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			props, err := conn.Properties(ctx, name, manager.UnitIface)
			if err != nil {
				t.Fatal(err)
			}
			if props["ActiveState"].Value() == "active" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not active after 10s", name)
			}
		}
		var err error
		if restart {
			_, err = conn.RestartUnit(ctx, name, "replace")
		} else {
			_, err = conn.StopUnit(ctx, name, "replace")
		}
		if err != nil {
			t.Fatal(err)
		}
		pending(name)
		if !stoppedByJob(ctx, open, name) {
			t.Errorf("restart %v: a pending stop read as no stop", restart)
		}
	}
}

// An app whose reap-app is killed before it records the exit (here while
// it waits for the pod's lock, held by the test) still ends the pod with
// its exit: the shutdown hook, which runs once the app's unit has stopped,
// takes the exit systemd kept of the unit's run (ExecMainCode,
// ExecMainStatus, Result) for the record reap-app did not write. Before,
// the pod ended Succeeded with exit code 0, and the app read "running".
func TestPodReapAppKilled(t *testing.T) {
	r := newRunner(t)
	mark := filepath.Join(t.TempDir(), "go")
	name := run(t, r, fmt.Sprintf(`
name: reap-killed
apps:
  - name: a
    exec: ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; exit 3"]
`, mark), "")
	for range 600 {
		if s, err := record.ReadAppOrNew(r.StateDir, name, "a"); err != nil || s.State == record.AppRunning {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	unlock, err := record.Lock(r.StateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// reap-app writes the status file before it waits for the lock.
	for range 600 {
		if c, err := record.ReadExitCode(r.StateDir, name, "a"); err == nil && c == 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	hook := processWith(t, "\x00reap-app\x00", "\x00"+name+"\x00a\x00")
	if hook == 0 {
		t.Fatal("no reap-app process of the app")
	}
	if err := syscall.Kill(hook, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for systemdtest.Alive(hook) {
		time.Sleep(10 * time.Millisecond)
	}
	unlock()
	locked = false
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 3)
	wantApp(t, s, "a", record.AppFailed, 3)
	if a, err := record.ReadApp(r.StateDir, name, "a"); err != nil || a.State != record.AppFailed || a.ExitCode == nil || *a.ExitCode != 3 {
		t.Errorf("app a's record: %+v, %v; want failed, exit code 3", a, err)
	}
}

// processWith returns a process whose command line holds every one of
// parts, or 0.
func processWith(t *testing.T, parts ...string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(string(cmdline), p)
		}
		if all {
			return pid
		}
	}
	return 0
}

// A stop that comes while an init app's ExecStartPost= records its
// success, after its command has exited 0, kills that hook; systemd then
// tells ExecStopPost= result "signal" with the command's exit status 0.
// The init app succeeded all the same: exited, 0, result success. The
// apps after it never ran: their units' start jobs waited for the init
// app's, and the stop canceled them, so systemd ran none of their hooks;
// the shutdown hook records them as stopped before their command ran
// (143, TERM, failed), the sidecar too, and the pod ends with the stop's
// 143. The pod's lock, taken here once the init app's run has started,
// holds its ExecStartPost= (reap-app writes under it) until the stop has
// killed it, and the ExecStopPost= after it until it has begun.
func TestPodStoppedWhileInitAppRecords(t *testing.T) {
	r := newRunner(t)
	gate := filepath.Join(t.TempDir(), "go")
	name := create(t, r, fmt.Sprintf(`
name: initpost
apps:
  - name: init
    init: true
    exec: ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; echo init"]
  - name: side
    sidecar: true
    exec: ["/bin/sleep", "600"]
  - name: main
    exec: ["/bin/echo", "main"]
`, gate))
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background(), name, "") }()
	for appState(t, r, name, "init") != record.AppRunning {
		time.Sleep(20 * time.Millisecond)
	}
	unlock := lock(t, r, name)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The command has exited 0; ExecStartPost= waits for the lock.
	var post uint32
	waitService(t, r, pod.AppUnit(name, "init"), func(p map[string]dbus.Variant) bool {
		code, _ := p["ExecMainCode"].Value().(int32)
		post, _ = p["ControlPID"].Value().(uint32)
		return code == cldExited && post != 0
	})
	stopped := stopInBackground(r, name)
	// The stop has killed ExecStartPost=; ExecStopPost= runs.
	waitService(t, r, pod.AppUnit(name, "init"), func(p map[string]dbus.Variant) bool {
		pid, _ := p["ControlPID"].Value().(uint32)
		return pid != 0 && pid != post
	})
	unlock()
	res := <-stopped
	if res.err != nil {
		t.Fatal(res.err)
	}
	<-started
	s := res.s
	a := appOf(t, s, "init")
	if a.State != record.AppExited || a.ExitCode == nil || *a.ExitCode != 0 || a.Result != "success" || a.Signal != "" {
		t.Errorf("init, whose command exited 0 before the stop: %s, exit code %s, result %q, signal %q; want exited, 0, success",
			a.State, fmtCode(a.ExitCode), a.Result, a.Signal)
	}
	if code, err := record.ReadExitCode(r.StateDir, name, "init"); err != nil || code != 0 {
		t.Errorf("status file of init: %d, %v; want 0", code, err)
	}
	for _, app := range []string{"side", "main"} {
		a := appOf(t, s, app)
		if a.State != record.AppFailed || a.ExitCode == nil || *a.ExitCode != 128+15 || a.Signal != "TERM" ||
			a.Message != "ended before its command ran" || !a.StartedAt.IsZero() || a.FinishedAt.IsZero() {
			t.Errorf("app %s, stopped before it started: %+v; want failed, 143, TERM, ended before its command ran", app, a)
		}
		if code, err := record.ReadExitCode(r.StateDir, name, app); err != nil || code != 128+15 {
			t.Errorf("status file of %s: %d, %v; want 143", app, code, err)
		}
	}
	wantPod(t, s, pod.PodFailed, 128+15)
}

// A stop that comes while the start jobs of every unit of the pod still
// wait, here for a unit that the pod's slice is ordered after, cancels
// them all, the shutdown service's too: systemd runs no hook of the pod.
// The stop ends the pod all the same, as its shutdown service would have:
// the first init app, which the stop kept from starting, failed, stopped
// before its command ran (143, TERM); the apps after it stay waiting; the
// pod is Failed with 143. Before, the pod stayed Running for good and the
// stop never returned.
func TestPodStoppedBeforeItsUnitsStarted(t *testing.T) {
	r := newRunner(t)
	name := create(t, r, `
name: queued
apps:
  - name: init
    init: true
    exec: ["/bin/echo", "init"]
  - name: main
    exec: ["/bin/echo", "main"]
`)
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "go")
	blocker := "unitrun-test-queued-blocker.service"
	props := []unit.Property{
		{Name: "Type", Value: dbus.MakeVariant("oneshot")},
		{Name: "Before", Value: dbus.MakeVariant([]string{pod.SliceUnit(name)})},
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
		unit.Exec("ExecStart", "/bin/sh", []string{"/bin/sh", "-c", "until test -e " + gate + "; do sleep 0.05; done"}),
	}
	if _, err := r.Mgr.StartTransientUnit(ctx, blocker, "replace", props); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(gate, nil, 0o644)
		r.Mgr.StopUnit(ctx, blocker, "replace")
	})
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx, name, "") }()
	// The slice's start job waits for the blocker's.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		p, err := r.Mgr.Properties(ctx, pod.SliceUnit(name), manager.UnitIface)
		if err == nil && manager.JobPending(p) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no start job pending after 10s (%v)", pod.SliceUnit(name), err)
		}
	}
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := r.Stop(stopCtx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	wantPod(t, s, pod.PodFailed, 128+15)
	a := appOf(t, s, "init")
	if a.State != record.AppFailed || a.ExitCode == nil || *a.ExitCode != 128+15 || a.Signal != "TERM" ||
		a.Message != "ended before its command ran" || !a.StartedAt.IsZero() {
		t.Errorf("init, stopped before its unit started: %+v; want failed, 143, TERM, ended before its command ran", a)
	}
	if a := appOf(t, s, "main"); a.State != record.AppWaiting || a.ExitCode != nil {
		t.Errorf("main, after an init app that never succeeded: %+v; want waiting, never run", a)
	}
}

// A start of an app's unit that comes once its pod is ending and the app
// has ended for good (as a restart that systemd began as the pod's stop
// came does, after the app's reaper had ended it) runs nothing, and the
// app's record and status file stay as its last run left them: the start
// hook sees the pod stopping, and the exit hook counts it as no run.
func TestPodStartOnceEnded(t *testing.T) {
	r := newRunner(t)
	runs := filepath.Join(t.TempDir(), "runs")
	name := run(t, r, fmt.Sprintf(`
name: ended
apps:
  - name: a
    exec: ["/bin/sh", "-c", "echo run >> %s; exit 3"]
`, runs), "")
	ctx := context.Background()
	s, err := r.Wait(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	wantPod(t, s, pod.PodFailed, 3)
	before := appOf(t, s, "a")
	// The pod's end is recorded before systemd has stopped its slice and
	// target: a start queued while their stop jobs still ran would be
	// canceled by them, and no start hook would run.
	waitUnitEnded(t, r, pod.SliceUnit(name))
	waitUnitEnded(t, r, pod.TargetUnit(name))
	u := pod.AppUnit(name, "a")
	if err := r.Mgr.RunJob(ctx, u, r.Mgr.StartUnit); err != nil {
		t.Fatalf("start of %s once the pod ended: %v", u, err)
	}
	waitUnitEnded(t, r, u)
	if b, _ := os.ReadFile(runs); string(b) != "run\n" {
		t.Errorf("runs of the app's command: %q; want the one run of the pod", b)
	}
	after, err := record.ReadApp(r.StateDir, name, "a")
	if err != nil {
		t.Fatal(err)
	}
	if after.State != before.State || after.ExitCode == nil || *after.ExitCode != 3 || after.Signal != before.Signal ||
		after.Restarts != before.Restarts || !after.StartedAt.Equal(before.StartedAt) || !after.FinishedAt.Equal(before.FinishedAt) || after.Message != before.Message {
		t.Errorf("app a after a start once the pod ended: %+v; want its record as the pod's run left it: %+v", after, before)
	}
	if code, err := record.ReadExitCode(r.StateDir, name, "a"); err != nil || code != 3 {
		t.Errorf("status file of a: %d, %v; want its run's 3", code, err)
	}
}

// waitUnitEnded waits until unit u is inactive or failed, and returns
// which.
func waitUnitEnded(t *testing.T, r *Runner, u string) string {
	t.Helper()
	for {
		props, err := r.Mgr.Properties(context.Background(), u, manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := props["ActiveState"].Value().(string); st == "inactive" || st == "failed" {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}
