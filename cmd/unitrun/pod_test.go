package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podCLI runs "unitrun pod ARGS... --state-dir DIR".
func podCLI(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	return unitrun(t, append(append([]string{"pod"}, args...), "--state-dir", dir)...)
}

// manifestFile writes a manifest into a file and returns its path.
func manifestFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rmPod removes pod name when the test ends.
func rmPod(t *testing.T, dir, name string) {
	t.Cleanup(func() {
		if _, errs, code := podCLI(t, dir, "rm", "--force", name); code != 0 {
			t.Errorf("pod rm %s: exit %d: %s", name, code, errs)
		}
	})
}

func TestPodRunExitsWithFirstFailure(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "fails")
	out, errs, code := podCLI(t, dir, "run", manifestFile(t, `
name: fails
apps:
  - name: bad
    exec: ["/bin/sh", "-c", "echo going; sleep 0.3; echo gone >&2; exit 4"]
  - name: long
    exec: ["/bin/sleep", "600"]
`))
	if code != 4 {
		t.Errorf("pod run: exit %d, want 4 (stderr %q)", code, errs)
	}
	if !strings.Contains(out, "bad | going\n") || !strings.Contains(out, "bad | gone\n") {
		t.Errorf("pod run output %q lacks the prefixed lines of app bad", out)
	}
}

