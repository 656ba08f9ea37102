package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/pullexec"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
)

// TestInjectSelfCarriesHook: "inject" of unitrun itself puts the pods'
// exit hook beside the copy, named as pod.HookPath names it, so that a pod
// the copy creates runs that hook at each exit of an app rather than
// unitrun, and unitrun-pull, named as pullexec.Path names it, so that the
// copy pulls images; "inject --gc" keeps them while the pod's units are
// loaded and removes them together once it is gone.
func TestInjectSelfCarriesHook(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	out, errs, code := unitrun(t, "inject", "--dir", dir)
	if code != 0 {
		t.Fatalf("inject: exit %d: %s", code, errs)
	}
	self := strings.TrimSuffix(out, "\n")
	hook := pod.HookPath(self)
	want, err := os.ReadFile(pod.HookPath(systemdtest.Binary(t)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(hook); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("injected hook %s: %d bytes, %v; want the %d of the hook beside unitrun", hook, len(got), err, len(want))
	}
	if pod.HookBinary(self) != hook {
		t.Fatalf("the injected hook %s is not one pods would run (not executable?)", hook)
	}
	// The registry client too, where the copy looks for it.
	puller := pullexec.Path(self)
	if want, err := os.ReadFile(pullexec.Path(systemdtest.Binary(t))); err != nil {
		t.Fatal(err)
	} else if got, err := os.ReadFile(puller); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("injected unitrun-pull %s: %d bytes, %v; want the %d of the one beside unitrun", puller, len(got), err, len(want))
	}

	state := t.TempDir()
	injected := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(self, append(append([]string{"pod"}, args...), "--state-dir", state)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	removed := false
	t.Cleanup(func() {
		if !removed {
			injected("rm", "--force", "injected")
		}
	})
	if out, code := injected("run", "--detach", manifestFile(t, "name: injected\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n")); code != 0 {
		t.Fatalf("pod run --detach by the injected unitrun: exit %d: %s", code, out)
	}
	unitFile, err := os.ReadFile(filepath.Join(systemdtest.RuntimeUnitDir(t), pod.AppUnit("injected", "a")))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`ExecStart="`, `ExecStopPost=+"`} {
		if line += hook + `" "` + self + `" "pod" "unit-hook"`; !strings.Contains(string(unitFile), line) {
			t.Errorf("the app's unit has no %s:\n%s", line, unitFile)
		}
	}

	gc := func() []string {
		t.Helper()
		out, errs, code := unitrun(t, "inject", "--gc", "--dir", dir)
		if code != 0 {
			t.Fatalf("inject --gc: exit %d: %s", code, errs)
		}
		return strings.Fields(strings.ReplaceAll(out, "removed ", ""))
	}
	if got := gc(); len(got) != 0 {
		t.Errorf("inject --gc while the pod runs removed %v; want nothing", got)
	}
	if out, code := injected("rm", "--force", "injected"); code != 0 {
		t.Fatalf("pod rm: exit %d: %s", code, out)
	}
	removed = true
	got := gc()
	slices.Sort(got)
	all := []string{self, hook, puller}
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Errorf("inject --gc once the pod is gone removed %v; want %v", got, all)
	}
}
