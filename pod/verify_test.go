package pod

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// writeUnits writes files into a new directory and returns it.
func writeUnits(t *testing.T, files []UnitFile) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGraphVerifies renders each golden pod with a unitrun binary (and a
// hook binary, where the golden has one) that exists (systemd-analyze checks that every command is executable), at a
// path with a space and a '%' in it, and verifies every unit for a system
// and a user manager.
func TestGraphVerifies(t *testing.T) {
	binDir := filepath.Join(t.TempDir(), "bin dir %h")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(binDir, "unitrun")
	hook := HookPath(binary)
	for _, b := range []string{binary, hook} {
		if err := os.Symlink("/bin/true", b); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range renderCases {
		for _, user := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/user=%v", c.manifest, user), func(t *testing.T) {
				o := c.options
				o.Binary = binary
				if o.Hook != "" {
					o.Hook = hook
				}
				files, err := Graph(mustLoad(t, c.manifest), o)
				if err != nil {
					t.Fatal(err)
				}
				if err := systemdtest.Analyze(t, writeUnits(t, files), user); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestAnalyzeCatchesBrokenUnits proves that the check above fails on broken
// units, including those systemd-analyze only warns about.
func TestAnalyzeCatchesBrokenUnits(t *testing.T) {
	for name, text := range map[string]string{
		"relative-exec.service": "[Service]\nType=exec\nExecStart=bin/true\n",
		"unknown-key.service":   "[Service]\nType=exec\nExecStart=/bin/true\nExecStrat=/bin/true\n",
		"open-quote.service":    "[Service]\nType=exec\nExecStart=/bin/true\nEnvironment=\"A=1\n",
		"bad-type.service":      "[Service]\nType=exec-ish\nExecStart=/bin/true\n",
		"missing-exec.service":  "[Service]\nType=exec\nExecStart=/nonexistent/unitrun\n",
		"oneshot-always.service": "[Service]\nType=oneshot\nRestart=always\n" +
			"ExecStart=/bin/true\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeUnits(t, []UnitFile{{Name: name, Data: []byte(text)}})
			if err := systemdtest.Analyze(t, dir, false); err == nil {
				t.Errorf("%s passed verification:\n%s", name, text)
			} else {
				t.Log(err)
			}
		})
	}
}
