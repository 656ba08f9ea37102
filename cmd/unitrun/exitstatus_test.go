package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestExitStatusesInReadme checks that README.md's table of the exit
// statuses of run, start and wait is exitStatuses word for word, and that
// their --help shows it (the man pages are made from the same help).
func TestExitStatusesInReadme(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "\n"+exitStatuses+"\n") {
		t.Errorf("README.md lacks the table of exitStatuses, word for word:\n%s", exitStatuses)
	}
	root := newRoot()
	for _, name := range []string{"run", "start", "wait"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(c.Long, "\n\nExit statuses:\n\n"+exitStatuses) {
			t.Errorf("unitrun %s --help does not end with the exit statuses:\n%s", name, c.Long)
		}
	}
}

// summaryLine returns the summary line ("unitrun: U finished: ...") of
// stderr, without "unitrun: U " and from ", ran" on, or "".
func summaryLine(errs string) string {
	for _, l := range strings.Split(errs, "\n") {
		if _, s, ok := strings.Cut(l, ".service finished: "); ok && strings.HasPrefix(l, "unitrun: ") {
			s, _, _ = strings.Cut(s, ", ran ")
			return s
		}
	}
	return ""
}

// runJSON runs "unitrun run --json" with args and returns its result
// object and exit status.
func runJSON(t *testing.T, args ...string) (result, int) {
	t.Helper()
	out, errs, code := unitrun(t, append([]string{"run", "--json"}, args...)...)
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("run --json %q: stdout %q: %v (stderr %q)", args, out, err, errs)
	}
	return r, code
}

// waitGated writes the service name, whose command (gated) exits with
// status once let go, with the line setting in its [Service] section,
// starts it, waits for its run with "unitrun wait", lets the command go,
// and returns wait's exit status and stderr.
func waitGated(t *testing.T, name string, status int, setting string) (int, string) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "go")
	writeService(t, name, fmt.Sprintf("[Service]\nExecStart=/bin/sh -c '%s' sh %s %d\n%s\n", gated, gate, status, setting))
	startService(t, name)
	_, end := waitCLI(t, "started\n", name)
	os.WriteFile(gate, nil, 0o644)
	code, _, errs := end()
	return code, errs
}

// TestRunFailedThoughExitedZero: a run that systemd counts as failed
// although its command exited 0 (it answered a timeout's SIGTERM by
// exiting 0; an ExecStopPost= failed) never exits 0, which a shell's &&
// would take for a success: 125 where its start job failed (a start
// timeout), 1 where it did not, as systemd-run --wait exits; the summary
// line says systemd's result once, and --json's exit_code stays the
// command's own 0. --retry, which retries such a run, ends with the same
// status. Before, each exited 0.
func TestRunFailedThoughExitedZero(t *testing.T) {
	trapped := []string{"--", "sh", "-c", `trap "exit 0" TERM; sleep 30 & wait`}
	stopPost := []string{"-p", `ExecStopPost=/bin/sh -c "exit 3"`, "--", "true"}
	for _, c := range []struct {
		name      string
		args      []string
		code      int
		jobResult string
		result    string
		summary   string
	}{
		{"notify start timeout", append([]string{"--service-type", "notify", "-p", "TimeoutStartSec=500ms"}, trapped...), exitFailed, "failed", "timeout",
			"exit status 0, but result timeout: systemd counts the run failed, start job failed"},
		{"RuntimeMaxSec", append([]string{"-p", "RuntimeMaxSec=500ms"}, trapped...), 1, "done", "timeout",
			"exit status 0, but result timeout: systemd counts the run failed"},
		{"ExecStopPost failed", stopPost, 1, "done", "exit-code",
			"exit status 0, but result exit-code: systemd counts the run failed"},
	} {
		_, errs, code := unitrun(t, append([]string{"run"}, c.args...)...)
		if code != c.code || summaryLine(errs) != c.summary {
			t.Errorf("%s: exit %d, summary %q; want %d and %q (stderr %q)", c.name, code, summaryLine(errs), c.code, c.summary, errs)
		}
		r, code := runJSON(t, c.args...)
		if code != c.code || r.JobResult != c.jobResult || r.Result != c.result || r.ExitCode == nil || *r.ExitCode != 0 || r.Error != "" {
			t.Errorf("%s --json: exit %d, %+v; want %d, job_result %s, result %s, exit_code 0", c.name, code, r, c.code, c.jobResult, c.result)
		}
	}
	if _, errs, code := systemdRun(t, append([]string{"--wait", "--pipe", "-q"}, stopPost...)...); code != 1 {
		t.Errorf("systemd-run with a failing ExecStopPost=: exit %d (stderr %q); this test takes its 1 for the reference", code, errs)
	}
	r, code := runJSON(t, append([]string{"--retry", "1", "--retry-delay", "10ms"}, stopPost...)...)
	if code != 1 || r.Attempts != 2 || r.Result != "exit-code" {
		t.Errorf("--retry 1 with a failing ExecStopPost=: exit %d, %+v; want 1 after 2 attempts", code, r)
	}
}

