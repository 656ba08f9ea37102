package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/depstest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// allowed are every package the hook may link, as a release builds it
// (CGO_ENABLED=0), but the standard library's internal ones, which come
// with these: what starting a run, recording an exit and copying a log
// need. os/user (which reads /etc/passwd and /etc/group in a static
// build), debug/elf (what a command that cannot be executed is) and
// golang.org/x/sys/unix (openat2, prctl) cost the hook 0.1 ms of CPU
// together (docs/performance.md, Pods). Anything more (package pod with
// its YAML and unit graph, D-Bus, the manager, net, crypto, regexp) is
// code whose init and size every run of every app would pay for, which is
// what the hook is for not to pay.
var allowed = []string{
	"github.com/unitrun/unitrun/cmd/unitrun-hook",
	"github.com/unitrun/unitrun/pod/appexec",
	"github.com/unitrun/unitrun/pod/record",
	"github.com/unitrun/unitrun/pod/logcopy",
	"github.com/unitrun/unitrun/unit/exit",
	"github.com/unitrun/unitrun/internal/atomicfile",
	"golang.org/x/sys/unix",
	"bufio", "bytes", "cmp", "compress/flate", "compress/zlib", "context", "debug/dwarf", "debug/elf",
	"encoding", "encoding/base64", "encoding/binary", "encoding/json", "errors", "fmt", "hash",
	"hash/adler32", "io", "io/fs", "iter", "maps", "math", "math/bits", "os", "os/exec", "os/signal",
	"os/user", "path", "path/filepath", "reflect", "runtime", "slices", "sort", "strconv", "strings",
	"sync", "sync/atomic", "syscall", "time", "unicode", "unicode/utf16", "unicode/utf8", "unsafe",
}

// TestDeps fails when the hook links a package that is not allowed.
func TestDeps(t *testing.T) {
	for _, dep := range depstest.Deps(t, ".") {
		if !slices.Contains(allowed, dep.Path) {
			t.Errorf("unitrun-hook links %s: it starts at every exit of every app; keep it to the packages allowed", dep.Path)
		}
	}
}

