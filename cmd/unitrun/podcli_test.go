package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// podLeft lists what pod name left: its state directory's entries, its
// unit files and its units loaded in the test manager.
func podLeft(t *testing.T, dir, name string) []string {
	t.Helper()
	var left []string
	if _, err := os.Lstat(filepath.Join(dir, "pods", name)); err == nil {
		left = append(left, "state dir pods/"+name)
	}
	prefix := "unitrun-pod-" + name
	entries, _ := os.ReadDir(systemdtest.RuntimeUnitDir(t))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix+".") || strings.HasPrefix(e.Name(), prefix+"-") {
			left = append(left, "unit file "+e.Name())
		}
	}
	loaded, err := systemdtest.Conn(t).ListUnitNames(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range loaded {
		left = append(left, "loaded unit "+u)
	}
	return left
}

// podStatus returns "pod status --json NAME", decoded.
func podStatus(t *testing.T, dir, name string) podView {
	t.Helper()
	out, errs, code := podCLI(t, dir, "status", "--json", name)
	var v podView
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("pod status --json %s: exit %d, %v: %q, %q", name, code, err, out, errs)
	}
	return v
}

// A bad --exit-policy is refused with exit 2 before anything is created,
// so that the next, correct run is not blocked by a Pending pod.
func TestPodBadExitPolicyLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := manifestFile(t, "name: policed\napps:\n  - name: a\n    exec: [/bin/true]\n")
	_, errs, code := podCLI(t, dir, "run", "--exit-policy", "sometimes", path)
	if code != exitUsage || errs != "unitrun: --exit-policy \"sometimes\": must be first-failure, any or all\n" {
		t.Errorf("pod run --exit-policy sometimes: exit %d, stderr %q; want 2 naming the flag", code, errs)
	}
	if left := podLeft(t, dir, "policed"); len(left) > 0 {
		t.Errorf("a refused pod run left %v", left)
	}
	if _, errs, code := podCLI(t, dir, "run", "-q", path); code != 0 {
		t.Errorf("the correct run after it: exit %d, %q", code, errs)
	}
	if _, errs, code := podCLI(t, dir, "rm", "policed"); code != 0 {
		t.Fatalf("pod rm: exit %d, %q", code, errs)
	}
	if _, errs, code := podCLI(t, dir, "create", path); code != 0 {
		t.Fatalf("pod create: exit %d, %q", code, errs)
	}
	rmPod(t, dir, "policed")
	if _, errs, code := podCLI(t, dir, "start", "--exit-policy", "sometimes", "policed"); code != exitUsage || !strings.Contains(errs, "--exit-policy") {
		t.Errorf("pod start --exit-policy sometimes: exit %d, stderr %q; want 2 naming the flag", code, errs)
	}
	if s := podStatus(t, dir, "policed"); s.Phase != "Pending" || s.StartedAt != nil {
		t.Errorf("after a refused start the pod is %s, started %v; want Pending, not started", s.Phase, s.StartedAt)
	}
}

// Every command given a pod that does not exist says so in the user's
// words, and exits 1 (pod graph exited 2).
func TestPodNotFound(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "none")
	for _, state := range []string{dir, missing} {
		for _, args := range [][]string{{"status", "nope"}, {"status", "--json", "nope"}, {"stop", "nope"}, {"logs", "nope"}, {"logs", "-f", "nope", "a"}, {"rm", "nope"}, {"rm", "--force", "nope"}, {"start", "nope"}, {"graph", "nope"}} {
			out, errs, code := podCLI(t, state, args...)
			msg := "no pod named nope in state dir " + state
			wantOut := ""
			if slices.Contains(args, "--json") {
				b, _ := json.Marshal(map[string]string{"error": msg})
				wantOut = string(b) + "\n"
			}
			if code != 1 || errs != "unitrun: "+msg+"\n" || out != wantOut {
				t.Errorf("pod %v (state dir %s): exit %d, stdout %q, stderr %q; want 1, %q and unitrun: %s", args, state, code, out, errs, wantOut, msg)
			}
		}
	}
}

