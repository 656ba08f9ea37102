package podrun

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// Every run is started and every exit recorded exactly, and every run's
// output copied to its log, whether the small hook binary is installed
// beside unitrun (the units run it at each start and exit, and it copies
// the logs) or not (a "go run" of unitrun: the units run unitrun's own
// hooks, "unitrun pod unit-hook start", "reap-app", and "log-copy"
// copies): an exit code, a signal, a success, an init app's success, a
// command that does not exist (127, with unitrun's message in its log),
// an exit that restarts (which the hook hands to unitrun, to ask the
// manager about a stop job) and a failure that ends the pod (which the
// hook records, then has unitrun end the pod).
func TestExitHookRecordsEachExit(t *testing.T) {
	withHook := systemdtest.Binary(t)
	alone := filepath.Join(t.TempDir(), "unitrun")
	copyFile(t, withHook, alone)
	for _, c := range []struct {
		name, binary, hook string
	}{
		{"hook", withHook, pod.HookPath(withHook)},
		{"no hook", alone, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRunner(t)
			r.Binary = c.binary
			once := filepath.Join(t.TempDir(), "once")
			name := run(t, r, `
name: hooked
exitPolicy: all
restartBackoff: {initial: 100ms}
apps:
  - name: setup
    init: true
    exec: ["/bin/true"]
  - name: three
    exec: ["/bin/sh", "-c", "echo three; exit 3"]
  - name: killed
    exec: ["/bin/sh", "-c", "kill -KILL $$"]
  - name: fine
    exec: ["/bin/true"]
  - name: missing
    exec: ["/nonexistent/cmd"]
  - name: retried
    restartPolicy: OnFailure
    exec: ["/bin/sh", "-c", "test -e `+once+` || { touch `+once+`; exit 2; }"]
`, "")
			data, err := os.ReadFile(filepath.Join(systemdtest.RuntimeUnitDir(t), pod.AppUnit(name, "three")))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`ExecStart="`, `ExecStopPost=+"`} {
				if c.hook != "" {
					want += c.hook + `" "`
				}
				want += c.binary + `" "pod" "unit-hook"`
				if !strings.Contains(string(data), want) {
					t.Errorf("unit of app three has no %q:\n%s", want, data)
				}
			}
			s := wait(t, r, name)
			if s.Phase != pod.PodFailed || s.ExitCode == nil || *s.ExitCode != 3 && *s.ExitCode != 137 && *s.ExitCode != 127 {
				t.Errorf("pod: %s, exit code %s; want Failed, that of the app that failed first (3, 137 or 127)", s.Phase, fmtCode(s.ExitCode))
			}
			wantApp(t, s, "setup", record.AppExited, 0)
			wantApp(t, s, "three", record.AppFailed, 3)
			wantApp(t, s, "killed", record.AppFailed, 128+9)
			wantApp(t, s, "fine", record.AppExited, 0)
			wantApp(t, s, "missing", record.AppFailed, 127)
			if a := appOf(t, s, "missing"); a.Message != "command /nonexistent/cmd: not found" {
				t.Errorf("app missing: message %q; want the command not found", a.Message)
			}
			if log, err := os.ReadFile(pod.LogFile(r.StateDir, name, "missing")); err != nil || string(log) != "unitrun: /nonexistent/cmd: command not found\n" {
				t.Errorf("log of app missing: %q, %v; want unitrun's message", log, err)
			}
			wantApp(t, s, "retried", record.AppExited, 0)
			// The log copier, the hook's too, copied the app's output.
			if log, err := os.ReadFile(pod.LogFile(r.StateDir, name, "three")); err != nil || string(log) != "three\n" {
				t.Errorf("log of app three: %q, %v; want its line", log, err)
			}
			if a := appOf(t, s, "killed"); a.Signal != "KILL" || a.Result != "signal" {
				t.Errorf("app killed: signal %q, result %q; want KILL, signal", a.Signal, a.Result)
			}
			if a := appOf(t, s, "retried"); a.Restarts != 1 {
				t.Errorf("app retried: %d restarts; want 1", a.Restarts)
			}
			for app, code := range map[string]string{"three": "3\n", "killed": "137\n", "fine": "0\n", "missing": "127\n", "retried": "0\n"} {
				if got, err := os.ReadFile(filepath.Join(r.StateDir, "pods", name, "status", app)); err != nil || string(got) != code {
					t.Errorf("status file of %s: %q, %v; want %q", app, got, err, code)
				}
			}

			// A failure that ends the pod under first-failure: the hook
			// records it, then has unitrun stop the pod.
			name = run(t, r, `
name: ends
apps:
  - name: fails
    exec: ["/bin/sh", "-c", "exit 4"]
  - name: sleeps
    exec: ["/bin/sleep", "600"]
`, "")
			s = wait(t, r, name)
			wantPod(t, s, pod.PodFailed, 4)
			wantApp(t, s, "fails", record.AppFailed, 4)
			if a := appOf(t, s, "sleeps"); a.Signal != "TERM" || a.State != record.AppExited {
				t.Errorf("app sleeps: %s, signal %q; want exited by TERM", a.State, a.Signal)
			}
		})
	}
}

// copyFile copies the executable at src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