// newPod writes the state of the pod of manifest under a new state
// directory and returns the directory.
func newPod(t *testing.T, manifest string) string {
	t.Helper()
	m, err := pod.Parse([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(record.Dir(dir, m.Name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := pod.WriteState(dir, m, []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMain(m *testing.M) { systemdtest.Main(m) }

// fakeUnitrun returns the path of a script that stands for unitrun: it
// writes the arguments it is given to the file args returns (nil if the
// hook ran no unitrun).
func fakeUnitrun(t *testing.T) (path string, args func() []string) {
	t.Helper()
	argsFile := filepath.Join(t.TempDir(), "args")
	path = filepath.Join(t.TempDir(), "unitrun")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argsFile+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, func() []string {
		data, err := os.ReadFile(argsFile)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(data))
	}
}

// hookArgs is the command line of hook for app of pod p, as the units
// give it to the small hook binary, with unitrun first.
func hookArgs(unitrun, hook, stateDir string, args ...string) []string {
	return append([]string{unitrun, "pod", record.HookCommand, hook, "--state-dir", stateDir}, args...)
}

// inUnit runs the hook binary with args in unit u of the test's
// manager, with env added to its environment, as systemd runs it, and
// returns its exit status and output, which goes to a file, as an app's
// to its log.
func inUnit(t *testing.T, u string, env []string, args ...string) (int, string) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := job.Command(systemdtest.Conn(t), pod.HookPath(systemdtest.Binary(t)), args...)
	cmd.Name, cmd.Env, cmd.Stdout, cmd.Stderr = u, env, log, log
	err = cmd.Run()
	out, rerr := os.ReadFile(log.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	if ee := (*job.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode, string(out)
	} else if err != nil {
		t.Fatalf("unitrun-hook in %s: %v\n%s", u, err, out)
	}
	return 0, string(out)
}

// runHook runs the hook binary's reap-app as systemd runs it, in the
// app's unit, at an exit that env describes, with unitrun a script that
// writes the arguments it is given to a file, and returns those arguments
// (nil if the hook ran no unitrun). args end with POD APP.
func runHook(t *testing.T, stateDir string, env []string, args ...string) []string {
	t.Helper()
	unitrun, ran := fakeUnitrun(t)
	u := pod.AppUnit(args[len(args)-2], args[len(args)-1])
	if code, out := inUnit(t, u, env, hookArgs(unitrun, "reap-app", stateDir, args...)...); code != 0 {
		t.Fatalf("unitrun-hook: exit status %d\n%s", code, out)
	}
	return ran()
}

// The hook records an exit itself, exactly, running no unitrun; has
// unitrun end the pod once it has recorded an exit that ends it; and hands
// an exit that would restart the app to unitrun, having written nothing.
func TestHookRecordsExit(t *testing.T) {
	const manifest = `
name: p
apps:
  - name: a
    exec: ["/bin/true"]
  - name: b
    exec: ["/bin/true"]
  - name: r
    restartPolicy: Always
    exec: ["/bin/true"]
`
	dir := newPod(t, manifest)
	// a's run got as far as its command, as the exec hook records it.
	if err := record.WriteApp(dir, "p", record.AppStatus{Name: "a", State: record.AppRunning, StartedAt: time.Now(), PID: 1}); err != nil {
		t.Fatal(err)
	}
	killed := []string{"SERVICE_RESULT=success", "EXIT_CODE=killed", "EXIT_STATUS=INT", "INVOCATION_ID=0123456789abcdef0123456789abcdef"}
	if got := runHook(t, dir, killed, "p", "a"); got != nil {
		t.Errorf("the hook ran unitrun %q for an exit it records itself", got)
	}
	s, err := record.ReadApp(dir, "p", "a")
	if err != nil {
		t.Fatal(err)
	}
	if s.State != record.AppExited || s.ExitCode == nil || *s.ExitCode != 130 || s.Signal != "INT" || s.Result != "success" ||
		s.Invocation != "0123456789abcdef0123456789abcdef" || s.PID != 0 || s.FinishedAt.IsZero() {
		t.Errorf("record of a: %+v; want exited (killed by INT: 130, signal INT, result success), the invocation, finished, no pid", s)
	}
	if code, err := record.ReadExitCode(dir, "p", "a"); err != nil || code != 130 {
		t.Errorf("status file of a: %d, %v; want 130", code, err)
	}

	failed := []string{"SERVICE_RESULT=exit-code", "EXIT_CODE=exited", "EXIT_STATUS=3"}
	if got, want := runHook(t, dir, failed, "--manager", "private:/x", "p", "b"), []string{"pod", "unit-hook", "end", "--state-dir", dir, "--manager", "private:/x", "p", "b"}; !slices.Equal(got, want) {
		t.Errorf("the hook ran unitrun %q after an exit that ends the pod; want %q", got, want)
	}
	if code, err := record.ReadExitCode(dir, "p", "b"); err != nil || code != 3 {
		t.Errorf("status file of b: %d, %v; want 3", code, err)
	}

	ok := []string{"SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0"}
	if got, want := runHook(t, dir, ok, "p", "r"), []string{"pod", "unit-hook", "reap-app", "--state-dir", dir, "p", "r"}; !slices.Equal(got, want) {
		t.Errorf("the hook ran unitrun %q for an exit that restarts; want %q", got, want)
	}
	if _, err := record.ReadExitCode(dir, "p", "r"); !os.IsNotExist(err) {
		t.Errorf("status file of r written before unitrun recorded the exit: %v", err)
	}
}

// The hook hands the exit of an app of a pod that an older unitrun
// created, which saved no policies, to unitrun, having written nothing.
func TestHookWithoutPolicies(t *testing.T) {
	dir := newPod(t, "name: p\napps:\n  - name: a\n    exec: [\"/bin/true\"]\n")
	if err := os.Remove(filepath.Join(record.Dir(dir, "p"), "policy.json")); err != nil {
		t.Fatal(err)
	}
	ok := []string{"SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0"}
	if got, want := runHook(t, dir, ok, "p", "a"), []string{"pod", "unit-hook", "reap-app", "--state-dir", dir, "p", "a"}; !slices.Equal(got, want) {
		t.Errorf("the hook ran unitrun %q for a pod without policies; want %q", got, want)
	}
	if _, err := record.ReadExitCode(dir, "p", "a"); !os.IsNotExist(err) {
		t.Errorf("status file of a written before unitrun recorded the exit: %v", err)
	}
}

// The start hook starts a run itself, running no unitrun: it records the
// run's start, copies the command's output to the unit's, and executes
// the command, whose exit status is the unit's; a command that does not
// exist exits 127 with unitrun's message, and its reason is left for the
// exit hook to record.
func TestHookStartsRun(t *testing.T) {
	dir := newPod(t, `
name: p
apps:
  - name: a
    exec: ["/bin/sh", "-c", "echo hello; exit 3"]
  - name: m
    exec: ["/nonexistent/cmd"]
`)
	unitrun, ran := fakeUnitrun(t)
	if code, out := inUnit(t, pod.AppUnit("p", "a"), nil, hookArgs(unitrun, "start", dir, "p", "a")...); code != 3 || out != "hello\n" {
		t.Errorf("start of a: exit status %d, output %q; want 3, the command's", code, out)
	}
	s, err := record.ReadApp(dir, "p", "a")
	if err != nil {
		t.Fatal(err)
	}
	if s.State != record.AppRunning || s.PID == 0 || s.StartedAt.IsZero() || !s.Ready {
		t.Errorf("record of a: %+v; want running, ready, with its pid and start time", s)
	}
	if code, out := inUnit(t, pod.AppUnit("p", "m"), nil, hookArgs(unitrun, "start", dir, "p", "m")...); code != 127 || out != "unitrun: /nonexistent/cmd: command not found\n" {
		t.Errorf("start of m: exit status %d, output %q; want 127, unitrun's message", code, out)
	}
	if why, err := os.ReadFile(filepath.Join(record.Dir(dir, "p"), "apps", "m.start-error")); err != nil || string(why) != "command /nonexistent/cmd: not found\n" {
		t.Errorf("start error of m: %q, %v", why, err)
	}
	if got := ran(); got != nil {
		t.Errorf("the hook ran unitrun %q", got)
	}
}

// The start hook has unitrun start a run whose user or group is not in
// /etc/passwd or /etc/group, which NSS may know, and that of a pod with
// no spec file, having written nothing.
func TestHookStartHandsOver(t *testing.T) {
	const uid, group = "54321", "no-such-group-unitrun"
	if _, err := user.LookupId(uid); err == nil {
		t.Skipf("user %s exists on this host; the test needs one that does not", uid)
	}
	dir := newPod(t, `
name: p
apps:
  - name: u
    user: "`+uid+`"
    exec: ["/bin/true"]
  - name: g
    group: `+group+`
    exec: ["/bin/true"]
`)
	noSpec := newPod(t, "name: p\napps:\n  - name: u\n    exec: [\"/bin/true\"]\n")
	if err := os.Remove(filepath.Join(record.Dir(noSpec, "p"), "manifest.json")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, app string }{{dir, "u"}, {dir, "g"}, {noSpec, "u"}} {
		unitrun, ran := fakeUnitrun(t)
		if code, out := inUnit(t, pod.AppUnit("p", c.app), nil, hookArgs(unitrun, "start", c.dir, "p", c.app)...); code != 0 {
			t.Errorf("start of %s: exit status %d\n%s", c.app, code, out)
		}
		if got, want := ran(), []string{"pod", "unit-hook", "start", "--state-dir", c.dir, "p", c.app}; !slices.Equal(got, want) {
			t.Errorf("start of %s: the hook ran unitrun %q; want %q", c.app, got, want)
		}
		if _, err := record.ReadApp(c.dir, "p", c.app); !os.IsNotExist(err) {
			t.Errorf("record of %s written before unitrun started the run: %v", c.app, err)
		}
		if _, err := os.Stat(filepath.Join(record.Dir(c.dir, "p"), "apps", c.app+".start-error")); !os.IsNotExist(err) {
			t.Errorf("start error of %s written before unitrun started the run: %v", c.app, err)
		}
	}
}

// Each hook run by hand, outside the app's unit, is refused with exit
// status 2 and an error that says so, before it reads or writes anything:
// the app's record and the pod's files are as they were, and no unitrun
// ran.
func TestHookRefusedOutsideUnit(t *testing.T) {
	dir := newPod(t, "name: p\napps:\n  - name: a\n    exec: [\"/bin/true\"]\n")
	if err := record.WriteApp(dir, "p", record.AppStatus{Name: "a", State: record.AppRunning, StartedAt: time.Now(), PID: 1}); err != nil {
		t.Fatal(err)
	}
	was := snapshot(t, dir)
	for _, hook := range []string{"start", "log-copy", "reap-app"} {
		unitrun, ran := fakeUnitrun(t)
		cmd := exec.Command(pod.HookPath(systemdtest.Binary(t)), hookArgs(unitrun, hook, dir, "p", "a")...)
		cmd.Env = []string{"SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0"}
		out, err := cmd.CombinedOutput()
		want := "unitrun: pod unit-hook " + hook + ": refused outside its unit: only " + pod.AppUnit("p", "a") + " runs it"
		if cmd.ProcessState.ExitCode() != 2 || !strings.HasPrefix(string(out), want) {
			t.Errorf("%s by hand: %v, output %q; want exit status 2, %q", hook, err, out, want)
		}
		if got := ran(); got != nil {
			t.Errorf("%s by hand ran unitrun %q", hook, got)
		}
	}
	if now := snapshot(t, dir); now != was {
		t.Errorf("the pod's state changed:\n%s\nwas:\n%s", now, was)
	}
}

// snapshot returns every file under dir with its content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		fmt.Fprintf(&b, "%s %q %v\n", path, data, err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
