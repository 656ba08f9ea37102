package systemdtest

import (
	"os/exec"
	"slices"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// The check at the end of a test binary sees unitrun.slice, which a pod or
// a unit started with --slice=unitrun.slice leaves loaded, and not a unit
// that is not ours.
func TestLeftoversSeeUnitrunSlice(t *testing.T) {
	if out, err := exec.Command("systemd-run", "--user", "--slice=unitrun.slice", "--unit=systemdtest-other", "/bin/sleep", "600").CombinedOutput(); err != nil {
		t.Fatalf("systemd-run: %v\n%s", err, out)
	}
	defer func() {
		if out, err := exec.Command("systemctl", "--user", "stop", "systemdtest-other.service", "unitrun.slice").CombinedOutput(); err != nil {
			t.Errorf("systemctl stop: %v\n%s", err, out)
		}
	}()
	if left := leftovers(); !slices.Equal(left, []string{"unitrun.slice"}) {
		t.Errorf("units of ours left: %q, want [unitrun.slice]", left)
	}
}
