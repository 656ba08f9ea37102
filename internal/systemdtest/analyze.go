package systemdtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Analyze runs systemd-analyze verify on every unit in dir, one at a time,
// for the system manager or (user) a user manager. A unit passes only if
// systemd-analyze exits 0 and prints nothing: it exits 0 on settings it
// ignores, such as an unknown key or a broken quote, and only warns.
func Analyze(t testing.TB, dir string, user bool) error {
	t.Helper()
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skipf("systemd-analyze is not installed (%v): the rendered units are not verified", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var failures []string
	for _, e := range entries {
		args := []string{"verify", "--man=no", filepath.Join(dir, e.Name())}
		if user {
			args = append([]string{"--user"}, args...)
		}
		cmd := exec.Command(bin, args...)
		// A user manager's verify needs a runtime directory to exist.
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir(), "SYSTEMD_LOG_COLOR=0")
		out, err := cmd.CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			failures = append(failures, fmt.Sprintf("%s: %v\n%s", e.Name(), err, out))
		}
	}
	if failures != nil {
		return fmt.Errorf("systemd-analyze verify:\n%s", strings.Join(failures, "\n"))
	}
	return nil
}