func TestPodCLILifecycle(t *testing.T) {
	dir := t.TempDir()
	// quick ends the pod once long's command runs: long, stopped before
	// it ran, would have failed, never started.
	up := filepath.Join(t.TempDir(), "long-up")
	path := manifestFile(t, fmt.Sprintf(`
name: life
exitPolicy: all
apps:
  - name: quick
    exec: ["/bin/sh", "-c", "until [ -e %s ]; do sleep 0.05; done; echo quick says hi"]
  - name: long
    exec: ["/bin/sh", "-c", "touch %s; exec sleep 600"]
`, up, up))
	if out, errs, code := podCLI(t, dir, "create", path); code != 0 || out != "life\n" {
		t.Fatalf("pod create: exit %d, %q, %q", code, out, errs)
	}
	rmPod(t, dir, "life")
	if _, errs, code := podCLI(t, dir, "create", path); code == 0 || !strings.Contains(errs, "already exists") {
		t.Errorf("second pod create: exit %d, %q", code, errs)
	}
	// A pod of the same name in another state directory would share its
	// units, which are the manager's.
	other := t.TempDir()
	if _, errs, code := podCLI(t, other, "create", path); code == 0 || !strings.Contains(errs, "with another state directory") {
		t.Errorf("pod create of the same name in another state directory: exit %d, %q", code, errs)
	}
	if out, _, _ := podCLI(t, other, "list"); out != "" {
		t.Errorf("pod list of the other state directory after the refusal: %q", out)
	}
	out, _, _ := podCLI(t, dir, "status", "--json", "life")
	if !strings.Contains(out, `"phase": "Pending"`) {
		t.Errorf("status of a created pod: %s", out)
	}
	if _, errs, code := podCLI(t, dir, "start", "--exit-policy", "any", "life"); code != 0 {
		t.Fatalf("pod start: exit %d: %s", code, errs)
	}
	// Under "any", quick's exit ends the pod.
	out, errs, code := podCLI(t, dir, "logs", "-f", "life")
	if code != 0 || !strings.Contains(out, "quick | quick says hi\n") {
		t.Errorf("pod logs -f: exit %d, %q, %q", code, out, errs)
	}
	if out, _, _ := podCLI(t, dir, "logs", "life", "quick"); out != "quick says hi\n" {
		t.Errorf("pod logs life quick: %q", out)
	}
	out, errs, code = podCLI(t, dir, "status", "--json", "life")
	if code != 0 {
		t.Fatalf("pod status: exit %d: %s", code, errs)
	}
	var st struct {
		Name     string `json:"name"`
		Phase    string `json:"phase"`
		ExitCode *int   `json:"exit_code"`
		Apps     []struct {
			Name       string  `json:"name"`
			State      string  `json:"state"`
			ExitCode   *int    `json:"exit_code"`
			Restarts   *int    `json:"restarts"`
			StartedAt  *string `json:"started_at"`
			FinishedAt *string `json:"finished_at"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if st.Name != "life" || st.Phase != "Succeeded" || st.ExitCode == nil || *st.ExitCode != 0 || len(st.Apps) != 2 {
		t.Fatalf("pod status --json: %s", out)
	}
	for _, a := range st.Apps {
		if a.ExitCode == nil || a.Restarts == nil || a.StartedAt == nil || a.FinishedAt == nil || a.State != "exited" {
			t.Errorf("app %s in pod status --json: %s", a.Name, out)
		}
	}
	out, _, _ = podCLI(t, dir, "list", "--json")
	if !strings.Contains(out, `"name": "life"`) {
		t.Errorf("pod list --json: %s", out)
	}
	out, _, _ = podCLI(t, dir, "graph", "--format", "mermaid", "life")
	if !strings.HasPrefix(out, "flowchart TB\n") || !strings.Contains(out, `"unitrun-pod-life.target"`) {
		t.Errorf("pod graph: %s", out)
	}
	// A format typed wrong is named by its flag.
	if out, errs, code := podCLI(t, dir, "graph", "--format", "svg", "life"); code != exitUsage || out != "" || errs != "unitrun: --format: diagram format \"svg\": must be dot or mermaid\n" {
		t.Errorf("pod graph --format svg: exit %d, %q, %q; want exit 2 naming --format", code, out, errs)
	}
}

func TestPodStopAndRemove(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, "name: stopme\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n"))
	if code != 0 || out != "stopme\n" {
		t.Fatalf("pod run --detach: exit %d, %q, %q", code, out, errs)
	}
	// Refused, naming the command and the flag that remove it.
	if _, errs, code := podCLI(t, dir, "rm", "stopme"); code != exitFailed || errs != "unitrun: pod stopme is running: stop it first (unitrun pod stop stopme), or give --force, which stops it\n" {
		t.Errorf("pod rm of a running pod: exit %d, %q; want 125 naming pod stop and --force", code, errs)
	}
	if _, errs, code := podCLI(t, dir, "stop", "--timeout", "30s", "stopme"); code != 0 {
		t.Errorf("pod stop: exit %d, %s", code, errs)
	}
	if out, _, _ := podCLI(t, dir, "status", "stopme"); !strings.Contains(out, "Succeeded") {
		t.Errorf("status after stop: %s", out)
	}
	if _, errs, code := podCLI(t, dir, "rm", "stopme"); code != 0 {
		t.Errorf("pod rm: exit %d, %s", code, errs)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "pods")); len(entries) != 0 {
		t.Errorf("state left after pod rm: %v", entries)
	}
}

func TestPodBadManifests(t *testing.T) {
	for _, c := range []struct{ name, yaml, field string }{
		{"unknown field", "name: p\napps:\n  - {name: a, exce: [/bin/true]}\n", `apps[0]: field "exce" not known`},
		{"duplicate app", "name: p\napps: [{name: a, exec: [/bin/true]}, {name: a, exec: [/bin/true]}]\n", `apps[1].name "a": duplicate`},
		{"bad name", "name: Web\napps: [{name: a, exec: [/bin/true]}]\n", `name "Web"`},
		{"empty exec", "name: p\napps: [{name: a, exec: []}]\n", `apps[0].exec`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, errs, code := podCLI(t, dir, "create", manifestFile(t, c.yaml))
			if code != exitUsage || !strings.Contains(errs, c.field) {
				t.Errorf("exit %d, stderr %q; want %d naming %s", code, errs, exitUsage, c.field)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, "pods")); len(entries) != 0 {
				t.Errorf("a rejected manifest left state: %v", entries)
			}
		})
	}
}

func TestPodStatusShowsProbe(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "probed")
	if out, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, `
name: probed
apps:
  - name: a
    exec: ["/bin/sleep", "600"]
    probe:
      exec: ["/bin/false"]
      initialDelaySeconds: 1
      failureThreshold: 1
      action: restart
`)); code != 0 {
		t.Fatalf("pod run --detach: exit %d, %q, %q", code, out, errs)
	}
	var s struct {
		Apps []struct {
			Restarts int `json:"restarts"`
			Probe    *struct {
				LastResult          string `json:"last_result"`
				ConsecutiveFailures *int   `json:"consecutive_failures"`
			} `json:"probe"`
		} `json:"apps"`
	}
	for range 600 {
		out, errs, _ := podCLI(t, dir, "status", "--json", "probed")
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("pod status --json: %v: %q, %q", err, out, errs)
		}
		if a := s.Apps[0]; a.Restarts >= 2 && a.Probe != nil && a.Probe.LastResult == "failure" && a.Probe.ConsecutiveFailures != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("pod status --json never showed two probe restarts: %+v", s.Apps[0])
}
