package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// systemdRun runs systemd-run --user on the test manager and returns its
// stdout, stderr and exit status, or skips the test without systemd-run.
func systemdRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	path, err := exec.LookPath("systemd-run")
	if err != nil {
		t.Skipf("skipping: systemd-run not found: %v", err)
	}
	cmd := exec.Command(path, append([]string{"--user"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// -E as systemd-run 252 takes it (src/run/run.c: the last -E of a name
// wins, also over -p Environment=; NAME alone passes unitrun's own value,
// empty if unset), with systemd-run on the same manager as the reference,
// through D-Bus and through the drop-in an argv with '$' takes.
func TestRunSetenvLikeSystemdRun(t *testing.T) {
	t.Setenv("UNITRUN_PASSED", "from caller")
	os.Unsetenv("UNITRUN_UNSET")
	for _, flags := range [][]string{
		{"-E", "A=1", "-E", "A=2"},
		{"-p", "Environment=A=1 B=1", "-E", "A=2"},
		{"-E", "A=2", "-p", "Environment=A=1"},
		{"-E", "UNITRUN_PASSED", "-E", "UNITRUN_UNSET", "-E", "A="},
	} {
		for _, script := range []string{"env | grep -E '^(A|B|UNITRUN_[A-Z]*)=' | sort", "env | grep -E '^(A|B|UNITRUN_[A-Z]*)=' | sort; : $"} {
			args := append(append([]string{}, flags...), "sh", "-c", script)
			want, errs, code := systemdRun(t, append([]string{"-q", "--wait", "--pipe"}, args...)...)
			if code != 0 {
				t.Fatalf("systemd-run %q: exit %d, %s", args, code, errs)
			}
			got, errs, code := unitrun(t, append([]string{"run", "-q"}, append(flags, "--", "sh", "-c", script)...)...)
			if code != 0 || got != want {
				t.Errorf("run %q: exit %d, environment %q (stderr %q); systemd-run gives %q", flags, code, got, errs, want)
			}
		}
	}
}

// -E refuses, with exit status 2 and a message naming the flag, what
// systemd-run refuses.
func TestRunSetenvRefused(t *testing.T) {
	for _, e := range []string{"", "=x", "bad name", "1A=x", "A=\xff"} {
		if _, _, code := systemdRun(t, "-q", "--wait", "--pipe", "-E", e, "true"); code == 0 {
			t.Errorf("systemd-run -E %q succeeded", e)
		}
		_, errs, code := unitrun(t, "run", "-q", "-E", e, "--", "true")
		if code != 2 || !strings.Contains(errs, "--setenv") || !strings.Contains(errs, "environment variable") {
			t.Errorf("run -E %q: exit %d, stderr %q; want 2 and an error naming --setenv", e, code, errs)
		}
	}
}

// -d runs the command in unitrun's current directory, and without it the
// manager's default applies, as with systemd-run.
func TestRunSameDir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	got, errs, code := unitrun(t, "run", "-q", "-d", "--", "pwd")
	if code != 0 || got != dir+"\n" {
		t.Errorf("run -d pwd: exit %d, stdout %q (stderr %q); want %s", code, got, errs, dir)
	}
	want, _, _ := systemdRun(t, "-q", "--wait", "--pipe", "pwd")
	if got, errs, code := unitrun(t, "run", "-q", "--", "pwd"); code != 0 || got != want || got == dir+"\n" {
		t.Errorf("run pwd: exit %d, stdout %q (stderr %q); want the manager's default, %q", code, got, errs, want)
	}
	if _, errs, code := unitrun(t, "run", "-d", "--working-directory", "/", "--", "true"); code != 2 || !strings.Contains(errs, "--same-dir") {
		t.Errorf("run -d --working-directory: exit %d, stderr %q; want 2 and an error naming --same-dir", code, errs)
	}
}

// TestRunRelativeCommandLikeSystemdRun: a command given as a relative
// path (./agent, sub/agent) or a bare name found through $PATH runs as
// systemd-run runs it on the same manager: the path resolved from the
// caller's directory, with the same argv[0] (which bash -c shows as $0).
func TestRunRelativeCommandLikeSystemdRun(t *testing.T) {
	dir := t.TempDir()
	bash, err := os.ReadFile("/bin/bash")
	if err != nil {
		t.Skipf("skipping: no /bin/bash to show argv[0]: %v", err)
	}
	for _, p := range []string{filepath.Join(dir, "agent"), filepath.Join(dir, "sub", "agent")} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, bash, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	systemdtest.Binary(t) // built from the module's directory, before the Chdir
	t.Chdir(dir)
	t.Setenv("PATH", filepath.Join(dir, "sub")+":"+os.Getenv("PATH"))
	for _, cmd := range []string{"./agent", "sub/agent", "../" + filepath.Base(dir) + "/./agent", "agent"} {
		argv := []string{cmd, "-c", `printf '%s|' "$0" "$PWD"`}
		want, errs, code := systemdRun(t, append([]string{"-q", "--wait", "--pipe", "--"}, argv...)...)
		if code != 0 {
			t.Fatalf("systemd-run %q: exit %d, %s", argv, code, errs)
		}
		got, errs, code := unitrun(t, append([]string{"run", "-q", "--"}, argv...)...)
		if code != 0 || got != want {
			t.Errorf("run %s: exit %d, printed %q (stderr %q); systemd-run printed %q", cmd, code, got, errs, want)
		}
	}
}
