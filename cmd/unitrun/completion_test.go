package main

import (
	"os/exec"
	"strings"
	"testing"
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
