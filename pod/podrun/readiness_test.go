package podrun

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// TestProbeReadiness flips an app's readiness probe, an exec check of a
// file: the app and the pod are not ready until the first success, stay
// ready at one failure, are not ready at the threshold of two, and are
// ready again at the next success; the app never restarts.
func TestProbeReadiness(t *testing.T) {
	ok := filepath.Join(t.TempDir(), "ok")
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: ready
apps:
  - name: app
    exec: ["/bin/sleep", "600"]
    readinessProbe:
      exec: ["/usr/bin/test", "-e", %q]
      periodSeconds: 1
      failureThreshold: 2
`, ok), "")
	readiness := func(s pod.PodStatus) *record.ProbeStatus { return s.Apps[0].Readiness }
	s := poll(t, r, name, func(s pod.PodStatus) bool { return readiness(s) != nil })
	if p := readiness(s); p.LastResult != record.ProbeFailure || s.Apps[0].Ready || s.Ready {
		t.Errorf("before the first success: ready %v, pod ready %v, probe %+v", s.Apps[0].Ready, s.Ready, p)
	}
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Ready })
	if !s.Ready || readiness(s).LastResult != record.ProbeSuccess {
		t.Errorf("after a success: pod ready %v, probe %+v", s.Ready, readiness(s))
	}
	if err := os.Remove(ok); err != nil {
		t.Fatal(err)
	}
	s = poll(t, r, name, func(s pod.PodStatus) bool {
		if p := readiness(s); p.ConsecutiveFailures == 1 && !s.Apps[0].Ready {
			t.Errorf("not ready after one failure of two: %+v", p)
		}
		return readiness(s).ConsecutiveFailures >= 2
	})
	if s.Apps[0].Ready || s.Ready {
		t.Errorf("at the failure threshold: ready %v, pod ready %v", s.Apps[0].Ready, s.Ready)
	}
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Ready })
	if a := s.Apps[0]; !s.Ready || a.Restarts != 0 || a.State != record.AppRunning || a.Readiness.Acted != "" {
		t.Errorf("ready again: pod ready %v, app %+v", s.Ready, a)
	}
}

// TestProbeStartupHolds checks that a startup probe holds the liveness
// probe until it succeeds: a liveness probe that always fails, with
// fail-pod at its first failure, ends the pod only once the startup probe
// has succeeded.
func TestProbeStartupHolds(t *testing.T) {
	ok := filepath.Join(t.TempDir(), "ok")
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: startup-holds
apps:
  - name: app
    exec: ["/bin/sleep", "600"]
    startupProbe:
      exec: ["/usr/bin/test", "-e", %q]
      periodSeconds: 1
      failureThreshold: 30
    probe:
      exec: ["/bin/false"]
      failureThreshold: 1
      action: fail-pod
`, ok), "")
	poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Startup != nil })
	time.Sleep(2500 * time.Millisecond)
	s, err := r.Status(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Apps[0]; s.Phase != pod.PodRunning || a.Probe != nil || a.Ready || a.Startup.LastResult != record.ProbeFailure {
		t.Fatalf("while the startup probe fails: pod %s, app %+v", s.Phase, a)
	}
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 143)
	if a := s.Apps[0]; a.Startup == nil || a.Startup.LastResult != record.ProbeSuccess || a.Probe == nil || a.Probe.Acted != record.FailPod {
		t.Errorf("app %+v: want startup success, then liveness fail-pod", a)
	}
}

// TestProbeStartupRestart checks that a startup probe that reaches its
// failure threshold restarts the app, as a liveness probe's restart does.
func TestProbeStartupRestart(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: startup-restart
restartBackoff: {initial: 200ms, max: 1s}
apps:
  - name: app
    exec: ["/bin/sleep", "600"]
    startupProbe:
      exec: ["/bin/false"]
      periodSeconds: 1
      failureThreshold: 2
`, "")
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts >= 2 })
	if s.Phase != pod.PodRunning || s.Apps[0].Ready {
		t.Errorf("after two startup restarts: pod %s, app %+v", s.Phase, s.Apps[0])
	}
}

// TestProbeTimedFromRun checks that probes are timed from the start of
// each run of the app, not from their service's: the app, restarted by its
// policy after 2.5 s with a back-off of 3 s, has its marker file only while
// its command runs, and a liveness probe checking it every second from 1 s
// on, which ends the pod at its first failure, never fails.
func TestProbeTimedFromRun(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "running")
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: probe-timing
restartPolicy: Always
restartBackoff: {initial: 3s, max: 3s}
apps:
  - name: app
    exec: ["/bin/sh", "-c", "touch %[1]s; sleep 2.5; rm %[1]s; exit 1"]
    probe:
      exec: ["/usr/bin/test", "-e", %[1]q]
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
      action: fail-pod
`, marker), "")
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts >= 2 || s.Phase != pod.PodRunning })
	if a := s.Apps[0]; s.Phase != pod.PodRunning || a.Probe == nil || a.Probe.LastResult != record.ProbeSuccess {
		t.Errorf("pod %s, app %+v: want running, its probe never failing", s.Phase, a)
	}
}

// TestProbeAfterCommandStarts checks that a probe first checks once the
// app's command runs, not once its service has started ("unitrun pod
// exec" still runs then): a probe that ends the pod at its first failure,
// with no initial delay, looks for the app's command among the processes,
// on each of the app's many runs.
func TestProbeAfterCommandStarts(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: probe-command
restartPolicy: Always
restartBackoff: {initial: 100ms, max: 100ms}
apps:
  - name: app
    exec: ["/bin/sleep", "1.3"]
    probe:
      exec: ["/usr/bin/pgrep", "-f", "-x", "/bin/sleep 1.3"]
      periodSeconds: 1
      failureThreshold: 1
      action: fail-pod
`, "")
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts >= 6 || s.Phase != pod.PodRunning })
	if a := s.Apps[0]; s.Phase != pod.PodRunning || a.Probe == nil || a.Probe.Acted != "" {
		t.Errorf("pod %s, app %+v: want running, its probe never failing", s.Phase, a)
	}
}

// TestProbeStartupFailPod checks that a startup probe with action
// fail-pod ends the pod at its threshold, with the app failed and never
// restarted, as a liveness probe's fail-pod does.
func TestProbeStartupFailPod(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: startup-fail-pod
restartPolicy: Always
apps:
  - name: app
    exec: ["/bin/sleep", "600"]
    startupProbe:
      exec: ["/bin/false"]
      periodSeconds: 1
      failureThreshold: 2
      action: fail-pod
`, "")
	s := wait(t, r, name)
	a := appOf(t, s, "app")
	if s.Phase != pod.PodFailed || a.State != record.AppFailed || a.Restarts != 0 {
		t.Errorf("pod %s, app %s after %d restarts; want Failed, failed after none", s.Phase, a.State, a.Restarts)
	}
	if p := a.Startup; p == nil || p.Acted != record.FailPod || p.ConsecutiveFailures != 2 {
		t.Errorf("startup probe: %+v", p)
	}
}
