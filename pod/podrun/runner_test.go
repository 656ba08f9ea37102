package podrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

// newRunner returns a Runner on the test manager with a state directory of
// its own.
func newRunner(t *testing.T) *Runner {
	t.Helper()
	return &Runner{
		Mgr:      systemdtest.Conn(t),
		StateDir: t.TempDir(),
		Binary:   systemdtest.Binary(t),
		Manager:  os.Getenv("UNITRUN_MANAGER"),
	}
}

// run creates and starts the pod of manifest, removed when the test ends,
// and returns its name. A pod that failed while it started is no error
// here: the test checks its outcome.
func run(t *testing.T, r *Runner, manifest string, policy record.ExitPolicy) string {
	t.Helper()
	name := create(t, r, manifest)
	var ended *EndedError
	if err := r.Start(context.Background(), name, policy); err != nil && !errors.As(err, &ended) {
		t.Fatal(err)
	}
	return name
}

// create creates the pod of manifest, removed when the test ends, and
// returns its name.
func create(t *testing.T, r *Runner, manifest string) string {
	t.Helper()
	m, err := r.Create(context.Background(), []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Remove(context.Background(), m.Name, true); err != nil {
			t.Errorf("remove pod %s: %v", m.Name, err)
		}
	})
	return m.Name
}

// wait waits for pod name to end and returns its status.
func wait(t *testing.T, r *Runner, name string) pod.PodStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.Wait(ctx, name)
	if err != nil {
		t.Fatalf("wait for pod %s: %v (status %+v)", name, err, s)
	}
	return s
}

// appOf returns the status of app name in s.
func appOf(t *testing.T, s pod.PodStatus, name string) record.AppStatus {
	t.Helper()
	for _, a := range s.Apps {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("pod %s has no app %s", s.Name, name)
	return record.AppStatus{}
}

// wantApp checks the final state and exit code of app in s.
func wantApp(t *testing.T, s pod.PodStatus, name string, state record.AppState, code int) {
	t.Helper()
	a := appOf(t, s, name)
	if a.State != state || a.ExitCode == nil || *a.ExitCode != code {
		t.Errorf("app %s: %s, exit code %s; want %s, %d", name, a.State, fmtCode(a.ExitCode), state, code)
	}
	if a.StartedAt.IsZero() || a.FinishedAt.Before(a.StartedAt) {
		t.Errorf("app %s: started at %v, finished at %v", name, a.StartedAt, a.FinishedAt)
	}
}

func fmtCode(c *int) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprint(*c)
}

// wantPod checks the phase and exit code of s.
func wantPod(t *testing.T, s pod.PodStatus, phase pod.Phase, code int) {
	t.Helper()
	if s.Phase != phase || s.ExitCode == nil || *s.ExitCode != code {
		t.Errorf("pod %s: %s, exit code %s; want %s, %d", s.Name, s.Phase, fmtCode(s.ExitCode), phase, code)
	}
}

// waitFile waits until path exists and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	for range 600 {
		data, err := os.ReadFile(path)
		if err == nil {
			return string(data)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
	return ""
}

