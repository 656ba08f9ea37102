package podrun

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// flakyServer is an HTTP server on 127.0.0.1:argv[1] that answers 200 to
// its first argv[2] requests and 500 to every later one.
const flakyServer = `
import http.server, sys
n = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global n
        n += 1
        self.send_response(200 if n <= int(sys.argv[2]) else 500)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// flakyPod is the manifest of pod name, whose app api serves two good
// answers per run, probed over HTTP with action.
func flakyPod(t *testing.T, name string, action record.ProbeAction) string {
	m, _ := serverPod(t, name, flakyServer, []string{"2"}, 2, action, "")
	return m
}

// serverPod is the manifest of pod name, whose app api runs the Python
// HTTP server script on a free port (its first argument) with args,
// probed on /healthz with failureThreshold threshold and action; extra
// adds lines to the app, with %[2]d for the port. It returns the manifest
// and the port.
func serverPod(t *testing.T, name, script string, args []string, threshold int, action record.ProbeAction, extra string) (string, int) {
	port := freePort(t)
	argv, err := json.Marshal(append([]string{"/usr/bin/python3", "-c", script, fmt.Sprint(port)}, args...))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
name: %[1]s
restartBackoff: {initial: 200ms, max: 1s}
apps:
  - name: api
    exec: %[3]s
    probe:
      http: {port: %[2]d, path: /healthz}
      periodSeconds: 1
      failureThreshold: %[4]d
      action: %[5]s
`+extra, name, port, argv, threshold, action), port
}

// poll waits, for at most a minute, until ok holds for pod name's status,
// and returns that status.
func poll(t *testing.T, r *Runner, name string, ok func(pod.PodStatus) bool) pod.PodStatus {
	t.Helper()
	var s pod.PodStatus
	var err error
	for range 1200 {
		if s, err = r.Status(context.Background(), name); err == nil && ok(s) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, _ := json.Marshal(s)
	t.Fatalf("pod %s: status %s, %v", name, data, err)
	return s
}

func TestProbeRestart(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, flakyPod(t, "probe-restart", record.RestartApp), "")
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts >= 2 })
	if s.Phase != pod.PodRunning {
		t.Errorf("pod %s after two probe restarts: %s", name, s.Phase)
	}
	s = poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].State == record.AppRunning && s.Apps[0].Probe != nil })
	if p := s.Apps[0].Probe; p.Acted != "" || p.ConsecutiveFailures >= 2 {
		t.Errorf("probe of a restarted app: %+v", p)
	}
}

// redirectServer is an HTTP server on 127.0.0.1:argv[1] that answers
// /healthz with a redirect to /fail, and /fail with 500.
const redirectServer = `
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/healthz":
            self.send_response(302)
            self.send_header("Location", "/fail")
        else:
            self.send_response(500)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`

// A liveness probe answered with a redirect to a failing path on the same
// host fails, as the kubelet's does, and restarts the app: the redirect
// is followed, not taken for a success.
func TestProbeRedirectRestarts(t *testing.T) {
	r := newRunner(t)
	m, port := serverPod(t, "probe-redirect", redirectServer, nil, 1, record.RestartApp,
		"    startupProbe: {tcp: {port: %[2]d}, periodSeconds: 1, failureThreshold: 100}\n")
	name := run(t, r, m, "")
	// The startup probe holds the liveness probe until the server
	// listens; then each check follows the redirect and fails, and
	// restarts the app.
	fail := fmt.Sprintf("status 500 from http://127.0.0.1:%d/fail", port)
	s := poll(t, r, name, func(s pod.PodStatus) bool {
		p := s.Apps[0].Probe
		return p != nil && strings.Contains(p.Message, fail)
	})
	n := s.Apps[0].Restarts
	poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts > n })
}

