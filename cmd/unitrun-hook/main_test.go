package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
)

// allowed are every package the hook may link, but the standard
// library's internal ones, which come with these: what recording an exit
// and copying a log need. Anything more (package pod with its YAML and
// unit graph, D-Bus, the manager, net, crypto, regexp, os/user) is code
// whose init and size every exit of every app would pay for, which is
// what the hook is for not to pay.
var allowed = []string{
	"github.com/unitrun/unitrun/cmd/unitrun-hook",
	"github.com/unitrun/unitrun/pod/record",
	"github.com/unitrun/unitrun/pod/logcopy",
	"github.com/unitrun/unitrun/unit/exit",
	"github.com/unitrun/unitrun/internal/atomicfile",
	"bytes", "cmp", "context", "encoding", "encoding/base64", "encoding/json",
	"errors", "fmt", "io", "io/fs", "iter", "math", "math/bits", "os",
	"os/exec", "os/signal", "path", "path/filepath", "reflect", "runtime",
	"slices", "strconv", "strings", "sync", "sync/atomic", "syscall", "time",
	"unicode", "unicode/utf16", "unicode/utf8", "unsafe",
}

// TestDeps fails when the hook links a package that is not allowed.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dep, std, _ := strings.Cut(line, " ")
		internal := std == "true" && (strings.HasPrefix(dep, "internal/") || strings.Contains(dep, "/internal/") || strings.HasPrefix(dep, "vendor/"))
		if !internal && !slices.Contains(allowed, dep) {
			t.Errorf("unitrun-hook links %s: it starts at every exit of every app; keep it to the packages allowed", dep)
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
	if err := os.MkdirAll(pod.Dir(dir, m.Name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := pod.WriteState(dir, m, []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// binDir holds the hook that build builds, for every test of the binary.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// build builds the hook, once per test binary, and returns its path.
var build = sync.OnceValue(func() func(*testing.T) string {
	dir, err := os.MkdirTemp("", "unitrun-hook-")
	binDir = dir
	bin := filepath.Join(dir, "unitrun-hook")
	var out []byte
	if err == nil {
		out, err = exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	}
	return func(t *testing.T) string {
		t.Helper()
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		return bin
	}
})

// runHook runs the hook's main as systemd runs it at an exit that env
// describes, with unitrun a script that writes the arguments it is given
// to a file, and returns those arguments (nil if the hook ran no unitrun).
func runHook(t *testing.T, stateDir string, env []string, args ...string) []string {
	t.Helper()
	bin := build()(t)
	argsFile := filepath.Join(t.TempDir(), "args")
	unitrun := filepath.Join(t.TempDir(), "unitrun")
	if err := os.WriteFile(unitrun, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+argsFile+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{unitrun, "pod", "reap-app", "--state-dir", stateDir}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unitrun-hook: %v\n%s", err, out)
	}
	data, err := os.ReadFile(argsFile)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
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
	if err := pod.WriteApp(dir, "p", pod.AppStatus{Name: "a", State: pod.AppRunning, StartedAt: time.Now(), PID: 1}); err != nil {
		t.Fatal(err)
	}
	killed := []string{"SERVICE_RESULT=success", "EXIT_CODE=killed", "EXIT_STATUS=INT", "INVOCATION_ID=0123456789abcdef0123456789abcdef"}
	if got := runHook(t, dir, killed, "p", "a"); got != nil {
		t.Errorf("the hook ran unitrun %q for an exit it records itself", got)
	}
	s, err := pod.ReadApp(dir, "p", "a")
	if err != nil {
		t.Fatal(err)
	}
	if s.State != pod.AppExited || s.ExitCode == nil || *s.ExitCode != 130 || s.Signal != "INT" || s.Result != "success" ||
		s.Invocation != "0123456789abcdef0123456789abcdef" || s.PID != 0 || s.FinishedAt.IsZero() {
		t.Errorf("record of a: %+v; want exited (killed by INT: 130, signal INT, result success), the invocation, finished, no pid", s)
	}
	if code, err := pod.ReadExitCode(dir, "p", "a"); err != nil || code != 130 {
		t.Errorf("status file of a: %d, %v; want 130", code, err)
	}

	failed := []string{"SERVICE_RESULT=exit-code", "EXIT_CODE=exited", "EXIT_STATUS=3"}
	if got, want := runHook(t, dir, failed, "--manager", "private:/x", "p", "b"), []string{"pod", "end", "--state-dir", dir, "--manager", "private:/x", "p"}; !slices.Equal(got, want) {
		t.Errorf("the hook ran unitrun %q after an exit that ends the pod; want %q", got, want)
	}
	if code, err := pod.ReadExitCode(dir, "p", "b"); err != nil || code != 3 {
		t.Errorf("status file of b: %d, %v; want 3", code, err)
	}

	ok := []string{"SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0"}
	if got, want := runHook(t, dir, ok, "p", "r"), []string{"pod", "reap-app", "--state-dir", dir, "p", "r"}; !slices.Equal(got, want) {
		t.Errorf("the hook ran unitrun %q for an exit that restarts; want %q", got, want)
	}
	if _, err := pod.ReadExitCode(dir, "p", "r"); !os.IsNotExist(err) {
		t.Errorf("status file of r written before unitrun recorded the exit: %v", err)
	}
}

// The hook hands the exit of an app of a pod that an older unitrun
// created, which saved no policies, to unitrun, having written nothing.
func TestHookWithoutPolicies(t *testing.T) {
	dir := newPod(t, "name: p\napps:\n  - name: a\n    exec: [\"/bin/true\"]\n")
	if err := os.Remove(filepath.Join(pod.Dir(dir, "p"), "policy.json")); err != nil {
		t.Fatal(err)
	}
	ok := []string{"SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0"}
	if got, want := runHook(t, dir, ok, "p", "a"), []string{"pod", "reap-app", "--state-dir", dir, "p", "a"}; !slices.Equal(got, want) {
		t.Errorf("the hook ran unitrun %q for a pod without policies; want %q", got, want)
	}
	if _, err := pod.ReadExitCode(dir, "p", "a"); !os.IsNotExist(err) {
		t.Errorf("status file of a written before unitrun recorded the exit: %v", err)
	}
}