// A --state-dir that is a file, or whose list of pods is one, is named
// with what is wrong with it, by every pod command, exit 125, and nothing
// is created; pod list does not point at "pod rm --force", which does not
// apply.
func TestPodStateDirNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	podsFile := t.TempDir()
	for _, f := range []string{file, filepath.Join(podsFile, "pods")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := manifestFile(t, "name: p\napps:\n  - name: a\n    exec: [/bin/true]\n")
	for state, want := range map[string]string{
		file:                     "unitrun: --state-dir " + file + ": not a directory\n",
		filepath.Join(file, "x"): "unitrun: --state-dir " + file + "/x: not a directory\n",
	} {
		for _, args := range [][]string{{"create", m}, {"run", "--detach", m}, {"list"}, {"status", "p"}} {
			out, errs, code := podCLI(t, state, args...)
			if code != exitFailed || errs != want || out != "" {
				t.Errorf("pod %v --state-dir %s: exit %d, stdout %q, stderr %q; want 125 and %q", args, state, code, out, errs, want)
			}
		}
	}
	out, errs, code := podCLI(t, podsFile, "list")
	if want := "unitrun: --state-dir " + podsFile + ": " + podsFile + "/pods: not a directory\n"; code != exitFailed || errs != want || out != "" {
		t.Errorf("pod list of a state dir whose pods is a file: exit %d, stdout %q, stderr %q; want 125 and %q", code, out, errs, want)
	}
}

// interruptPodRun starts "pod run" of a pod whose app prints hi and, when
// stopped, sleeps, prints its last line and exits 0; it sends sig to pod
// run once hi is printed and returns pod run's exit status and output.
func interruptPodRun(t *testing.T, dir, name string, sig syscall.Signal) (int, string) {
	t.Helper()
	rmPod(t, dir, name)
	cmd := exec.Command(systemdtest.Binary(t), "pod", "run", "-q", "--state-dir", dir, manifestFile(t, `
name: `+name+`
apps:
  - name: hello
    exec: ["/bin/sh", "-c", "trap 'sleep 0.5; echo last words; exit 0' TERM; echo hi; while :; do sleep 0.1; done"]
  - name: quiet
    exec: ["/bin/sleep", "600"]
`))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil || line != "hello | hi\n" {
		t.Fatalf("first line of pod run: %q, %v", line, err)
	}
	// Every app's command has started: an app stopped before its command
	// ran has failed (it never ran), which is not the case under test.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		running := 0
		for _, a := range podStatus(t, dir, name).Apps {
			if a.State == record.AppRunning {
				running++
			}
		}
		if running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 apps running 10s after the first line of pod run", running)
		}
	}
	cmd.Process.Signal(sig)
	rest, _ := r.ReadString(0)
	code := 0
	if err := cmd.Wait(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, rest
}

// Ctrl-C (or SIGTERM, or SIGHUP) on pod run stops the pod, streams the apps' output
// until it has ended, then exits 128+N, so that "pod run && next" stops;
// the statuses stay as recorded.
func TestPodRunInterruptedExits128N(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			name := fmt.Sprintf("interrupted%d", c.code)
			code, rest := interruptPodRun(t, dir, name, c.sig)
			if code != c.code {
				t.Errorf("pod run after %v: exit %d, want %d", c.sig, code, c.code)
			}
			if !strings.Contains(rest, "hello | last words\n") {
				t.Errorf("pod run after %v printed %q; want the app's last line, written as it stopped", c.sig, rest)
			}
			s := podStatus(t, dir, name)
			if s.Phase != "Succeeded" || s.ExitCode == nil || *s.ExitCode != 0 {
				t.Errorf("pod after %v: %s, exit %v; want Succeeded 0 (its apps exited 0 and by SIGTERM)", c.sig, s.Phase, s.ExitCode)
			}
			for _, a := range s.Apps {
				if a.State != "exited" || a.ExitCode == nil {
					t.Errorf("app %s after %v: %s, %+v", a.Name, c.sig, a.State, a)
				}
			}
		})
	}
}