func TestProbeFailPod(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, flakyPod(t, "probe-fail", record.FailPod), "")
	s := wait(t, r, name)
	if s.Phase != pod.PodFailed {
		t.Errorf("pod %s: %s, want Failed", name, s.Phase)
	}
	a := appOf(t, s, "api")
	if a.State != record.AppFailed || a.Restarts != 0 {
		t.Errorf("app api: %s after %d restarts, want failed after none", a.State, a.Restarts)
	}
	if p := a.Probe; p == nil || p.LastResult != record.ProbeFailure || p.ConsecutiveFailures != 2 || p.Acted != record.FailPod {
		t.Errorf("probe: %+v", p)
	} else if a.LastStartedAt.IsZero() || !p.RunStartedAt.Equal(a.LastStartedAt) {
		// Which run the failures are of: "pod events" tells them of it.
		t.Errorf("probe of the run started at %v, want the run that ended, started at %v", p.RunStartedAt, a.LastStartedAt)
	}
	// A status read that read the app's record while it ran and its unit's
	// state once it had ended (pod run's progress, pod status) tells the
	// exit recorded since, not systemd's own account of it, which knows
	// nothing of the probe: SIGTERM, a success to systemd.
	m, err := r.Manifest(name)
	if err != nil {
		t.Fatal(err)
	}
	stale := a
	stale.State, stale.ExitCode, stale.Signal, stale.Result, stale.Invocation = record.AppRunning, nil, "", "", ""
	stale.FinishedAt, stale.LastExitAt, stale.Probe = time.Time{}, time.Time{}, nil
	got, err := appFromSystemd(context.Background(), r.Mgr, r.StateDir, name, m.App("api"), stale)
	if err != nil || got.State != record.AppFailed || got.FromSystemd || got.ExitCode == nil || *got.ExitCode != 128+15 {
		t.Errorf("app api read while it ran, its unit once it had ended: %+v, %v; want its record, failed by its probe, 143", got, err)
	}
}

func TestProbeFailPodCleanExit(t *testing.T) {
	// The probe fails only once the app has set its trap: a probe checks
	// as soon as the app's command runs, which can be before the command
	// has set it.
	ready := filepath.Join(t.TempDir(), "ready")
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: probe-clean
apps:
  - name: app
    exec: ["/bin/sh", "-c", "trap 'exit 0' TERM; touch %[1]s; sleep 600 & wait"]
    probe:
      exec: ["/bin/sh", "-c", "! test -e %[1]s"]
      failureThreshold: 1
      action: fail-pod
`, ready), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 1)
	wantApp(t, s, "app", record.AppFailed, 0)
}

// TestProbeInFlightAtExit ends the app while its probe's check runs. The
// stop of the probe service, which the app's end brings, must end the
// check through the probe, not by signalling the check's command itself:
// a command killed by the stop's SIGTERM before the probe learns of the
// stop reads as a failed check, which with a threshold of one and
// fail-pod would fail a pod whose app succeeded. The check's command
// writes a file if it gets SIGTERM, in a session of its own, where the
// probe's end of a check (SIGKILL to its process group) does not reach.
func TestProbeInFlightAtExit(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "term")
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: probe-in-flight
apps:
  - name: app
    exec: ["/bin/sleep", "1"]
    probe:
      exec: ["/usr/bin/setsid", "--wait", "/bin/sh", "-c", "trap 'echo TERM > %s; exit 1' TERM; sleep 30 & wait"]
      initialDelaySeconds: 0
      timeoutSeconds: 60
      failureThreshold: 1
      action: fail-pod
`, mark), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	if p := appOf(t, s, "app").Probe; p != nil {
		t.Errorf("probe recorded %+v for a check cut short by the app's end", p)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the stop of the probe service sent SIGTERM to the check's command")
	}
}

func TestProbeExecHangs(t *testing.T) {
	r := newRunner(t)
	hang := hangDuration()
	name := run(t, r, fmt.Sprintf(`
name: probe-hang
apps:
  - name: app
    exec: ["/bin/sleep", "600"]
    probe:
      exec: ["/bin/sh", "-c", "sleep %s; true"]
      timeoutSeconds: 1
      failureThreshold: 1
      action: fail-pod
`, hang), "")
	s := wait(t, r, name)
	if s.Phase != pod.PodFailed {
		t.Errorf("pod %s: %s, want Failed", name, s.Phase)
	}
	if p := appOf(t, s, "app").Probe; p == nil || p.LastResult != record.ProbeTimeout || p.Acted != record.FailPod {
		t.Errorf("probe: %+v", p)
	}
	wantGone(t, "sleep", hang)
}

