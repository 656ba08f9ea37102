package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// progressPod is a pod of two apps: an init app that exits 0, then an app
// that exits 3, which ends the pod.
const progressPod = `
name: %s
apps:
  - name: setup
    init: true
    exec: ["/bin/sh", "-c", "echo ready"]
  - name: api
    exec: ["/bin/sh", "-c", "exit 3"]
`

// Piped, "pod run" prints one timestamped line per change on stderr, in
// the order the apps went through their states.
func TestPodRunProgressPiped(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "progress")
	out, errs, code := podCLI(t, dir, "run", manifestFile(t, strings.ReplaceAll(progressPod, "%s", "progress")))
	if code != 3 || out != "setup | ready\n" {
		t.Fatalf("pod run: exit %d, stdout %q, stderr %q; want 3 and the init app's line", code, out, errs)
	}
	if n := len(stampRE.FindAllString(errs, -1)); n != 5 {
		t.Errorf("stderr %q: %d timestamped lines, want 5", errs, n)
	}
	want := "app setup running\napp setup exited exit 0\napp api running\napp api failed exit 3\npod progress Failed exit 3\n"
	if got := stampRE.ReplaceAllString(errs, ""); got != want {
		t.Errorf("progress:\n%s\nwant:\n%s", got, want)
	}

	// -q shows no progress; --json prints the events on stdout, a JSON
	// object a line, and the apps' output, with the progress, on stderr.
	rmPod(t, dir, "progress-q")
	out, errs, code = podCLI(t, dir, "run", "-q", manifestFile(t, strings.ReplaceAll(progressPod, "%s", "progress-q")))
	if code != 3 || out != "setup | ready\n" || errs != "" {
		t.Errorf("pod run -q: exit %d, stdout %q, stderr %q; want no progress", code, out, errs)
	}
	rmPod(t, dir, "progress-json")
	out, errs, code = podCLI(t, dir, "run", "--json", manifestFile(t, strings.ReplaceAll(progressPod, "%s", "progress-json")))
	if got, want := eventLines(t, out), "app-started setup 1 -\napp-exited setup 1 0\napp-started api 1 -\napp-failed api 1 3\npod-ended Failed - 3\n"; code != 3 || got != want {
		t.Errorf("pod run --json: exit %d, events:\n%s\nwant 3 and:\n%s", code, got, want)
	}
	if !strings.Contains(errs, "setup | ready\n") || !strings.Contains(errs, " app setup running\n") {
		t.Errorf("pod run --json: stderr %q lacks the output or the progress", errs)
	}
}

// An app stopped while it waits to restart gets its final state after
// "restarting", before the pod's line: "pod run" printed none, its last
// line of the app "restarting exit 3" (the pod's stop, from another
// process, comes once the second such line is out: the first restart
// comes at once, the second after the back-off of an hour).
func TestPodRunProgressStoppedDuringBackoff(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "backoff-progress")
	progress := filepath.Join(t.TempDir(), "progress")
	f, err := os.Create(progress)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(systemdtest.Binary(t), "pod", "run", "--state-dir", dir, manifestFile(t, `
name: backoff-progress
restartBackoff: {initial: 1h, max: 1h}
apps:
  - name: crash
    restartPolicy: OnFailure
    exec: ["/bin/sh", "-c", "exit 3"]
`))
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for range 600 {
		if b, _ := os.ReadFile(progress); strings.Count(string(b), "app crash restarting") == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, errs, code := podCLI(t, dir, "stop", "backoff-progress"); code != 3 {
		t.Errorf("pod stop: exit %d, want the pod's 3: %s", code, errs)
	}
	cmd.Wait()
	b, _ := os.ReadFile(progress)
	want := "app crash running\napp crash restarting exit 3\napp crash running\napp crash restarting exit 3\napp crash failed exit 3\npod backoff-progress Failed exit 3\n"
	if got := stampRE.ReplaceAllString(string(b), ""); cmd.ProcessState.ExitCode() != 3 || got != want {
		t.Errorf("pod run: exit %d, progress:\n%s\nwant 3 and:\n%s", cmd.ProcessState.ExitCode(), got, want)
	}
}

// On a terminal, "pod run" redraws a block with a line per app, and the
// last block shows the pod's final state.
func TestPodRunProgressTerminal(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "progress-tty")
	out, code := unitrunTTY(t, nil, "pod", "run", "--state-dir", dir, manifestFile(t, strings.ReplaceAll(progressPod, "%s", "progress-tty")))
	if code != 3 {
		t.Fatalf("pod run: exit %d:\n%q", code, out)
	}
	if !strings.Contains(out, "\x1b[J") || !strings.Contains(out, "setup | ready\n") {
		t.Errorf("no block redrawn in place, or no output:\n%q", out)
	}
	plain := escapes.ReplaceAllString(out, "")
	last := plain[strings.LastIndex(plain, "pod progress-tty "):]
	lines := strings.Split(strings.TrimSuffix(last, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "pod progress-tty Failed, exit code 3, ") ||
		!strings.HasPrefix(lines[1], "APP    STATE   EXIT  RESTARTS  ELAPSED") ||
		!strings.HasPrefix(lines[2], "setup  exited  0     0         ") ||
		!strings.HasPrefix(lines[3], "api    failed  3     0         ") {
		t.Errorf("last block:\n%s", last)
	}
	if !strings.Contains(out, red+"failed"+reset) || !strings.Contains(out, green+"exited"+reset) {
		t.Errorf("states not colored:\n%q", out)
	}
}