// After the last pod rm nothing of the pods is loaded, not even the parent
// slices; a unit that something else put in unitrun.slice keeps it.
func TestPodRmLeavesNoSlice(t *testing.T) {
	dir := t.TempDir()
	path := manifestFile(t, "name: sliced\napps:\n  - name: a\n    exec: [/bin/true]\n")
	slices := func() []string {
		names, err := systemdtest.Conn(t).ListUnitNames(context.Background(), "unitrun")
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, n := range names {
			if strings.HasSuffix(n, ".slice") {
				s = append(s, n)
			}
		}
		return s
	}
	for _, other := range []bool{false, true} {
		if other {
			// Another unit in unitrun.slice, not a pod's.
			out, err := exec.Command("systemd-run", "--user", "--slice=unitrun.slice", "--unit=podcli-other", "/bin/sleep", "600").CombinedOutput()
			if err != nil {
				t.Fatalf("systemd-run: %v: %s", err, out)
			}
			t.Cleanup(func() { exec.Command("systemctl", "--user", "stop", "podcli-other.service").Run() })
		}
		if _, errs, code := podCLI(t, dir, "run", "-q", path); code != 0 {
			t.Fatalf("pod run: exit %d, %q", code, errs)
		}
		if _, errs, code := podCLI(t, dir, "rm", "sliced"); code != 0 {
			t.Fatalf("pod rm: exit %d, %q", code, errs)
		}
		got := strings.Join(slices(), " ")
		if want := map[bool]string{false: "", true: "unitrun.slice"}[other]; got != want {
			t.Errorf("slices loaded after the last pod rm (another unit in unitrun.slice: %v): %q, want %q", other, got, want)
		}
		if other {
			if out, _ := exec.Command("systemctl", "--user", "is-active", "podcli-other.service").Output(); string(out) != "active\n" {
				t.Errorf("the other unit in unitrun.slice after pod rm: %q, want active", out)
			}
		}
	}
}

// A pod whose state is broken (an oversized manifest.json, a pod.json that
// is not JSON) does not break "pod list" for the others, and "pod rm
// --force" removes everything it left, even while it runs.
func TestPodRmForceBrokenState(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"broken", "healthy"} {
		if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, "name: "+name+"\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n")); code != 0 {
			t.Fatalf("pod run --detach %s: exit %d, %q", name, code, errs)
		}
	}
	rmPod(t, dir, "healthy")
	state := filepath.Join(dir, "pods", "broken")
	if err := os.WriteFile(filepath.Join(state, "manifest.json"), []byte(strings.Repeat(`"\u003c`, 400000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "pod.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := podCLI(t, dir, "list")
	if code != 1 || out != "healthy\tRunning\t-\t1\n" || !strings.Contains(errs, "pod broken: ") {
		t.Errorf("pod list with one broken pod: exit %d, stdout %q, stderr %q; want 1, the healthy pod listed and the broken one named", code, out, errs)
	}
	// The refusal names the broken file and says what is wrong with it
	// and what to do, in no words of Go's JSON decoder.
	want := "unitrun: pod broken: " + filepath.Join(state, "pod.json") + " is broken: not JSON: at byte 2 of 9; give --force (unitrun pod rm --force broken), which removes the pod whatever its state\n"
	if _, errs, code := podCLI(t, dir, "rm", "broken"); code != exitFailed || errs != want {
		t.Errorf("pod rm of a broken pod: exit %d, %q; want %d, %q", code, errs, exitFailed, want)
	}
	if _, errs, code := podCLI(t, dir, "rm", "--force", "broken"); code != 0 {
		t.Errorf("pod rm --force of a broken pod: exit %d, %q", code, errs)
	}
	if left := podLeft(t, dir, "broken"); len(left) > 0 {
		t.Errorf("pod rm --force left %v", left)
	}
	if s := podStatus(t, dir, "healthy"); s.Phase != "Running" {
		t.Errorf("the other pod after pod rm --force: %s, want Running", s.Phase)
	}
}

// Limits are checked at pod create against what would be written, with
// exit 2, an error naming the limit, and nothing left behind.
func TestPodCreateLimits(t *testing.T) {
	var many strings.Builder
	many.WriteString("name: many\napps:\n")
	for i := range pod.MaxApps + 1 {
		fmt.Fprintf(&many, "  - {name: a%d, exec: [/bin/true]}\n", i)
	}
	var escapes strings.Builder
	escapes.WriteString("name: escapes\napps:\n  - name: a\n    exec: [/bin/true]\n    env:\n")
	for i := range 9 {
		fmt.Fprintf(&escapes, "      X%d: %q\n", i, strings.Repeat("<", 100000))
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"many", many.String(), fmt.Sprintf("apps: lists %d apps, more than the %d a pod may have", pod.MaxApps+1, pod.MaxApps)},
		{"escapes", escapes.String(), "more than the 1048576 it may have"},
		{"long-env", "name: long-env\napps:\n  - name: a\n    exec: [/bin/true]\n    env: {X: \"" + strings.Repeat("<", 180000) + "\"}\n",
			`apps[0].env["X"]: is 180002 bytes as K=V, more than the 131071 the kernel passes to a command`},
		{"long-arg", "name: long-arg\napps:\n  - name: a\n    exec: [/bin/echo, " + strings.Repeat("x", 140000) + "]\n",
			`apps[0].exec[1]: is 140000 bytes, more than the 131071 the kernel passes to a command`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, errs, code := podCLI(t, dir, "create", manifestFile(t, c.yaml))
			if code != exitUsage || !strings.Contains(errs, c.want) {
				t.Errorf("pod create: exit %d, stderr %.300q; want 2 and %q", code, errs, c.want)
			}
			if left := podLeft(t, dir, c.name); len(left) > 0 {
				t.Errorf("a refused pod create left %v", left)
			}
		})
	}
}

