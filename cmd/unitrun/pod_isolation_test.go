package main

import (
	"bufio"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// isolatedApps print what they see, then run until stopped: a exits by
// SIGTERM (143, a success), b traps it and exits 7, the pod's code.
const isolatedApps = `
apps:
  - name: a
    exec: ["/bin/sh", "-c", "echo $(cat /proc/1/comm) $(hostname); exec sleep 600"]
  - name: b
    exec: ["/bin/sh", "-c", "trap 'exit 7' TERM; echo trapped; sleep 600 & wait"]
`

// SIGTERM to "pod run --isolation namespaces" stops the pod, run by a
// systemd of its own, gracefully: it exits 143, as an interrupted pod run
// does, and every app's exit is recorded, with the pod's code.
func TestPodRunIsolatedSIGTERM(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "iso-run")
	cmd := exec.Command(systemdtest.Binary(t), "pod", "run", "--isolation", "namespaces", "--state-dir", dir, manifestFile(t, "name: iso-run\n"+isolatedApps))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Stop once a has said what it sees and b has set its trap.
	lines := bufio.NewReader(out)
	var seen []string
	for len(seen) < 2 {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("pod run printed %q, then %v", seen, err)
		}
		seen = append(seen, line)
	}
	slices.Sort(seen)
	if want := []string{"a | systemd iso-run\n", "b | trapped\n"}; !slices.Equal(seen, want) {
		t.Fatalf("pod run printed %q, want %q", seen, want)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Errorf("pod run after SIGTERM: %v, want exit 143", err)
	}
	status, _, _ := podCLI(t, dir, "status", "--json", "iso-run")
	for _, want := range []string{`"phase": "Failed"`, `"exit_code": 143`, `"exit_code": 7`, `"signal": "TERM"`} { // the pod's and each app's
		if !strings.Contains(status, want) {
			t.Errorf("status after SIGTERM lacks %s: %s", want, status)
		}
	}
}

// An isolated pod goes through create, start, stop, logs and rm like any
// other; after rm no unit of it is left on the manager.
func TestPodIsolatedCLILifecycle(t *testing.T) {
	dir := t.TempDir()
	path := manifestFile(t, "name: iso-life\nisolation: namespaces\n"+isolatedApps)
	if out, errs, code := podCLI(t, dir, "create", path); code != 0 || out != "iso-life\n" {
		t.Fatalf("pod create: exit %d, %q, %q", code, out, errs)
	}
	if _, errs, code := podCLI(t, dir, "start", "iso-life"); code != 0 {
		t.Fatalf("pod start: exit %d, %q", code, errs)
	}
	if out, _, _ := podCLI(t, dir, "list"); !strings.Contains(out, "iso-life") || !strings.Contains(out, "Running") {
		t.Errorf("pod list: %q", out)
	}
	// Both apps have run their first command before the stop: a's line
	// is what the logs are checked for after it.
	for {
		a, _, _ := podCLI(t, dir, "logs", "iso-life", "a")
		if b, _, _ := podCLI(t, dir, "logs", "iso-life", "b"); a != "" && b == "trapped\n" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, errs, code := podCLI(t, dir, "stop", "iso-life"); code != 7 {
		t.Errorf("pod stop: exit %d, want 7 (%q)", code, errs)
	}
	if out, _, code := podCLI(t, dir, "logs", "iso-life", "a"); code != 0 || out != "systemd iso-life\n" {
		t.Errorf("pod logs: exit %d, %q", code, out)
	}
	// The copier inside the pod's systemd keeps the times too.
	if out, errs, code := podCLI(t, dir, "logs", "--timestamps", "iso-life", "a"); code != 0 || !strings.HasSuffix(out, "Z systemd iso-life\n") {
		t.Errorf("pod logs --timestamps: exit %d, %q, %q", code, out, errs)
	}
	if _, errs, code := podCLI(t, dir, "rm", "iso-life"); code != 0 {
		t.Fatalf("pod rm: exit %d, %q", code, errs)
	}
	out, err := exec.Command("systemctl", "--user", "list-units", "--all", "--no-legend", "unitrun-pod-iso*").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("units left after pod rm: %q, %v", out, err)
	}
}

// --isolation is checked, and the manifest is validated as if it said it.
func TestPodIsolationFlagErrors(t *testing.T) {
	dir := t.TempDir()
	path := manifestFile(t, "name: flagged\napps:\n  - name: a\n    exec: [/bin/true]\n")
	if _, errs, code := podCLI(t, dir, "create", "--isolation", "vm", path); code != 2 || !strings.Contains(errs, `--isolation "vm": must be none or namespaces`) {
		t.Errorf("create --isolation vm: exit %d, %q", code, errs)
	}
	rooted := manifestFile(t, "name: flagged\nisolation: namespaces\napps:\n  - name: a\n    exec: [/bin/true]\n    rootfs: /srv/root\n")
	if _, errs, code := podCLI(t, dir, "run", "--isolation", "none", rooted); code != 2 || !strings.Contains(errs, `apps[0].rootfs "/srv/root": needs isolation: namespaces`) {
		t.Errorf("run --isolation none of a rootfs pod: exit %d, %q", code, errs)
	}
	if out, _, _ := podCLI(t, dir, "list"); strings.Contains(out, "flagged") {
		t.Errorf("a refused pod is listed: %q", out)
	}
}