// "op call" tells that the job is queued and started, then streams its
// output and ends with the summary; on a terminal, a status line with the
// elapsed time takes the place of the first two and is gone at the end.
func TestOpCallProgress(t *testing.T) {
	sock := startDaemon(t)
	cmd := exec.Command(systemdtest.Binary(t), "op", "call", "--socket", sock, "sh", "echo one; echo two; exit 3")
	var both bytes.Buffer
	cmd.Stdout, cmd.Stderr = &both, &both
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("op call: %v, want exit 3:\n%s", err, both.String())
	}
	if n := len(stampRE.FindAllString(both.String(), -1)); n != 2 {
		t.Errorf("%q: %d timestamped lines, want 2", both.String(), n)
	}
	got := stampRE.ReplaceAllString(both.String(), "")
	id, _, _ := strings.Cut(strings.TrimPrefix(got, "job "), " ")
	want := "job " + id + " (op sh): queued\njob " + id + " (op sh): started\none\ntwo\njob " + id + " (op sh): failed: exit status 3\n"
	if got != want {
		t.Errorf("op call:\n%s\nwant:\n%s", got, want)
	}
	out, errs, code := unitrun(t, "op", "call", "--socket", sock, "-q", "sh", "echo quiet")
	if code != 0 || out != "quiet\n" || errs != "" {
		t.Errorf("op call -q: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	out, code = unitrunTTY(t, nil, "op", "call", "--socket", sock, "sh", "echo one; echo two; exit 3")
	if code != 3 {
		t.Fatalf("op call on a terminal: exit %d:\n%q", code, out)
	}
	if strings.Contains(out, "queued\n") || !strings.Contains(out, "(op sh): "+yellow+"queued"+reset+" for 0s\n") || !strings.Contains(out, "(op sh): "+green+"running"+reset+" for ") {
		t.Errorf("op call on a terminal shows no status line:\n%q", out)
	}
	plain := escapes.ReplaceAllString(out, "")
	if !strings.Contains(plain, "one\n") || !strings.Contains(plain, "two\n") {
		t.Errorf("op call on a terminal lost the output:\n%q", out)
	}
	id, _, _ = strings.Cut(strings.TrimPrefix(plain, "job "), " ")
	if !strings.HasSuffix(out, "\x1b[1F\x1b[Jjob "+id+" (op sh): failed: exit status 3\n") {
		t.Errorf("op call on a terminal: the status line is not cleared before the summary:\n%q", out)
	}

	// A terminal that cannot move its cursor gets the lines of a pipe.
	out, code = unitrunTTY(t, []string{"TERM=dumb"}, "op", "call", "--socket", sock, "sh", "echo one")
	got = stampRE.ReplaceAllString(out, "")
	id, _, _ = strings.Cut(strings.TrimPrefix(got, "job "), " ")
	if want := "job " + id + " (op sh): queued\njob " + id + " (op sh): started\none\njob " + id + " (op sh): succeeded: exit status 0\n"; code != 0 || got != want {
		t.Errorf("op call on a dumb terminal: exit %d:\n%q", code, out)
	}

	out, code = unitrunTTY(t, nil, "op", "jobs", "--socket", sock)
	if code != 0 || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, red+string(api.StateFailed)+reset) {
		t.Errorf("op jobs on a terminal:\n%q", out)
	}
}

// probedPod is a pod whose app's liveness probe fails at every check and,
// at its second failure, ends the pod: the app is stopped (signal TERM).
const probedPod = `
name: %s
apps:
  - name: api
    exec: ["/bin/sleep", "300"]
    probe:
      exec: ["/bin/false"]
      periodSeconds: 1
      failureThreshold: 2
      action: fail-pod
`

// The failures of a probe that ends the pod come before the end of the
// run they were checks of, in the progress of "pod run" and in its
// events: the failure that reached the threshold and the app's end are
// most often seen in the same read of the records.
func TestPodRunProgressOfAProbeThatFailsThePod(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "probe-progress")
	_, errs, code := podCLI(t, dir, "run", manifestFile(t, strings.ReplaceAll(probedPod, "%s", "probe-progress")))
	// An exec probe's message is what its check printed: /bin/false
	// prints nothing.
	want := "app api running\napp api liveness probe failed (1 in a row): \napp api liveness probe failed (2 in a row): \napp api failed signal TERM\npod probe-progress Failed exit 143\n"
	if got := stampRE.ReplaceAllString(errs, ""); code != 143 || got != want {
		t.Errorf("pod run: exit %d, progress:\n%s\nwant 143 and:\n%s", code, got, want)
	}
	rmPod(t, dir, "probe-json")
	out, _, code := podCLI(t, dir, "run", "--json", manifestFile(t, strings.ReplaceAll(probedPod, "%s", "probe-json")))
	if got, want := eventLines(t, out), "app-started api 1 -\nprobe-failed api 1 -\nprobe-failed api 1 -\napp-failed api 1 143\npod-ended Failed - 143\n"; code != 143 || got != want {
		t.Errorf("pod run --json: exit %d, events:\n%s\nwant 143 and:\n%s", code, got, want)
	}
}