// hangDuration is a number of seconds, near 30, of this test process's own,
// which tells its probes' sleep from any other.
func hangDuration() string { return fmt.Sprintf("29.%d", os.Getpid()%1000) }

// wantGone fails t if a process runs argv.
func wantGone(t *testing.T, argv ...string) {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	cmdline := strings.Join(argv, "\x00") + "\x00"
	for _, path := range procs {
		if data, err := os.ReadFile(path); err == nil && string(data) == cmdline {
			t.Errorf("%q still runs: %s", argv, path)
		}
	}
}

func TestProbeWaitsOutBackoff(t *testing.T) {
	r := newRunner(t)
	port := freePort(t)
	name := run(t, r, fmt.Sprintf(`
name: probe-backoff
restartPolicy: Always
restartBackoff: {initial: 3s}
apps:
  - name: app
    exec: ["/usr/bin/python3", "-c", "import socket, sys, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', %d)); s.listen(); time.sleep(1.5); sys.exit(1)"]
    probe:
      tcp: {port: %d}
      periodSeconds: 1
      failureThreshold: 2
      action: fail-pod
`, port, port), "")
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Phase != pod.PodRunning || s.Apps[0].Restarts >= 2 })
	if s.Phase != pod.PodRunning {
		t.Errorf("pod %s: %s; the probe failed it while its app waited out a back-off", name, s.Phase)
	}
}

// TestProbeRestartBacksOff checks that restarts an app's probe causes back
// off as crashes do, as the kubelet's: with a probe that always fails, the
// first restart comes at once, and the delays before the later runs start
// at the initial delay and double up to the maximum instead of the app
// restarting at once, again and again. Each run lasts the probe's initial
// delay, a second, so that the test sees every run running.
func TestProbeRestartBacksOff(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: probe-loop
restartBackoff: {initial: 500ms, max: 2s}
apps:
  - name: app
    exec: ["/bin/sleep", "600"]
    probe:
      exec: ["/bin/false"]
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
      action: restart
`, "")
	delays := map[int]time.Duration{}
	poll(t, r, name, func(s pod.PodStatus) bool {
		// While the app runs, its back-off is the delay before this
		// run, the restarts'th.
		a := s.Apps[0]
		if a.Restarts > 0 && a.State == record.AppRunning {
			delays[a.Restarts] = a.Backoff
		}
		return a.Restarts >= 4
	})
	want := map[int]time.Duration{1: 0, 2: 500 * time.Millisecond, 3: time.Second, 4: 2 * time.Second}
	for n, d := range want {
		if got, seen := delays[n]; seen && got != d {
			t.Errorf("back-off after restart %d: %v, want %v (all seen: %v)", n, got, d, delays)
		}
	}
	t.Logf("back-offs seen: %v", delays)
	if len(delays) < len(want) {
		t.Errorf("saw the back-off of %d restarts only: %v", len(delays), delays)
	}
}

// A probe that acts once its pod is stopping does not restart the app: a
// restart then would cancel the stop's jobs (a pod rm failed so, "job for
// the slice: canceled", with a probe that restarted its app every second).
func TestProbeRestartNotDuringStop(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: probe-stopping
apps:
  - name: app
    exec: ["/bin/sleep", "600"]
`, "")
	waitStarted(t, r, name, "app")
	before := appOf(t, statusNow(t, r, name), "app").StartedAt
	if err := record.MarkStopping(r.StateDir, name); err != nil {
		t.Fatal(err)
	}
	open := func(context.Context) (*manager.Conn, error) { return systemdtest.Dial(t), nil }
	if err := act(context.Background(), r.StateDir, name, "app", record.RestartApp, open); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if a := appOf(t, statusNow(t, r, name), "app"); a.State != record.AppRunning || !a.StartedAt.Equal(before) || a.Restarts != 0 {
		t.Errorf("app after a probe's restart of a stopping pod: %s, started %v (before %v), %d restarts; want the same run", a.State, a.StartedAt, before, a.Restarts)
	}
}

