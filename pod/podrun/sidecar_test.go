package podrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// TestSidecar runs an init app, a sidecar whose first run fails with 7 and
// an app that succeeds after a second: the sidecar starts after the init
// app and before the app, is restarted after its failure, is stopped only
// after the app has ended, and the pod succeeds, its exit code the app's.
func TestSidecar(t *testing.T) {
	dir := t.TempDir()
	events, runs := filepath.Join(dir, "events"), filepath.Join(dir, "runs")
	r := newRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: sidecar
restartBackoff: {initial: 200ms, max: 1s}
apps:
  - name: setup
    init: true
    exec: ["/bin/sh", "-c", "echo setup >> %[1]s"]
  - name: proxy
    sidecar: true
    exec: ["/bin/sh", "-c", "echo proxy >> %[1]s; echo >> %[2]s; test $(wc -l < %[2]s) -gt 1 || exit 7; trap 'echo proxy-stop >> %[1]s; exit 0' TERM; sleep 600 & wait"]
  - name: app
    exec: ["/bin/sh", "-c", "sleep 0.5; echo app >> %[1]s; sleep 1; echo app-exit >> %[1]s"]
`, events, runs), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	wantApp(t, s, "app", record.AppExited, 0)
	// The pod's end stops the sidecar after it has been recorded.
	s = poll(t, r, name, func(s pod.PodStatus) bool { return appOf(t, s, "proxy").State == record.AppExited })
	if p := appOf(t, s, "proxy"); p.Restarts < 1 {
		t.Errorf("sidecar: %+v, want a restart after its failure", p)
	}
	var got []string
	for range 100 {
		data, err := os.ReadFile(events)
		if err != nil {
			t.Fatal(err)
		}
		if got = strings.Fields(string(data)); len(got) > 0 && got[len(got)-1] == "proxy-stop" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The sidecar's second run may start before or after the app.
	joined := strings.Join(got, " ")
	if !strings.HasPrefix(joined, "setup proxy ") || !strings.HasSuffix(joined, " app-exit proxy-stop") || strings.Count(joined, "proxy ") != 2 || len(got) != 6 {
		t.Errorf("events %q, want setup, proxy, then proxy again and app, then app-exit and proxy-stop", got)
	}
}

// TestSidecarStop stops a pod whose sidecar and app run: the app stops
// first, then the sidecar, and the pod's outcome is the app's.
func TestSidecarStop(t *testing.T) { sidecarStop(t, "sidecar-stop", "") }

// TestIsolatedSidecar runs a sidecar with a readiness probe in an isolated
// pod: the probes find the command's start in the pod's PID namespace, the
// pod becomes ready, and at a stop (which powers the pod's systemd off)
// the app stops before the sidecar.
func TestIsolatedSidecar(t *testing.T) {
	sidecarStop(t, "isolated-sidecar", `
isolation: namespaces
    readinessProbe:
      exec: ["/bin/true"]
      periodSeconds: 1`)
}

// sidecarStop runs pod name, an app and a sidecar, until it is ready and
// stops it; extra's first line is added to the pod, the rest to the
// sidecar.
func sidecarStop(t *testing.T, name, extra string) {
	r := newRunner(t)
	events := filepath.Join(r.StateDir, "events")
	podLines, sidecarLines, _ := strings.Cut(strings.TrimPrefix(extra, "\n"), "\n")
	name = run(t, r, fmt.Sprintf(`
name: %[2]s
%[3]s
apps:
  - name: app
    exec: ["/bin/sh", "-c", "trap 'sleep 0.5; echo app-stop >> %[1]s; exit 3' TERM; touch %[1]s.app; sleep 600 & wait"]
  - name: proxy
    sidecar: true
    exec: ["/bin/sh", "-c", "trap 'echo proxy-stop >> %[1]s; exit 0' TERM; sleep 600 & wait"]
%[4]s
`, events, name, podLines, sidecarLines), "")
	if podLines != "" {
		defer containerLog(t, r, name)
	}
	poll(t, r, name, func(s pod.PodStatus) bool { return s.Ready })
	// The app's trap is set: a stop before it would end the shell at
	// once, by SIGTERM, a success.
	waitFile(t, events+".app")
	s, err := r.Stop(t.Context(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPod(t, s, pod.PodFailed, 3)
	wantApp(t, s, "proxy", record.AppExited, 0)
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(data)), "app-stop proxy-stop"; strings.Join(got, " ") != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// Sidecars start in order, each once the one before it has started its
// command and passed its startup probe, and the app after them all, as the
// kubelet starts them: while the first sidecar's startup probe fails,
// nothing after it has run.
func TestSidecarsStartInOrder(t *testing.T) {
	dir := t.TempDir()
	events, start := filepath.Join(dir, "events"), filepath.Join(dir, "go")
	r := newRunner(t)
	name := create(t, r, fmt.Sprintf(`
name: sidecar-order
apps:
  - name: first
    sidecar: true
    exec: ["sh", "-c", "echo first >> %[1]s; exec sleep 600"]
    startupProbe: {exec: ["test", "-e", "%[2]s"], periodSeconds: 1, failureThreshold: 600}
  - name: second
    sidecar: true
    exec: ["sh", "-c", "echo second >> %[1]s; exec sleep 600"]
  - name: main
    exec: ["sh", "-c", "echo main >> %[1]s"]
`, events, start))
	// The start is done once every app has started: here, once the
	// first sidecar's startup probe has passed.
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background(), name, "") }()
	poll(t, r, name, func(s pod.PodStatus) bool {
		p := appOf(t, s, "first").Startup
		return p != nil && p.ConsecutiveFailures >= 2
	})
	if data, err := os.ReadFile(events); err != nil || string(data) != "first\n" {
		t.Errorf("events while the first sidecar's startup probe fails: %q, %v; want only first", data, err)
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	if data, err := os.ReadFile(events); err != nil || string(data) != "first\nsecond\nmain\n" {
		t.Errorf("events %q, %v; want first, second, main", data, err)
	}
}