// A manifest that cannot be read is refused with exit 2, its path and
// the reason, not the system call that failed, and nothing is created.
func TestPodManifestUnreadable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.yaml")
	isDir := t.TempDir()
	for _, c := range []struct{ cmd, path, want string }{
		{"create", missing, missing + ": cannot read: no such file or directory"},
		{"create", isDir, isDir + ": cannot read: is a directory"},
		{"run", missing, missing + ": cannot read: no such file or directory"},
		{"run", isDir, isDir + ": cannot read: is a directory"},
		{"graph", isDir, isDir + ": cannot read: is a directory"},
	} {
		t.Run(c.cmd+"/"+filepath.Base(c.path), func(t *testing.T) {
			dir := t.TempDir()
			out, errs, code := podCLI(t, dir, c.cmd, c.path)
			if code != exitUsage || errs != "unitrun: "+c.want+"\n" || out != "" {
				t.Errorf("pod %s %s: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", c.cmd, c.path, code, out, errs, exitUsage, "unitrun: "+c.want+"\n")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("pod %s of an unreadable manifest left state: %v", c.cmd, entries)
			}
		})
	}
}

// A rootfs must be a directory other than /, however the path gets there.
func TestPodRootfsNotHostRoot(t *testing.T) {
	tmp := t.TempDir()
	if err := os.Symlink("/", filepath.Join(tmp, "to-root")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/tmp/..", filepath.Join(tmp, "to-root-dots")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ rootfs, want string }{
		{"/", "must be a directory other than /"},
		{"/./", "must be a clean absolute path"},
		{"//", "must be a clean absolute path"},
		{filepath.Join(tmp, "to-root"), "must be a directory other than /, and must not resolve to /"},
		{filepath.Join(tmp, "to-root-dots"), "must be a directory other than /, and must not resolve to /"},
		{filepath.Join(tmp, "file"), "must be a directory"},
		{filepath.Join(tmp, "none"), "must be a directory: no such file or directory"},
	} {
		dir := t.TempDir()
		_, errs, code := podCLI(t, dir, "run", manifestFile(t, fmt.Sprintf("name: rooted\nisolation: namespaces\napps:\n  - name: a\n    exec: [/bin/sh, -c, \"echo escaped > /tmp/unitrun-rootfs-escape\"]\n    rootfs: %q\n", c.rootfs)))
		want := fmt.Sprintf("apps[0].rootfs %q: %s", c.rootfs, c.want)
		if code != exitUsage || !strings.Contains(errs, want) {
			t.Errorf("rootfs %s: exit %d, stderr %q; want 2 and %q", c.rootfs, code, errs, want)
		}
		if left := podLeft(t, dir, "rooted"); len(left) > 0 {
			t.Errorf("rootfs %s: a refused pod run left %v", c.rootfs, left)
		}
	}
	if _, err := os.Stat("/tmp/unitrun-rootfs-escape"); err == nil {
		os.Remove("/tmp/unitrun-rootfs-escape")
		t.Errorf("an app with a rootfs that resolves to / wrote to the host's /tmp")
	}
}

