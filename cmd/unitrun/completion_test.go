package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// The completion scripts parse in their shells.
func TestCompletionScriptsParse(t *testing.T) {
	for _, sh := range []struct{ shell, check string }{
		{"bash", "bash -n"},
		{"zsh", "zsh -n"},
		{"fish", "fish --no-execute"},
	} {
		t.Run(sh.shell, func(t *testing.T) {
			if _, err := exec.LookPath(sh.shell); err != nil {
				t.Skipf("%s is not installed (.ci/run installs it)", sh.shell)
			}
			script, errs, code := unitrun(t, "completion", sh.shell)
			if code != 0 || !strings.Contains(script, "unitrun") {
				t.Fatalf("completion %s: exit %d, stderr %q", sh.shell, code, errs)
			}
			f := strings.Fields(sh.check)
			cmd := exec.Command(f[0], append(f[1:], "/dev/stdin")...)
			cmd.Stdin = strings.NewReader(script)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s rejects the completion script: %v\n%s", sh.check, err, out)
			}
		})
	}
}

// Every command has help with at least one example, except the groups and
// cobra's own.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRoot()
	missing := []string{}
	for _, c := range root.Commands() {
		if c.Name() == "completion" || c.Name() == "help" || c.Hidden {
			continue
		}
		if c.HasSubCommands() {
			for _, s := range c.Commands() {
				if !s.Hidden && s.Example == "" {
					missing = append(missing, c.Name()+" "+s.Name())
				}
			}
			continue
		}
		if c.Example == "" {
			missing = append(missing, c.Name())
		}
	}
	if len(missing) > 0 {
		t.Errorf("commands without examples in --help: %s", strings.Join(missing, ", "))
	}
}

// Completion offers the names on the host, through cobra's __complete as
// the shells call it: pod names to a pod command (those that begin with
// what is typed; the pods not named yet to pod stats), a pod's app names
// after its name, and to start the units the manager has loaded and its
// unit files, to wait the loaded units.
func TestCompletionOfNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"comp-alpha", "comp-beta"} {
		rmPod(t, dir, name)
		manifest := fmt.Sprintf("name: %s\napps: [{name: web, exec: [/bin/true]}, {name: worker, exec: [/bin/true]}, {name: db, exec: [/bin/true]}]\n", name)
		if _, errs, code := podCLI(t, dir, "create", manifestFile(t, manifest)); code != 0 {
			t.Fatalf("pod create %s: exit %d: %s", name, code, errs)
		}
	}
	unitDir, err := systemdtest.Conn(t).RuntimeUnitDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(unitDir, "comp-file.service")
	if err := os.WriteFile(file, []byte("[Service]\nExecStart=/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file) })
	if _, errs, code := unitrun(t, "run", "--no-wait", "--unit", "comp-loaded", "--", "sleep", "600"); code != 0 {
		t.Fatalf("run --no-wait: exit %d: %s", code, errs)
	}
	t.Cleanup(func() { exec.Command("systemctl", "--user", "stop", "comp-loaded.service").Run() })

	state := "--state-dir=" + dir
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pod", "status", state, ""}, "comp-alpha\ncomp-beta\n:4\n"},
		{[]string{"pod", "stop", state, "comp-a"}, "comp-alpha\n:4\n"},
		{[]string{"pod", "events", state, "comp-b"}, "comp-beta\n:4\n"},
		{[]string{"pod", "status", state, "comp-alpha", ""}, ":4\n"},
		{[]string{"pod", "stats", state, "comp-alpha", ""}, "comp-beta\n:4\n"},
		{[]string{"pod", "logs", state, "comp-beta", "w"}, "web\nworker\n:4\n"},
		{[]string{"pod", "logs", state, "comp-beta", ""}, "web\nworker\ndb\n:4\n"},
		{[]string{"pod", "logs", state, "nosuch", ""}, ":4\n"},
		{[]string{"pod", "graph", state, "comp-b"}, "comp-beta\n:0\n"},
		{[]string{"start", "comp-"}, "comp-file.service\ncomp-loaded.service\n:4\n"},
		{[]string{"wait", "comp-"}, "comp-loaded.service\n:4\n"},
	} {
		out, errs, code := unitrun(t, append([]string{"__complete"}, c.args...)...)
		if code != 0 || out != c.want {
			t.Errorf("__complete %s: exit %d, %q (%s); want %q", strings.Join(c.args, " "), code, out, errs, c.want)
		}
	}
}
