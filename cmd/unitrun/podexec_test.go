package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod/record"
)

// podExec runs "unitrun pod exec --state-dir DIR ARGS..." with stdin in
// and returns its stdout, stderr and exit status.
func podExec(t *testing.T, dir, in string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(systemdtest.Binary(t), append([]string{"pod", "exec", "--state-dir", dir}, args...)...)
	cmd.Stdin = strings.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// startPod runs the pod of manifest text detached, removed when the test
// ends, and waits until each app in running has its command running
// (its record says running).
func startPod(t *testing.T, dir, name, text string, running ...string) {
	t.Helper()
	rmPod(t, dir, name)
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, text)); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	for _, app := range running {
		for {
			s := podStatus(t, dir, name)
			if i := slices.IndexFunc(s.Apps, func(a appView) bool { return a.Name == app }); i >= 0 && s.Apps[i].State == record.AppRunning {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// pod exec runs a command in a plain pod's app as the app's command runs:
// its output and exit status, its user and groups, its environment (the
// app's env, no unitrun or manager variables), working directory and
// capabilities, no_new_privs and mount namespace (its volumes), stdin only
// with -i, and in the app unit's cgroup, so that pod stop ends it.
func TestPodExec(t *testing.T) {
	dir := systemdtest.RunDir(t)
	vol := t.TempDir()
	if err := os.WriteFile(filepath.Join(vol, "data"), []byte("in the volume\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startPod(t, dir, "px", `
name: px
apps:
  - name: server
    exec: ["/bin/sleep", "600"]
    user: nobody
    workingDir: /tmp
    env: {GREETING: "hello there", PATH: "/usr/bin:/bin"}
  - name: locked
    exec: ["/bin/sleep", "600"]
    noNewPrivileges: true
    capabilities: [KILL]
    mounts: [{source: `+vol+`, path: /mnt/pod-exec-volume, readOnly: true}]
  - name: plain
    exec: ["/bin/sleep", "600"]
`, "server", "locked", "plain")
	out, errs, code := podExec(t, dir, "", "px", "server", "--", "sh", "-c", `id -u; id -G; pwd; echo "$GREETING"; env | cut -d= -f1 | sort | tr '\n' ' '; echo; cat /proc/self/cgroup | grep -c unitrun-pod-px-server.service; exit 3`)
	nobody := strings.TrimSpace(mustOutput(t, "id", "-u", "nobody"))
	groups := strings.TrimSpace(mustOutput(t, "id", "-G", "nobody"))
	want := nobody + "\n" + groups + "\n/tmp\nhello there\nGREETING HOME HOSTNAME LOGNAME PATH PWD USER \n"
	if code != 3 || !strings.HasPrefix(out, want) || errs != "" {
		t.Errorf("pod exec: exit %d, stdout %q, stderr %q; want 3, stdout beginning %q", code, out, errs, want)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] == "0" {
		t.Errorf("the command was not in the app's cgroup: %q", out)
	}
	// The bounding set and no_new_privs of the app's command.
	if out, errs, code := podExec(t, dir, "", "px", "locked", "--", "grep", "-E", "^(CapBnd|NoNewPrivs)", "/proc/self/status"); code != 0 || out != "CapBnd:\t0000000000000020\nNoNewPrivs:\t1\n" {
		t.Errorf("pod exec into an app with noNewPrivileges and capabilities [KILL]: exit %d, %q, %q", code, out, errs)
	}
	// An app without a workingDir (nor mounts, whose namespace nsenter
	// enters at its /): /, where its command starts, not pod exec's
	// own directory.
	if out, errs, code := podExec(t, dir, "", "px", "plain", "--", "pwd"); code != 0 || out != "/\n" {
		t.Errorf("pod exec pwd in an app without a workingDir: exit %d, %q, %q; want /", code, out, errs)
	}
	// The app's mount namespace: its volume.
	if out, errs, code := podExec(t, dir, "", "px", "locked", "--", "cat", "/mnt/pod-exec-volume/data"); code != 0 || out != "in the volume\n" {
		t.Errorf("pod exec cat of the app's volume: exit %d, %q, %q", code, out, errs)
	}
	// stdin: the caller's with -i, else empty.
	if out, errs, code := podExec(t, dir, "typed\n", "-i", "px", "server", "--", "cat"); code != 0 || out != "typed\n" {
		t.Errorf("pod exec -i cat: exit %d, %q, %q", code, out, errs)
	}
	if out, errs, code := podExec(t, dir, "typed\n", "px", "server", "--", "cat"); code != 0 || out != "" {
		t.Errorf("pod exec cat without -i: exit %d, %q, %q; want nothing read", code, out, errs)
	}
	// Commands that cannot run exit as run says them.
	if _, errs, code := podExec(t, dir, "", "px", "server", "--", "no-such-command"); code != 127 || !strings.Contains(errs, "no-such-command") {
		t.Errorf("pod exec no-such-command: exit %d, %q; want 127", code, errs)
	}
	if _, errs, code := podExec(t, dir, "", "px", "server", "--", "/etc/passwd"); code != 126 {
		t.Errorf("pod exec /etc/passwd: exit %d, %q; want 126", code, errs)
	}
	// A signal that ends the command ends pod exec by the same signal.
	if _, _, code := podExec(t, dir, "", "px", "server", "--", "sh", "-c", "kill -9 $$"); code != -1 {
		t.Errorf("pod exec of a command killed by SIGKILL: exit %d, want killed by the signal", code)
	}
	execThenStop(t, dir, "px", "server")
}

// pod exec names what is wrong in the user's words, with the pod
// commands' exit statuses.
func TestPodExecErrors(t *testing.T) {
	dir := systemdtest.RunDir(t)
	startPod(t, dir, "pxe", `
name: pxe
apps:
  - name: server
    exec: ["/bin/sleep", "600"]
  - name: done
    exec: ["/bin/true"]
`, "server")
	for {
		if s := podStatus(t, dir, "pxe"); s.Apps[1].State == record.AppExited {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"nopod", "server", "--", "true"}, 1, "no pod named nopod in state dir"},
		{[]string{"pxe", "noapp", "--", "true"}, 2, `pod pxe has no app "noapp"`},
		{[]string{"pxe", "done", "--", "true"}, 125, "app done of pod pxe is not running (it is exited)"},
		{[]string{"pxe", "server", "true"}, 2, "put -- between the app and the command"},
		{[]string{"pxe", "server", "ls", "-l"}, 2, "put -- between the app and the command"},
		{[]string{"pxe", "server", "ls", "--all"}, 2, "put -- between the app and the command"},
		{[]string{"pxe", "server", "--"}, 2, "no command after --"},
		{[]string{"pxe", "--", "true"}, 2, "give the pod, the app, then -- and the command"},
	} {
		out, errs, code := podExec(t, dir, "", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("pod exec %q: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
}

// execThenStop runs a command with pod exec in app of pod name, stops the
// pod once the command runs, and checks that the stop's SIGTERM ended it.
func execThenStop(t *testing.T, dir, name, app string) {
	t.Helper()
	cmd := exec.Command(systemdtest.Binary(t), "pod", "exec", "--state-dir", dir, name, app, "--", "sh", "-c", "echo in; exec sleep 600")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 3)
	if _, err := out.Read(line); err != nil || string(line) != "in\n" {
		t.Fatalf("pod exec printed %q, %v", line, err)
	}
	podCLI(t, dir, "stop", name)
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("pod exec after pod stop: %v; want ended by SIGTERM", err)
	}
}

// mustOutput runs name with args and returns its stdout.
func mustOutput(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(out)
}

// pod exec -t gives the command a terminal of its own, its controlling
// terminal (tcgetpgrp works), with unitrun's typed input (Ctrl-C
// included), size and TERM, as run -t does; its exit status is the
// command's.
func TestPodExecTTY(t *testing.T) {
	python := systemPython(t)
	dir := systemdtest.RunDir(t)
	startPod(t, dir, "pxt", `
name: pxt
apps:
  - name: server
    exec: ["/bin/sleep", "600"]
    user: nobody
`, "server")
	t.Setenv("TERM", "xterm-test")
	bin := systemdtest.Binary(t)
	got, code := onTerminal(t, exec.Command(bin, "pod", "exec", "--state-dir", dir, "-ti", "pxt", "server", "--", python, "-c", ttyScript), "ready", "typed words\r")
	if !strings.Contains(got, "True True xterm-test 'typed words' 65534") || code != 0 {
		t.Errorf("pod exec -ti showed %q, exit %d", got, code)
	}
	// The terminal's size is unitrun's.
	if got, code := onTerminal(t, exec.Command(bin, "pod", "exec", "--state-dir", dir, "-t", "pxt", "server", "--", "sh", "-c", "stty size; exit 3"), "", ""); code != 3 || !strings.Contains(got, "40 120") {
		t.Errorf("pod exec -t -- sh -c 'stty size; exit 3': exit %d, %q; want 3 and 40 120", code, got)
	}
	// Without a terminal, 24 rows of 80 columns, as systemd-run --pty.
	if out, errs, code := podExec(t, dir, "", "-t", "pxt", "server", "--", "stty", "size"); out != "24 80\r\n" || code != 0 {
		t.Errorf("pod exec -t -- stty size, no terminal: exit %d, %q, %q; want 24 80", code, out, errs)
	}
	if _, code := onTerminal(t, exec.Command(bin, "pod", "exec", "--state-dir", dir, "-ti", "pxt", "server", "--", "sh", "-c", "echo ready; sleep 100"), "ready", "\x03"); code != 130 {
		t.Errorf("pod exec -ti, Ctrl-C typed: exit %d; want 130, the command's SIGINT", code)
	}
}

// ttyScript prints whether its stdin is its controlling terminal, in its
// foreground process group, whether it is a pseudo-terminal, its TERM,
// the line typed and its user id.
const ttyScript = `import os
print("ready", flush=True)
line = input()
print(os.tcgetpgrp(0) == os.getpgrp(), os.ttyname(0).startswith("/dev/pts/"), os.environ.get("TERM"), repr(line), os.getuid())`

// pod exec into an isolated pod runs the command in the pod's namespaces
// (its systemd is PID 1, its host name the pod's), in the app's cgroup
// there and in its rootfs, with a terminal that works there too; pod stop
// ends it.
func TestPodExecIsolated(t *testing.T) {
	python := systemPython(t)
	dir := systemdtest.RunDir(t)
	startPod(t, dir, "pxi", `
name: pxi
isolation: namespaces
apps:
  - name: server
    exec: ["/bin/sleep", "600"]
    user: nobody
    env: {GREETING: hello}
  - name: rooted
    exec: ["/bin/sleep", "600"]
    rootfs: `+systemdtest.Rootfs(t, "/bin/sleep")+`
`, "server", "rooted")
	out, errs, code := podExec(t, dir, "", "pxi", "server", "--", "sh", "-c", `cat /proc/1/comm; hostname; id -u; echo "$GREETING"; grep -c unitrun-pod-pxi-server.service /proc/self/cgroup; exit 4`)
	if want := "systemd\npxi\n65534\nhello\n"; code != 4 || !strings.HasPrefix(out, want) || strings.HasSuffix(out, "\n0\n") || errs != "" {
		t.Errorf("pod exec: exit %d, stdout %q, stderr %q; want 4, stdout beginning %q and the app's cgroup", code, out, errs, want)
	}
	// The app's rootfs, where the command is looked up too.
	if out, errs, code := podExec(t, dir, "", "pxi", "rooted", "--", "sh", "-c", "pwd; test -e /etc/passwd || echo in the rootfs"); code != 0 || out != "/\nin the rootfs\n" {
		t.Errorf("pod exec into an app with a rootfs: exit %d, %q, %q", code, out, errs)
	}
	t.Setenv("TERM", "xterm-test")
	got, code := onTerminal(t, exec.Command(systemdtest.Binary(t), "pod", "exec", "--state-dir", dir, "-ti", "pxi", "server", "--", python, "-c", ttyScript), "ready", "typed words\r")
	if !strings.Contains(got, "True True xterm-test 'typed words' 65534") || code != 0 {
		t.Errorf("pod exec -ti showed %q, exit %d", got, code)
	}
	execThenStop(t, dir, "pxi", "server")
}

// systemPython returns the path of a python3 that any user may run, or
// skips the test.
func systemPython(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if fi, err := os.Stat(python); err != nil || fi.Mode()&0o001 == 0 {
		t.Skipf("skipping: no %s that any user may run to call tcgetpgrp (%v)", python, err)
	}
	return python
}