// TestStartFailedThoughExitedZero: start of a oneshot whose start times
// out and whose command answers SIGTERM by exiting 0 exits 125 (its start
// job failed), as systemctl start fails; wait on a service whose
// ExecStopPost= fails after its command exited 0 exits 1. Before, both
// exited 0.
func TestStartFailedThoughExitedZero(t *testing.T) {
	const timedOut, stopPost = "unitrun-test-startzero.service", "unitrun-test-waitzero.service"
	writeService(t, timedOut, "[Service]\nType=oneshot\nTimeoutStartSec=500ms\nExecStart=/bin/sh -c 'trap \"exit 0\" TERM; sleep 30 & wait'\n")
	_, errs, code := unitrun(t, "start", timedOut)
	if want := "exit status 0, but result timeout: systemd counts the run failed, start job failed"; code != exitFailed || summaryLine(errs) != want {
		t.Errorf("start: exit %d, summary %q; want 125 and %q (stderr %q)", code, summaryLine(errs), want, errs)
	}
	if code, errs := waitGated(t, stopPost, 0, "ExecStopPost=/bin/sh -c 'exit 3'"); code != 1 || summaryLine(errs) != "exit status 0, but result exit-code: systemd counts the run failed" {
		t.Errorf("wait: exit %d, stderr %q; want 1 and the result that failed it", code, errs)
	}
}

// TestRunSuccessExitStatus: an exit status (or a signal) that the unit's
// SuccessExitStatus= lists is a success, as systemd counts it and
// systemd-run --wait exits 0 for it: run exits 0, its summary and --json
// tell the status, and --retry does not run it again; wait of such a
// service exits 0 too. A status it does not list is the command's own.
// Before, run exited 7 and --retry ran it 3 times.
func TestRunSuccessExitStatus(t *testing.T) {
	listed := []string{"-p", "SuccessExitStatus=7 SIGUSR1", "--", "sh", "-c", "exit 7"}
	if _, errs, code := systemdRun(t, append([]string{"--wait", "--pipe", "-q"}, listed...)...); code != 0 {
		t.Errorf("systemd-run: exit %d (stderr %q); this test takes its 0 for the reference", code, errs)
	}
	_, errs, code := unitrun(t, append([]string{"run"}, listed...)...)
	if want := "exit status 7, result success (the unit's SuccessExitStatus= lists it)"; code != 0 || summaryLine(errs) != want {
		t.Errorf("exit %d, summary %q; want 0 and %q (stderr %q)", code, summaryLine(errs), want, errs)
	}
	counter := filepath.Join(t.TempDir(), "count")
	r, code := runJSON(t, "--retry", "2", "--retry-delay", "10ms", "-p", "SuccessExitStatus=7", "--", "sh", "-c", `echo x >> "$1"; exit 7`, "sh", counter)
	if code != 0 || r.Result != "success" || r.ExitCode == nil || *r.ExitCode != 7 || r.Attempts != 1 || r.Error != "" {
		t.Errorf("--retry 2: exit %d, %+v; want 0, result success, exit_code 7, one attempt", code, r)
	}
	if b, _ := os.ReadFile(counter); string(b) != "x\n" {
		t.Errorf("--retry 2: the command ran %d times, want once", strings.Count(string(b), "x"))
	}
	if _, errs, code := unitrun(t, "run", "-p", "SuccessExitStatus=7 SIGUSR1", "--", "sh", "-c", "kill -USR1 $$"); code != 0 || summaryLine(errs) != "signal: SIGUSR1, result success (the unit's SuccessExitStatus= lists it)" {
		t.Errorf("a listed signal: exit %d, stderr %q; want 0", code, errs)
	}
	if _, errs, code := unitrun(t, "run", "-p", "SuccessExitStatus=7", "--", "sh", "-c", "exit 8"); code != 8 || summaryLine(errs) != "exit status 8, result exit-code" {
		t.Errorf("exit 8 beside SuccessExitStatus=7: exit %d, stderr %q; want 8", code, errs)
	}
	if code, errs := waitGated(t, "unitrun-test-waitlisted.service", 7, "SuccessExitStatus=7"); code != 0 || summaryLine(errs) != "exit status 7, result success (the unit's SuccessExitStatus= lists it)" {
		t.Errorf("wait: exit %d, stderr %q; want 0", code, errs)
	}
}

// TestStartLimitHitResult: a start that systemd's start limit refuses
// tells systemd's result, start-limit-hit, in --json's result and in the
// message, as systemctl start does. The unit is kept loaded (a
// reference), as between the quick starts of a unit that something else
// keeps: a unit collected between its runs forgets its start count.
// Before, result was left out and the message named no reason.
func TestStartLimitHitResult(t *testing.T) {
	ctx := context.Background()
	const name = "unitrun-test-limithit.service"
	writeService(t, name, "[Unit]\nStartLimitIntervalSec=1h\nStartLimitBurst=1\n[Service]\nType=oneshot\nExecStart=/bin/true\n")
	conn := systemdtest.Conn(t)
	if err := conn.Ref(ctx, name); err != nil {
		t.Fatal(err)
	}
	defer conn.Unref(ctx, name)
	if _, errs, code := unitrun(t, "start", "-q", name); code != 0 {
		t.Fatalf("first start: exit %d, stderr %q", code, errs)
	}
	out, errs, code := unitrun(t, "start", "--json", name)
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFailed || r.JobResult != "failed" || r.Result != "start-limit-hit" || r.ExitCode != nil || !strings.Contains(r.Error, "start limit") {
		t.Errorf("start --json: exit %d, stdout %q (%v, stderr %q); want 125, job_result failed, result start-limit-hit, exit_code null", code, out, err, errs)
	}
	_, errs, code = unitrun(t, "start", name)
	if code != exitFailed || !strings.Contains(errs, "result start-limit-hit") {
		t.Errorf("start: exit %d, stderr %q; want 125 and the result", code, errs)
	}
}
