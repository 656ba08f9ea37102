package main

import (
	"bufio"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// run --scope runs the command as unitrun's child in a transient scope of
// the flags' settings, with the scope's INVOCATION_ID, and exits with the
// command's status, as systemd-run --scope does on the same manager; the
// scope is gone once the command has ended.
func TestRunScopeLikeSystemdRun(t *testing.T) {
	// $1 is the scope's name: the command shows its own scope and cgroup.
	script := `systemctl --user show -p Description,Slice,SendSIGHUP,ActiveState,SubState "$1"
grep -o '[^/]*$' /proc/self/cgroup; echo "$INVOCATION_ID" | grep -c '^[0-9a-f]\{32\}$'; exit 7`
	flags := []string{"--description", "scope test", "--slice", "scopetest", "--send-sighup", "-q"}
	stopUnit(t, "scopetest.slice")
	want, errs, code := systemdRun(t, append(append([]string{"--scope", "-u", "unitrun-scope-ref"}, flags...),
		"sh", "-c", script, "sh", "unitrun-scope-ref.scope")...)
	if code != 7 || !strings.Contains(want, "SubState=running") {
		t.Fatalf("systemd-run --scope: exit %d, stdout %q, stderr %q", code, want, errs)
	}
	got, errs, code := unitrun(t, append(append([]string{"run", "--scope", "-u", "unitrun-scope-run.scope"}, flags...),
		"--", "sh", "-c", script, "sh", "unitrun-scope-run.scope")...)
	if code != 7 || strings.ReplaceAll(got, "-run", "-ref") != want {
		t.Errorf("run --scope: exit %d, stdout %q, stderr %q; systemd-run --scope: exit 7, %q", code, got, errs, want)
	}
	waitGone(t, "unitrun-scope-run.scope")

	// --uid, --gid and --nice: unitrun applies them to the command.
	script = `echo $(id -u) $(id -g) $(id -G) $(nice) "$USER" "$LOGNAME" "$HOME" "$SHELL"`
	for _, flags := range [][]string{{"--uid", "nobody", "--nice", "5"}, {"--uid", "65534", "--gid", "0", "--nice", "-3"}} {
		want, errs, code := systemdRun(t, append(append([]string{"--scope", "-q"}, flags...), "sh", "-c", script)...)
		if code != 0 {
			t.Fatalf("systemd-run --scope %q: exit %d, %s", flags, code, errs)
		}
		got, errs, code := unitrun(t, append(append([]string{"run", "--scope", "-q"}, flags...), "--", "sh", "-c", script)...)
		if code != 0 || got != want {
			t.Errorf("run --scope %q: exit %d, stdout %q, stderr %q; systemd-run --scope printed %q", flags, code, got, errs, want)
		}
	}

	_, errs, code = unitrun(t, "run", "--scope", "--", "true")
	if code != 0 || !regexp.MustCompile(`^Running scope as unit: unitrun-[0-9a-f]{16}\.scope\n$`).MatchString(errs) {
		t.Errorf("run --scope -- true: exit %d, stderr %q; want 0 and the scope's name, as systemd-run tells it", code, errs)
	}
	for _, flag := range []string{"--pty", "--no-wait", "-r", "--service-type=exec", "--timeout=1s"} {
		_, errs, code := unitrun(t, "run", "--scope", flag, "--", "true")
		if code != 2 || !strings.Contains(errs, "--scope and --") {
			t.Errorf("run --scope %s: exit %d, stderr %q; want 2 (systemd-run refuses it too)", flag, code, errs)
		}
	}
	_, errs, code = unitrun(t, "run", "--scope", "-u", "x.service", "--", "true")
	if code != 2 || !strings.Contains(errs, "--scope runs a scope") {
		t.Errorf("run --scope -u x.service: exit %d, stderr %q; want 2", code, errs)
	}
}

// A SIGTERM or Ctrl-C's SIGINT to unitrun reaches the command in its scope,
// whose exit status unitrun then exits with.
func TestRunScopeForwardsSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(systemdtest.Binary(t), "run", "-q", "--scope", "--", "sh", "-c",
			`trap "exit 9" TERM INT; echo ready; while :; do sleep 0.1; done`)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			t.Fatalf("run --scope printed %q, %v", line, err)
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 9 {
			t.Errorf("run --scope, %v: exit %d; want the command's 9", sig, code)
		}
	}
}

// Ctrl-C on the terminal that unitrun runs in the foreground of reaches
// the command in its scope once, from the terminal: unitrun, in the same
// process group, forwards no copy of it.
func TestRunScopeCtrlCOnTerminal(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("skipping: no python3 to count signals: %v", err)
	}
	script := `import signal, sys, time
n = 0
def count(sig, frame):
    global n
    n += 1
signal.signal(signal.SIGINT, count)
print("ready", flush=True)
sys.stdin.readline()
time.sleep(0.5)  # time for a second SIGINT to arrive, if one comes
print("SIGINTs:", n)`
	out, code := onTerminal(t, exec.Command(systemdtest.Binary(t), "run", "-q", "--scope", "--", python, "-c", script), "ready", "\x03\n")
	if code != 0 || !strings.Contains(out, "SIGINTs: 1\r\n") {
		t.Errorf("run --scope, Ctrl-C typed: exit %d, terminal showed %q; want the command to count one SIGINT", code, out)
	}
}

// run --scope with a working directory that cannot be entered, as the
// command's user (--uid) too, says so, as run without --scope does, before
// it creates the scope, instead of blaming the command.
func TestRunScopeBadWorkingDirectory(t *testing.T) {
	file := systemdtest.Binary(t) // a file, not a directory
	for _, tc := range []struct {
		dir, reason string
		uid         []string
	}{
		{"/nonexistent-unitrun-dir", "no such file or directory", nil},
		{file, "not a directory", nil},
		// /root (mode 700) as nobody: the chdir fails, not the exec.
		{"/root", "permission denied", []string{"--uid", "nobody"}},
	} {
		want := "unitrun: working directory " + tc.dir + ": " + tc.reason + "\n"
		for _, flags := range [][]string{{"--scope"}, nil} {
			args := append(append(append([]string{"run", "-u", "unitrun-scope-baddir"}, tc.uid...), flags...), "--working-directory", tc.dir, "--", "pwd")
			_, errs, code := unitrun(t, args...)
			if flags == nil && tc.uid != nil {
				// The service's systemd, which enters it as the user,
				// tells only that it could not (200/CHDIR).
				want = "unitrun: unitrun-scope-baddir.service: working directory " + tc.dir + ": cannot be entered by the unit (systemd exit status 200/CHDIR)\n"
			}
			if code != 125 || errs != want {
				t.Errorf("unitrun %q: exit %d, stderr %q; want 125 and %q", args, code, errs, want)
			}
		}
	}
	// One that nobody may enter is entered.
	out, errs, code := unitrun(t, "run", "--scope", "-q", "--uid", "nobody", "--working-directory", "/tmp", "--", "sh", "-c", "pwd; id -u")
	if code != 0 || out != "/tmp\n65534\n" {
		t.Errorf("run --scope --uid nobody --working-directory /tmp: exit %d, stdout %q, stderr %q; want 0, /tmp and 65534", code, out, errs)
	}
}