// statusNow returns pod name's status as it is now.
func statusNow(t *testing.T, r *Runner, name string) pod.PodStatus {
	t.Helper()
	s, err := r.Status(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestProbeExecEnvironment: an exec probe runs with its app's environment
// (its env, PATH, HOSTNAME), not the probe service's: the app becomes
// ready only if the probe sees $A and no $INVOCATION_ID or $MANAGERPID.
func TestProbeExecEnvironment(t *testing.T) {
	r := newRunner(t)
	check := `test "$A" = 1 && test -n "$HOSTNAME" && test -z "$INVOCATION_ID$MANAGERPID"`
	manifest, err := json.Marshal(map[string]any{"name": "probe-env", "apps": []map[string]any{{
		"name": "a", "exec": []string{"/bin/sleep", "600"}, "env": map[string]string{"A": "1"},
		"readinessProbe": map[string]any{"exec": []string{"/bin/sh", "-c", check}, "periodSeconds": 1},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	name := run(t, r, string(manifest), "")
	poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Ready })
}

// A grpc liveness probe restarts its app once the app's gRPC health
// service stops answering SERVING for the probe's service, and a grpc
// readiness probe makes the app ready: each asks for its own service.
func TestGRPCProbeRestart(t *testing.T) {
	var checks atomic.Int32
	port := grpcHealthServer(t, func(service string) int {
		switch service {
		case "api":
			if checks.Add(1) <= 2 {
				return 1 // SERVING
			}
			return 2 // NOT_SERVING
		case "ready":
			return 1
		}
		return -1
	})
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: grpc-probe
restartBackoff: {initial: 200ms, max: 1s}
apps:
  - name: api
    exec: [/bin/sleep, "600"]
    probe: {grpc: {port: %[1]d, service: api}, periodSeconds: 1, failureThreshold: 1}
    readinessProbe: {grpc: {port: %[1]d, service: ready}, periodSeconds: 1}
`, port), "")
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Ready })
	if s.Apps[0].Readiness == nil || s.Apps[0].Readiness.LastResult != record.ProbeSuccess {
		t.Errorf("readiness probe of a ready app: %+v", s.Apps[0].Readiness)
	}
	s = poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts >= 1 })
	if s.Phase != pod.PodRunning {
		t.Errorf("pod %s after a grpc probe's restart: %s", name, s.Phase)
	}
	if p := s.Apps[0].Probe; p == nil || p.LastResult != record.ProbeFailure || p.Message != `service unhealthy (responded with "NOT_SERVING")` {
		t.Errorf("liveness probe after the restart: %+v", p)
	}
}

// A liveness probe with a stopTimeout bounds the stop of the run it
// restarts by it, as the kubelet kills a container with its probe's
// terminationGracePeriodSeconds, not the Pod's: the app's first run
// outlives the stop's SIGTERM (it says so) and its own stopTimeout is ten
// minutes, so only the probe's SIGKILL, a second after it acted, lets it
// restart within the minute poll waits. The probe passes on the later
// runs, so the run whose end poll sees is the first.
func TestProbeStopTimeout(t *testing.T) {
	r := newRunner(t)
	ran := filepath.Join(t.TempDir(), "ran")
	name := run(t, r, fmt.Sprintf(`
name: probe-grace
restartBackoff: {initial: 200ms, max: 1s}
apps:
  - name: api
    exec: [/bin/sh, -c, '[ -e %[1]s ] && touch %[1]s.2 && exec sleep 600; touch %[1]s; trap "echo TERM" TERM; while :; do sleep 0.1; done']
    stopTimeout: 10min
    probe: {exec: [/bin/test, -e, %[1]s.2], initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 1, stopTimeout: 1s}
`, ran), "")
	s := poll(t, r, name, func(s pod.PodStatus) bool { return s.Apps[0].Restarts >= 1 })
	if a := s.Apps[0]; a.Signal != "KILL" {
		t.Errorf("the restarted run ended with signal %q; want KILL", a.Signal)
	}
	// The first run's log is the current one or, once the next run has
	// begun its own, the one kept before it.
	var data []byte
	logs, _ := filepath.Glob(strings.TrimSuffix(pod.LogFile(r.StateDir, name, "api"), ".log") + "*.log")
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		data = append(data, b...)
	}
	if !strings.Contains(string(data), "TERM\n") {
		t.Errorf("the first run printed %q; want it to have had the stop's SIGTERM first", data)
	}
}