func TestPodWriterReader(t *testing.T) {
	r := newRunner(t)
	shared := filepath.Join(t.TempDir(), "shared")
	name := run(t, r, fmt.Sprintf(`
name: wr
apps:
  - name: writer
    exec: ["/bin/sh", "-c", "echo hello > %[1]s"]
  - name: reader
    exec: ["/bin/sh", "-c", "sleep 2; cat %[1]s"]
`, shared), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	wantApp(t, s, "writer", record.AppExited, 0)
	wantApp(t, s, "reader", record.AppExited, 0)
	if data, err := os.ReadFile(pod.LogFile(r.StateDir, name, "reader")); err != nil || string(data) != "hello\n" {
		t.Errorf("reader's log: %q, %v", data, err)
	}
	if c, err := record.ReadExitCode(r.StateDir, name, "reader"); err != nil || c != 0 {
		t.Errorf("reader's status file: %d, %v", c, err)
	}
}

func TestPodFirstFailure(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: ff
apps:
  - name: fails
    exec: ["/bin/sh", "-c", "sleep 0.2; exit 4"]
  - name: ok
    exec: ["/bin/true"]
  - name: sleeps
    exec: ["/bin/sleep", "600"]
`, "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 4)
	wantApp(t, s, "fails", record.AppFailed, 4)
	wantApp(t, s, "ok", record.AppExited, 0)
	// Stopped by the pod's end: SIGTERM, which systemd counts as clean.
	wantApp(t, s, "sleeps", record.AppExited, 128+15)
	if a := appOf(t, s, "sleeps"); a.Signal != "TERM" {
		t.Errorf("sleeps: signal %q, want TERM", a.Signal)
	}
}

func TestPodExitPolicyAny(t *testing.T) {
	r := newRunner(t)
	// quick ends once sleeps's command runs: a stop before it would
	// rightly fail sleeps ("ended before its command ran").
	mark := filepath.Join(t.TempDir(), "sleeps")
	name := run(t, r, fmt.Sprintf(`
name: any
exitPolicy: all
apps:
  - name: quick
    exec: ["/bin/sh", "-c", "while [ ! -e %[1]s ]; do sleep 0.05; done"]
  - name: sleeps
    exec: ["/bin/sh", "-c", "touch %[1]s; exec sleep 600"]
`, mark), record.AnyExit)
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	wantApp(t, s, "quick", record.AppExited, 0)
	wantApp(t, s, "sleeps", record.AppExited, 128+15)
	if s.ExitPolicy != record.AnyExit {
		t.Errorf("exit policy %s, want the override %s", s.ExitPolicy, record.AnyExit)
	}
}

func TestPodExitPolicyAll(t *testing.T) {
	r := newRunner(t)
	marker := filepath.Join(t.TempDir(), "late")
	name := run(t, r, fmt.Sprintf(`
name: all
exitPolicy: all
apps:
  - name: fails
    exec: ["/bin/sh", "-c", "exit 3"]
  - name: late
    exec: ["/bin/sh", "-c", "sleep 1; touch %s"]
`, marker), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 3)
	wantApp(t, s, "fails", record.AppFailed, 3)
	wantApp(t, s, "late", record.AppExited, 0)
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("late did not run to completion: %v", err)
	}
}

func TestPodStatusFileAtOnce(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: early
apps:
  - name: quick
    exec: ["/bin/sh", "-c", "exit 0"]
  - name: sleeps
    exec: ["/bin/sleep", "600"]
`, "")
	got := waitFile(t, filepath.Join(r.StateDir, "pods", name, "status", "quick"))
	if got != "0\n" {
		t.Errorf("status file of quick: %q", got)
	}
	s, err := r.Status(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase != pod.PodRunning || appOf(t, s, "sleeps").State != record.AppRunning {
		t.Errorf("pod %s, sleeps %s: want Running, running", s.Phase, appOf(t, s, "sleeps").State)
	}
	s, err = r.Stop(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPod(t, s, pod.PodSucceeded, 0)
}

// A pod stopped the moment Start returns ends as any stopped pod does:
// Start returns once every app's run has begun (its exec hook has
// recorded it), so the stop ends runs that started: each app exited 143,
// the pod Succeeded. A Start that returned once the apps' units had
// started (a Type=exec unit has once its exec hook runs, before the hook
// records the run) left them to be stopped before that record, failed,
// "ended before its command ran", and the pod Failed 143.
func TestPodStopRightAfterStart(t *testing.T) {
	for _, iso := range []pod.Isolation{pod.NoIsolation, pod.Namespaces} {
		t.Run(string(iso), func(t *testing.T) {
			r := newRunner(t)
			name := run(t, r, fmt.Sprintf(`
name: startstop-%s
isolation: %s
apps:
  - name: a
    exec: ["/bin/sleep", "600"]
  - name: b
    exec: ["/bin/sleep", "600"]
  - name: c
    exec: ["/bin/sleep", "600"]
  - name: d
    exec: ["/bin/sleep", "600"]
`, iso, iso), "")
			s, err := pod.ReadPod(r.StateDir, name)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range s.Apps {
				if a.State != record.AppRunning {
					t.Errorf("app %s is %s once Start returned; want running", a.Name, a.State)
				}
			}
			s, err = r.Stop(context.Background(), name, 0)
			if err != nil {
				t.Fatal(err)
			}
			wantPod(t, s, pod.PodSucceeded, 0)
			for _, a := range []string{"a", "b", "c", "d"} {
				wantApp(t, s, a, record.AppExited, 128+15)
			}
		})
	}
}

func TestPodStopSavesEveryStatus(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: stopped
restartPolicy: Always
apps:
  - name: a
    exec: ["/bin/sleep", "600"]
  - name: b
    exec: ["/bin/sh", "-c", "trap 'exit 7' TERM; echo trapped; sleep 600 & wait"]
  - name: c
    exec: ["/bin/sleep", "600"]
`, "")
	for _, a := range []string{"a", "b", "c"} {
		for appState(t, r, name, a) != record.AppRunning {
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Running is recorded before the exec: b's trap must be set too.
	waitLog(t, r, name, "b", "trapped\n")
	s, err := r.Stop(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPod(t, s, pod.PodFailed, 7)
	wantApp(t, s, "a", record.AppExited, 128+15)
	wantApp(t, s, "b", record.AppFailed, 7)
	wantApp(t, s, "c", record.AppExited, 128+15)
	for _, a := range []string{"a", "b", "c"} {
		if _, err := record.ReadExitCode(r.StateDir, name, a); err != nil {
			t.Errorf("status file of %s: %v", a, err)
		}
		if n := appOf(t, s, a).Restarts; n != 0 {
			t.Errorf("%s restarted %d times at stop", a, n)
		}
	}
}

// A pod stopped while its init app runs ends with that app's exit: its
// shutdown service computes the pod's exit code only once the init app
// has stopped and its exit is recorded, so the pod is Failed with the init
// app's code (an init app stopped by a signal failed), and the app after
// it never ran. The init app takes its time to exit at the stop: a
// shutdown that did not wait for it would find no exit and call the pod
// Succeeded.
func TestPodStoppedDuringInit(t *testing.T) {
	r := newRunner(t)
	name := create(t, r, `
name: interrupted
apps:
  - name: setup
    init: true
    exec: ["/bin/sh", "-c", "trap 'sleep 1; exit 7' TERM; echo trapped; sleep 600 & wait"]
  - name: srv
    exec: ["/bin/sleep", "600"]
`)
	// The start returns once the init app has ended: here, at the stop.
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background(), name, "") }()
	waitLog(t, r, name, "setup", "trapped\n")
	s, err := r.Stop(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	wantPod(t, s, pod.PodFailed, 7)
	wantApp(t, s, "setup", record.AppFailed, 7)
	if a := appOf(t, s, "srv"); a.State != record.AppWaiting || a.ExitCode != nil {
		t.Errorf("srv, after an init app that never succeeded: %+v; want waiting, never run", a)
	}
}

// appState returns the recorded state of app.
func appState(t *testing.T, r *Runner, name, app string) record.AppState {
	t.Helper()
	s, err := record.ReadAppOrNew(r.StateDir, name, app)
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

func TestPodRestartPolicies(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	// count prints how many times it has run, counting in file NAME.
	count := func(name, then string) string {
		return fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s; %[2]s`, filepath.Join(dir, name), then)
	}
	manifest, err := json.Marshal(map[string]any{
		"name":           "restarts",
		"exitPolicy":     "all",
		"restartBackoff": map[string]string{"initial": "100ms", "max": "200ms"},
		"apps": []map[string]any{
			{"name": "always", "restartPolicy": "Always", "exec": []string{"/bin/sh", "-c", count("always", `[ $n -ge 3 ] && exec sleep 600; exit 0`)}},
			{"name": "onfailure", "restartPolicy": "OnFailure", "exec": []string{"/bin/sh", "-c", count("onfailure", `[ $n -ge 3 ] && exit 0; exit 1`)}},
			{"name": "never", "restartPolicy": "Never", "exec": []string{"/bin/sh", "-c", count("never", "exit 1")}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	name := run(t, r, string(manifest), "")
	for appState(t, r, name, "onfailure") != record.AppExited || appState(t, r, name, "never") != record.AppFailed {
		time.Sleep(50 * time.Millisecond)
	}
	for {
		s, err := record.ReadAppOrNew(r.StateDir, name, "always")
		if err != nil {
			t.Fatal(err)
		}
		if s.State == record.AppRunning && s.Restarts == 2 {
			break
		}
		if s.Restarts > 2 {
			t.Fatalf("always restarted %d times, want 2", s.Restarts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	props, err := r.Mgr.Properties(context.Background(), pod.AppUnit(name, "onfailure"), "org.freedesktop.systemd1.Service")
	if err != nil {
		t.Fatal(err)
	}
	if n := props["NRestarts"].Value(); n != uint32(2) {
		t.Errorf("systemd's NRestarts of onfailure: %v, want 2", n)
	}
	s, err := r.Stop(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPod(t, s, pod.PodFailed, 1)
	for app, want := range map[string]int{"always": 2, "onfailure": 2, "never": 0} {
		if got := appOf(t, s, app).Restarts; got != want {
			t.Errorf("%s: %d restarts, want %d", app, got, want)
		}
	}
	wantApp(t, s, "always", record.AppExited, 128+15)
	wantApp(t, s, "onfailure", record.AppExited, 0)
	wantApp(t, s, "never", record.AppFailed, 1)
}

func TestPodFiftyApps(t *testing.T) {
	r := newRunner(t)
	var b strings.Builder
	b.WriteString("name: fifty\napps:\n")
	for i := range 50 {
		fmt.Fprintf(&b, "  - name: app%d\n    exec: [\"/bin/sh\", \"-c\", \"echo %d\"]\n", i, i)
	}
	name := run(t, r, b.String(), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	for i := range 50 {
		a := fmt.Sprintf("app%d", i)
		wantApp(t, s, a, record.AppExited, 0)
		if data, err := os.ReadFile(pod.LogFile(r.StateDir, name, a)); err != nil || string(data) != fmt.Sprintf("%d\n", i) {
			t.Errorf("log of %s: %q, %v", a, data, err)
		}
	}
}

// TestPodNastyStrings passes argv and environment values that unit files
// must escape through the rendered units and checks that they arrive
// exactly.
func TestPodNastyStrings(t *testing.T) {
	r := newRunner(t)
	out := filepath.Join(t.TempDir(), "out")
	nasty := []string{"two words", `dq"uote`, "sq'uote", "%h", "%%", "$HOME", "${HOME}", "line\nbreak", `back\slash`, " lead", "trail ", ";", ""}
	exec := append([]string{"/bin/sh", "-c", `printf '%s\0' "$@" > ` + out + `; printf '%s' "$NASTY" > ` + out + `.env`, "sh"}, nasty...)
	manifest, err := json.Marshal(map[string]any{
		"name": "nasty",
		"apps": []map[string]any{{"name": "args", "exec": exec, "env": map[string]string{"NASTY": strings.Join(nasty, "|")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	name := run(t, r, string(manifest), "")
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(nasty, "\x00") + "\x00"; string(got) != want {
		t.Errorf("argv arrived as %q, want %q", got, want)
	}
	if got, err := os.ReadFile(out + ".env"); err != nil || string(got) != strings.Join(nasty, "|") {
		t.Errorf("NASTY arrived as %q (%v), want %q", got, err, strings.Join(nasty, "|"))
	}
}

// TestPodAppEnvironment runs an app that prints its environment: it holds
// PATH, HOSTNAME, HOME and the app's env (which overrides PATH), and
// nothing of the manager's or the service's (INVOCATION_ID, MANAGERPID,
// XDG_RUNTIME_DIR, SYSTEMD_UNIT_PATH, ...).
func TestPodAppEnvironment(t *testing.T) {
	r := newRunner(t)
	manifest, err := json.Marshal(map[string]any{
		"name": "environ",
		"apps": []map[string]any{{"name": "a", "exec": []string{"/usr/bin/env", "-0"}, "env": map[string]string{"A": "1", "PATH": "/bin:/usr/bin"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	name := run(t, r, string(manifest), "")
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	data, err := os.ReadFile(pod.LogFile(r.StateDir, name, "a"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	host, _ := os.Hostname()
	want := map[string]string{"A": "1", "PATH": "/bin:/usr/bin", "HOSTNAME": host, "HOME": "/root"}
	if !maps.Equal(got, want) {
		t.Errorf("the app's environment is %v, want %v", got, want)
	}
}

// TestPodTerminationMessage runs an app, as an unprivileged user, that
// writes to its terminationMessagePath, a file of the host's /dev that
// does not exist: the message lands in the pod's termination file, and
// the host's path is not written.
func TestPodTerminationMessage(t *testing.T) {
	r := newRunner(t)
	const path = "/dev/termination-unitrun-test"
	manifest := `{"name": "lastword", "apps": [{"name": "a", "user": "65534", "terminationMessagePath": "` + path + `",
	  "exec": ["/bin/sh", "-c", "echo bye > ` + path + `; exit 3"]}]}`
	name := run(t, r, manifest, "")
	// systemd made the mount point; it holds nothing.
	t.Cleanup(func() { os.Remove(path) })
	wantPod(t, wait(t, r, name), pod.PodFailed, 3)
	if got, err := os.ReadFile(record.TerminationFile(r.StateDir, name, "a")); err != nil || string(got) != "bye\n" {
		t.Errorf("termination file: %q, %v; want %q", got, err, "bye\n")
	}
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
		t.Errorf("the host's %s holds %q", path, data)
	}
}

// TestPodMounts runs an app, as an unprivileged user, that writes into a
// directory bound read-write, reads a file bound read-only and fails to
// write it: the host directory holds what the app wrote, the host file is
// unchanged, and the host's own paths at the mount points hold nothing.
func TestPodMounts(t *testing.T) {
	r := newRunner(t)
	src := t.TempDir()
	if err := os.Chmod(src, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "token"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, file := "/run/unitrun-test-mounts-dir", "/run/unitrun-test-mounts-token"
	t.Cleanup(func() { os.Remove(dir); os.Remove(file) })
	manifest, err := json.Marshal(map[string]any{
		"name": "mounts",
		"apps": []map[string]any{{
			"name": "a", "user": "65534",
			"exec": []string{"/bin/sh", "-c", "cat " + file + " > " + dir + "/copy && ! echo x 2>/dev/null > " + file},
			"mounts": []map[string]any{
				{"source": src, "path": dir},
				{"source": filepath.Join(src, "token"), "path": file, "readOnly": true},
			},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	name := run(t, r, string(manifest), "")
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	if got, err := os.ReadFile(filepath.Join(src, "copy")); err != nil || string(got) != "secret" {
		t.Errorf("copy: %q, %v; want %q", got, err, "secret")
	}
	if got, err := os.ReadFile(filepath.Join(src, "token")); err != nil || string(got) != "secret" {
		t.Errorf("token: %q, %v; want it unchanged", got, err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("the host's %s: %v, %v; want an empty directory", dir, entries, err)
	}
}

// TestPodCapabilities runs root apps that print the capabilities they
// hold: one with capabilities [CHOWN, KILL] holds those two alone, in its
// bounding, permitted and effective sets; one with [] holds none; one
// without the field holds root's.
func TestPodCapabilities(t *testing.T) {
	r := newRunner(t)
	show := []string{"/bin/sh", "-c", "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status"}
	manifest, err := json.Marshal(map[string]any{
		"name": "caps",
		"apps": []map[string]any{
			{"name": "two", "exec": show, "capabilities": []string{"CHOWN", "KILL"}},
			{"name": "none", "exec": show, "capabilities": []string{}},
			{"name": "root", "exec": show},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	name := run(t, r, string(manifest), "all")
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	// Root's: the test's own bounding set, as the manager has it.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	_, bnd, _ := strings.Cut(string(status), "CapBnd:\t")
	root, err := strconv.ParseUint(bnd[:16], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	for app, mask := range map[string]uint64{"two": 1<<0 | 1<<5, "none": 0, "root": root} {
		data, err := os.ReadFile(pod.LogFile(r.StateDir, name, app))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("CapPrm:\t%016x\nCapEff:\t%016x\nCapBnd:\t%016x\n", mask, mask, mask)
		if string(data) != want {
			t.Errorf("app %s holds\n%s, want\n%s", app, data, want)
		}
	}
}

func TestPodRemoveLeavesNothing(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	m, err := r.Create(ctx, []byte("name: gone\napps:\n  - name: sleeps\n    exec: [/bin/sleep, \"600\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, []byte("name: gone\napps:\n  - name: other\n    exec: [/bin/true]\n")); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second create of pod gone: %v, want already exists", err)
	}
	if err := r.Start(ctx, m.Name, ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, m.Name, false); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("remove of a running pod: %v, want a refusal", err)
	}
	if err := r.Remove(ctx, m.Name, true); err != nil {
		t.Fatal(err)
	}
	names, err := r.Mgr.ListUnitNames(ctx, "unitrun-pod")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Errorf("units left after pod rm: %v", names)
	}
	unitDir, err := r.Mgr.RuntimeUnitDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range pod.Nodes(m) {
		if _, err := os.Stat(filepath.Join(unitDir, n.Name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("unit file %s left after pod rm: %v", n.Name, err)
		}
	}
	if _, err := os.Stat(record.Dir(r.StateDir, m.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state of pod gone left after pod rm: %v", err)
	}
}

func TestPodInitApps(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	name := run(t, r, fmt.Sprintf(`
name: inits
apps:
  - name: first
    init: true
    exec: ["/bin/sh", "-c", "echo 1 > %[1]s/first"]
  - name: second
    init: true
    exec: ["/bin/sh", "-c", "cat %[1]s/first > %[1]s/second"]
  - name: main
    exec: ["/bin/cat", "%[1]s/second"]
`, dir), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	for _, a := range []string{"first", "second", "main"} {
		wantApp(t, s, a, record.AppExited, 0)
	}
	if data, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "main")); string(data) != "1\n" {
		t.Errorf("main ran before the init apps finished: its output is %q", data)
	}

	failing := run(t, r, `
name: init-fails
apps:
  - name: setup
    init: true
    exec: ["/bin/sh", "-c", "exit 9"]
  - name: main
    exec: ["/bin/true"]
`, "")
	s = wait(t, r, failing)
	wantPod(t, s, pod.PodFailed, 9)
	wantApp(t, s, "setup", record.AppFailed, 9)
	if a := appOf(t, s, "main"); a.State != record.AppWaiting {
		t.Errorf("main after a failed init app: %s, want waiting", a.State)
	}
}

func TestPodStopTimeoutKills(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: stubborn
apps:
  - name: ignores
    stopTimeout: 5min
    exec: ["/bin/sh", "-c", "trap '' TERM; echo trapped; while :; do sleep 0.1; done"]
  - name: polite
    exec: ["/bin/sleep", "600"]
`, "")
	stopStubborn(t, r, name)
}

// stopStubborn stops pod name, whose app "ignores" ignores SIGTERM once it
// has written "trapped", with a timeout, and checks that it was killed and
// every exit recorded.
func stopStubborn(t *testing.T, r *Runner, name string) {
	t.Helper()
	waitLog(t, r, name, "ignores", "trapped\n")
	// A run stopped before it executed its command has no start.
	for appState(t, r, name, "polite") != record.AppRunning {
		time.Sleep(10 * time.Millisecond)
	}
	s, err := r.Stop(context.Background(), name, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	wantPod(t, s, pod.PodFailed, 128+9)
	wantApp(t, s, "ignores", record.AppFailed, 128+9)
	wantApp(t, s, "polite", record.AppExited, 128+15)
}

func TestPodRemoveCreated(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	m, err := r.Create(ctx, []byte("name: never-started\napps:\n  - name: a\n    exec: [/bin/true]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := r.Status(ctx, m.Name); err != nil || s.Phase != pod.PodPending || appOf(t, s, "a").State != record.AppWaiting {
		t.Errorf("status of a created pod: %+v, %v", s, err)
	}
	if err := r.Remove(ctx, m.Name, false); err != nil {
		t.Fatal(err)
	}
	if pods, err := pod.List(r.StateDir); err != nil || len(pods) != 0 {
		t.Errorf("pods after rm: %v, %v", pods, err)
	}
}

// Apps whose names have the 55 and 63 characters of Kubernetes container
// names, in a pod whose name has unitrun's 29, run: each records its
// exit, its output goes to its log, and its readiness probe's unit runs.
func TestLongAppNames(t *testing.T) {
	r := newRunner(t)
	app55 := strings.Repeat("sidecar-", 6) + "logger0"
	app63 := strings.Repeat("container-", 6) + "api"
	name := run(t, r, fmt.Sprintf(`
name: long-app-names-0123456789abc
apps:
  - name: %s
    exec: ["/bin/sh", "-c", "echo fifty-five"]
  - name: %s
    exec: ["/bin/sh", "-c", "echo sixty-three; sleep 1; exit 3"]
    readinessProbe: {exec: ["/bin/true"], periodSeconds: 1}
`, app55, app63), "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 3)
	wantApp(t, s, app55, record.AppExited, 0)
	wantApp(t, s, app63, record.AppFailed, 3)
	for app, out := range map[string]string{app55: "fifty-five\n", app63: "sixty-three\n"} {
		if data, err := os.ReadFile(pod.LogFile(r.StateDir, name, app)); err != nil || string(data) != out {
			t.Errorf("%s's log: %q, %v; want %q", app, data, err, out)
		}
	}
}

// A command given by name is looked up in the app's PATH (its env's, else
// the standard one), as a container runtime does, for the app and for its
// exec probe; argv[0] stays the name. A name found nowhere fails the run
// with 127 and says where it was looked for.
func TestCommandByName(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "hello"), []byte("#!/bin/sh\necho hello from PATH\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "done")
	name := run(t, r, fmt.Sprintf(`
name: by-name
exitPolicy: all
apps:
  - name: named
    exec: ["sh", "-c", "echo \"$0\" ran"]
  - name: custom
    exec: ["hello"]
    env: {PATH: %s}
  - name: missing
    exec: ["no-such-command-unitrun"]
  - name: probed
    exec: ["sh", "-c", "while ! test -e %s; do sleep 0.1; done"]
    readinessProbe: {exec: ["true"], periodSeconds: 1}
`, bin, done), "")
	poll(t, r, name, func(s pod.PodStatus) bool { return appOf(t, s, "probed").Ready })
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 127)
	wantApp(t, s, "named", record.AppExited, 0)
	wantApp(t, s, "custom", record.AppExited, 0)
	wantApp(t, s, "missing", record.AppFailed, 127)
	wantApp(t, s, "probed", record.AppExited, 0)
	if msg, want := appOf(t, s, "missing").Message, "command no-such-command-unitrun: executable file not found in $PATH (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)"; msg != want {
		t.Errorf("missing: message %q, want %q", msg, want)
	}
	for app, out := range map[string]string{"named": "sh ran\n", "custom": "hello from PATH\n"} {
		if data, err := os.ReadFile(pod.LogFile(r.StateDir, name, app)); err != nil || string(data) != out {
			t.Errorf("%s's log: %q, %v; want %q", app, data, err, out)
		}
	}
}

// A stop whose context has ended before it reached systemd (the second
// Ctrl-C of pod run, which comes at once after the first) still stops
// the pod: the context ends the wait, not the stop. Stop returns the
// context's error, and the pod ends with every exit recorded.
func TestPodStopCanceledStillStops(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: stopcanceled
apps:
  - name: a
    exec: ["/bin/sleep", "600"]
`, "")
	for appState(t, r, name, "a") != record.AppRunning {
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Stop(ctx, name, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with an ended context: %v, want context canceled", err)
	}
	// A pod never stopped would be waited for forever: a minute says so.
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	s, err := r.Wait(wctx, name)
	if err != nil {
		t.Fatalf("the pod did not end once stopped: %v", err)
	}
	wantPod(t, s, pod.PodSucceeded, 0)
	wantApp(t, s, "a", record.AppExited, 128+15)
}

// A pod's removal stops the parent slices once it sees no other pod's
// slice in them; a pod whose start is asked for between that look and the
// stop (as the node starts and removes pods side by side) waits for the
// stop and then runs, its app active: the start's job is not canceled by
// the stop of the parents, nor its app stopped with them.
func TestPodStartBesideParentsStop(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	first := run(t, r, "name: first\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n", "")
	second := create(t, r, "name: second\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n")
	// The removal of first as Remove makes it, the second pod's start
	// asked for between the look at the parents and their stop.
	if err := r.stopUnits(ctx, []string{pod.SliceUnit(first), pod.TargetUnit(first)}); err != nil {
		t.Fatal(err)
	}
	unlock, err := r.lockParents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := r.idleParents(ctx, pod.SliceUnit(first))
	if err != nil || len(idle) != len(parentSlices) {
		unlock()
		t.Fatalf("parent slices to stop with the first pod stopped and no other pod started: %v, %v; want %v", idle, err, parentSlices)
	}
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx, second, "") }()
	// Until the second pod's start job is queued, or for a second: held
	// by the lock, it queues none.
	target := pod.TargetUnit(second)
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		props, err := r.Mgr.Properties(ctx, target, manager.UnitIface)
		if err == nil && (props["ActiveState"].Value() != "inactive" || manager.JobPending(props)) {
			break
		}
	}
	err = r.stopUnits(ctx, idle)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatalf("start of the second pod beside the stop of the parents: %v", err)
	}
	props, err := r.Mgr.Properties(ctx, pod.AppUnit(second, "a"), manager.UnitIface)
	if state := props["ActiveState"].Value(); err != nil || state != "active" {
		t.Errorf("the second pod's app after the parents' stop: %v, %v; want active", state, err)
	}
	if s, err := r.Status(ctx, second); err != nil || s.Phase != pod.PodRunning || appOf(t, s, "a").State != record.AppRunning {
		t.Errorf("the second pod after the parents' stop: %+v, %v; want it running", s, err)
	}
}
