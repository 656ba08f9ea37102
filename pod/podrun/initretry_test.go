package podrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// Retried init apps (restartPolicy OnFailure) run again, with the pod's
// back-off, until they succeed, each counting its restarts, and the apps
// after them start only then, as the kubelet retries init containers:
// under systemd 252 their units would fail their dependents' start jobs
// at the first failure.
func TestPodInitAppsRetried(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	name := run(t, r, fmt.Sprintf(`
name: init-retried
restartBackoff: {initial: 100ms}
apps:
  - name: first
    init: true
    restartPolicy: OnFailure
    exec: ["/bin/sh", "-c", "echo x >> %[1]s/first; test $(wc -l < %[1]s/first) -ge 3"]
  - name: second
    init: true
    restartPolicy: OnFailure
    exec: ["/bin/sh", "-c", "echo y >> %[1]s/second; test $(wc -l < %[1]s/second) -ge 2"]
  - name: main
    exec: ["/bin/cat", "%[1]s/first", "%[1]s/second"]
`, dir), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	for app, restarts := range map[string]int{"first": 2, "second": 1, "main": 0} {
		wantApp(t, s, app, record.AppExited, 0)
		if a := appOf(t, s, app); a.Restarts != restarts {
			t.Errorf("app %s restarted %d times, want %d", app, a.Restarts, restarts)
		}
	}
	if data, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "main")); string(data) != "x\nx\nx\ny\ny\n" {
		t.Errorf("main ran before the init apps succeeded: its output is %q", data)
	}
}

// A pod stopped while its retried init app fails again and again ends
// Failed with that app's last exit (its reaper ends a restart that the
// stop caught between two runs), and the app after it never ran.
func TestPodInitAppRetriedStopped(t *testing.T) {
	r := newRunner(t)
	name := create(t, r, `
name: init-retried-stop
restartBackoff: {initial: 100ms}
apps:
  - name: setup
    init: true
    restartPolicy: OnFailure
    exec: ["/bin/sh", "-c", "exit 7"]
  - name: main
    exec: ["/bin/true"]
`)
	// The start returns once the apps after setup have started, which
	// they never do before it succeeds: the stop below ends it.
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background(), name, "") }()
	for {
		s, err := r.Status(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if a := appOf(t, s, "setup"); a.Restarts >= 2 {
			break
		}
		if s.Phase == pod.PodFailed || s.Phase == pod.PodSucceeded {
			t.Fatalf("pod %s ended %s while its init app retries", name, s.Phase)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.Stop(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ended *EndedError
	if err := <-started; err != nil && !errors.As(err, &ended) {
		t.Errorf("start of a pod stopped while it started: %v", err)
	}
	// The stop ends both apps at about the same moment, and the pod's
	// exit code is the first of their exits recorded: setup's last run's
	// or main's, the stop's SIGTERM.
	if s.Phase != pod.PodFailed || s.ExitCode == nil || *s.ExitCode != 7 && *s.ExitCode != 128+15 {
		t.Errorf("pod %s: %s, exit code %s; want Failed, 7 or 143", s.Name, s.Phase, fmtCode(s.ExitCode))
	}
	wantApp(t, s, "setup", record.AppFailed, 7)
	// Stopped in its await hook, main's first run ended before its
	// command ran, by the stop's SIGTERM.
	if a := appOf(t, s, "main"); a.State != record.AppFailed || a.ExitCode == nil || *a.ExitCode != 128+15 || a.Signal != "TERM" ||
		a.Message != "ended before its command ran" || !a.StartedAt.IsZero() {
		t.Errorf("main after an init app that never succeeded: %+v, want failed before its command ran, 143, TERM", a)
	}
}
