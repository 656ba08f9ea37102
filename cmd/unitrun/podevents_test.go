package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
)

// eventLines reads out, JSON objects a line as pod run --json and pod
// events --json print them, into one line per event: its type, its app
// (the phase for the pod's end), its run and its exit code ("-" for
// none). Each object must parse, with a time.
func eventLines(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	for line := range strings.Lines(out) {
		var e pod.PodEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Time.IsZero() {
			t.Errorf("event %q: %v, or no time", line, err)
			continue
		}
		what, run, code := e.App, "-", "-"
		if e.Type == pod.EventPodEnded {
			what = string(e.Phase)
		}
		if e.Run > 0 {
			run = fmt.Sprint(e.Run)
		}
		if e.ExitCode != nil {
			code = fmt.Sprint(*e.ExitCode)
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", e.Type, what, run, code)
	}
	return b.String()
}

// A pod whose app fails, restarts after its back-off and then succeeds:
// pod run --json, and pod events --json that follows the same pod from
// its first run, stream the same exact sequence of events, a JSON
// object a line: the first run started, restarting with its exit 3, the
// second run started, exited 0, the pod Succeeded. The second run waits
// until both have told of it, so that neither can miss a record. pod
// events then tells the same in text, one line per change; an unknown
// pod exits 1.
func TestPodEventsOfARestart(t *testing.T) {
	dir, files := t.TempDir(), t.TempDir()
	rmPod(t, dir, "evt")
	count, proceed := filepath.Join(files, "count"), filepath.Join(files, "proceed")
	script := fmt.Sprintf(`echo x >> %s; if [ $(wc -l < %[1]s) -eq 1 ]; then exit 3; fi; while [ ! -e %s ]; do sleep 0.05; done`, count, proceed)
	manifest := fmt.Sprintf("name: evt\nrestartBackoff: {initial: 100ms}\napps: [{name: a, restartPolicy: OnFailure, exec: [/bin/sh, -c, %q]}]\n", script)

	// follow starts unitrun with args and returns its stdout's lines as
	// they come, and its end.
	follow := func(args ...string) (<-chan string, *exec.Cmd) {
		cmd := exec.Command(systemdtest.Binary(t), args...)
		cmd.Stderr = io.Discard
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		lines := make(chan string)
		go func() {
			defer close(lines)
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text() + "\n"
			}
		}()
		return lines, cmd
	}
	// upTo reads lines until one holds want, and returns them.
	upTo := func(lines <-chan string, want string) string {
		var got string
		for line := range lines {
			got += line
			if strings.Contains(line, want) {
				break
			}
		}
		return got
	}
	run, runCmd := follow("pod", "run", "--json", "--state-dir", dir, manifestFile(t, manifest))
	ran := upTo(run, `"type":"app-started"`)
	events, eventsCmd := follow("pod", "events", "--json", "--state-dir", dir, "evt")
	second := `"type":"app-started","pod":"evt","app":"a","run":2`
	ran += upTo(run, second)
	followed := upTo(events, second)
	if err := os.WriteFile(proceed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for line := range run {
		ran += line
	}
	for line := range events {
		followed += line
	}
	runCmd.Wait()
	eventsCmd.Wait()

	want := "app-started a 1 -\napp-restarting a 1 3\napp-started a 2 -\napp-exited a 2 0\npod-ended Succeeded - 0\n"
	if got := eventLines(t, ran); runCmd.ProcessState.ExitCode() != 0 || got != want {
		t.Errorf("pod run --json: exit %d, events:\n%s\nwant 0 and:\n%s", runCmd.ProcessState.ExitCode(), got, want)
	}
	if got := eventLines(t, followed); eventsCmd.ProcessState.ExitCode() != 0 || got != want {
		t.Errorf("pod events --json: exit %d, events:\n%s\nwant 0 and:\n%s", eventsCmd.ProcessState.ExitCode(), got, want)
	}

	// Read from the records of the ended pod, which keep the last exit
	// only: the restart's exit code is no longer known.
	out, errs, code := podCLI(t, dir, "events", "evt")
	text := "pod evt app a running\npod evt app a restarting\npod evt app a running\npod evt app a exited exit 0\npod evt Succeeded exit 0\n"
	if got := stampRE.ReplaceAllString(out, ""); code != 0 || got != text {
		t.Errorf("pod events: exit %d, %q (%s), want:\n%s", code, out, errs, text)
	}
	if _, errs, code := podCLI(t, dir, "events", "nosuch"); code != 1 || !strings.Contains(errs, "no pod named nosuch") {
		t.Errorf("pod events nosuch: exit %d, %q; want 1 and the pod named", code, errs)
	}
}