// pod create prints every error of a manifest at once, each once, with
// its field path, and exits 2.
func TestPodManifestErrorsAtOnce(t *testing.T) {
	dir := t.TempDir()
	path := manifestFile(t, "name: p\nrestartPolicy: OnFaliure\napps:\n  - {name: a, exce: [/bin/true], exec: [/bin/true], init: maybe}\n  - {name: b, exec: [/bin/true]}\n")
	_, errs, code := podCLI(t, dir, "create", path)
	want := "unitrun: " + path + `: apps[0]: field "exce" not known` + "\n" +
		`apps[0].init "maybe": must be true or false` + "\n" +
		`restartPolicy "OnFaliure": must be one of Never, Always, OnFailure` + "\n"
	if code != exitUsage || errs != want {
		t.Errorf("pod create: exit %d, stderr:\n%s\nwant 2 and:\n%s", code, errs, want)
	}
}

// A rootfs replaced by a link to / after pod create is refused when the
// pod starts: the pod fails and its app writes nothing on the host.
func TestPodRootfsSwappedForRoot(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "escaped")
	path := manifestFile(t, fmt.Sprintf("name: swapped\nisolation: namespaces\napps:\n  - name: a\n    exec: [/bin/sh, -c, \"echo escaped > %s\"]\n    rootfs: %s\n", marker, rootfs))
	if _, errs, code := podCLI(t, dir, "create", path); code != 0 {
		t.Fatalf("pod create: exit %d, %q", code, errs)
	}
	rmPod(t, dir, "swapped")
	if err := os.Remove(rootfs); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", rootfs); err != nil {
		t.Fatal(err)
	}
	podCLI(t, dir, "start", "swapped")
	if _, errs, code := podCLI(t, dir, "logs", "-f", "swapped"); code != 0 {
		t.Fatalf("pod logs -f: exit %d, %q", code, errs)
	}
	if s := podStatus(t, dir, "swapped"); s.Phase != "Failed" {
		t.Errorf("pod with its rootfs swapped for /: %s, want Failed", s.Phase)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the app of a rootfs swapped for / wrote %s on the host", marker)
	}
}

// pod status --json says whether the pod and each app are ready, as the
// app's readiness probe finds it.
func TestPodReadyJSON(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(t.TempDir(), "ok")
	path := manifestFile(t, "name: readyjson\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n    readinessProbe:\n      exec: [/usr/bin/test, -e, "+ok+"]\n      periodSeconds: 1\n")
	if _, errs, code := podCLI(t, dir, "run", "--detach", path); code != 0 {
		t.Fatalf("pod run --detach: exit %d, %s", code, errs)
	}
	rmPod(t, dir, "readyjson")
	pollView := func(what string, cond func(podView) bool) podView {
		t.Helper()
		var v podView
		for range 400 {
			if v = podStatus(t, dir, "readyjson"); cond(v) {
				return v
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("pod status --json never showed %s: %+v", what, v)
		return v
	}
	v := pollView("a readiness result", func(v podView) bool { return v.Apps[0].ReadinessProbe != nil })
	if v.Ready || v.Apps[0].Ready || v.Apps[0].ReadinessProbe.LastResult != "failure" {
		t.Errorf("before the first success: %+v", v)
	}
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pollView("a ready pod", func(v podView) bool { return v.Ready && v.Apps[0].Ready })
}

// A pod stop interrupted (Ctrl-C) while an app takes its stop timeout
// exits 130 saying that the stop goes on, as wait does, not with a unit's
// name; the stop goes on: the app is killed at its stop timeout and the
// pod ends.
func TestPodStopInterrupted(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "stop-interrupted")
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, `
name: stop-interrupted
apps:
  - name: stubborn
    stopTimeout: 2s
    exec: ["/bin/sh", "-c", "trap '' TERM; while sleep 0.1; do :; done"]
`)); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	cmd := exec.Command(systemdtest.Binary(t), "pod", "stop", "--state-dir", dir, "stop-interrupted")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !record.Stopping(dir, "stop-interrupted") {
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	want := "unitrun: stopped waiting for pod stop-interrupted, whose stop goes on: interrupted by SIGINT\n"
	if code := cmd.ProcessState.ExitCode(); code != 130 || stderr.String() != want {
		t.Errorf("pod stop interrupted: exit %d, stderr %q; want 130, %q", code, stderr.String(), want)
	}
	for deadline := time.Now().Add(30 * time.Second); podStatus(t, dir, "stop-interrupted").Phase == pod.PodRunning; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pod still runs 30 s after its stop was interrupted")
		}
	}
}
