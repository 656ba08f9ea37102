package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod/record"
)

// The tests below are rkt's functional tests (tests/rkt_exit_test.go,
// rkt_stop_test.go, rkt_run_pod_manifest_test.go) for unitrun's pods: a
// manifest, "unitrun pod run" through the built binary, then the exit
// code, the status files and "pod status --json". Each covers one way an
// app's run can end.

// wantOutcome checks the pod's phase and exit code, and each app's state,
// exit code, status file and restarts (app name → "state code restarts").
func wantOutcome(t *testing.T, dir, name, phase string, code int, apps map[string]string) podView {
	t.Helper()
	o := podStatus(t, dir, name)
	if string(o.Phase) != phase || o.ExitCode == nil || *o.ExitCode != code {
		t.Errorf("pod %s: %s, exit code %v; want %s, %d", name, o.Phase, fmtInt(o.ExitCode), phase, code)
	}
	for _, a := range o.Apps {
		want, ok := apps[a.Name]
		if !ok {
			continue
		}
		if got := fmt.Sprintf("%s %s %d", a.State, fmtInt(a.ExitCode), a.Restarts); got != want {
			t.Errorf("app %s: %q, want %q (state, exit code, restarts)", a.Name, got, want)
		}
		var file string
		if data, err := os.ReadFile(filepath.Join(dir, "pods", name, "status", a.Name)); err == nil {
			file = strings.TrimSpace(string(data))
		}
		if file != fmtInt(a.ExitCode) {
			t.Errorf("status file of %s: %q, want %s", a.Name, file, fmtInt(a.ExitCode))
		}
	}
	return o
}

func fmtInt(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// appOf returns the state and message of app name of o, and whether its
// run started.
func appOf(o podView, name string) (state, message string, started bool) {
	for _, a := range o.Apps {
		if a.Name == name {
			return string(a.State), a.Message, a.StartedAt != nil
		}
	}
	return "", "", false
}

// Every way a lone app's run ends, in host mode and in an isolated pod:
// pod run exits with the pod's code, the app's status file and record say
// how it ended, with the reason if its command could not be executed.
// No apps/a.start-error is left, whether the command ran or not (an empty
// one was left for a command that ran).
func TestPodOutcomeOfEachEnd(t *testing.T) {
	cases := []struct {
		name, app string
		phase     string
		code      int
		want      string // state, exit code, restarts
		message   string
	}{
		{"exit0", `exec: ["/bin/true"]`, "Succeeded", 0, "exited 0 0", ""},
		{"exit7", `exec: ["/bin/sh", "-c", "exit 7"]`, "Failed", 7, "failed 7 0", ""},
		{"sigkill", `exec: ["/bin/sh", "-c", "kill -KILL $$"]`, "Failed", 137, "failed 137 0", ""},
		// systemd counts a death by SIGTERM as clean (docs/pods.md).
		{"sigterm", `exec: ["/bin/sh", "-c", "kill -TERM $$"]`, "Succeeded", 0, "exited 143 0", ""},
		{"success-code", "exec: [\"/bin/sh\", \"-c\", \"exit 3\"]\n    successExitCodes: [3]", "Succeeded", 0, "exited 3 0", ""},
		{"missing", `exec: ["/nonexistent/cmd"]`, "Failed", 127, "failed 127 0", "command /nonexistent/cmd: not found"},
		{"not-executable", `exec: ["/dev/null"]`, "Failed", 126, "failed 126 0", "command /dev/null: permission denied"},
	}
	for _, iso := range []string{"none", "namespaces"} {
		for _, c := range cases {
			if iso == "namespaces" && c.message == "" && c.name != "exit7" {
				continue // the pod's own systemd reports these as the host's
			}
			t.Run(iso+"/"+c.name, func(t *testing.T) {
				// Short: the socket of an isolated pod's systemd is
				// under it.
				dir := systemdtest.RunDir(t)
				name := "end-" + c.name
				rmPod(t, dir, name)
				_, errs, code := podCLI(t, dir, "run", "--isolation", iso, manifestFile(t, fmt.Sprintf("name: %s\napps:\n  - name: a\n    %s\n", name, c.app)))
				if code != c.code {
					t.Errorf("pod run: exit %d, want %d (stderr %q)", code, c.code, errs)
				}
				o := wantOutcome(t, dir, name, c.phase, c.code, map[string]string{"a": c.want})
				if _, msg, started := appOf(o, "a"); msg != c.message || !started {
					t.Errorf("app a: message %q, started %v; want %q, true", msg, started, c.message)
				}
				if _, err := os.Stat(filepath.Join(record.Dir(dir, name), "apps", "a.start-error")); !os.IsNotExist(err) {
					t.Errorf("apps/a.start-error is left after the run (%v)", err)
				}
			})
		}
	}
}

// A user, group or working directory that does not resolve is refused at
// pod create, naming the field; nothing is left behind.
func TestPodCreateChecksHost(t *testing.T) {
	for _, c := range []struct{ field, yaml string }{
		{`apps[0].user "no-such-user": no such user`, "user: no-such-user"},
		{`apps[0].group "no-such-group": no such group`, "group: no-such-group"},
		{`apps[0].workingDir "/nonexistent/dir": no such directory`, "workingDir: /nonexistent/dir"},
		{`apps[0].workingDir "/etc/hostname": not a directory`, "workingDir: /etc/hostname"},
	} {
		t.Run(c.field, func(t *testing.T) {
			dir := t.TempDir()
			_, errs, code := podCLI(t, dir, "create", manifestFile(t, "name: host\napps:\n  - name: a\n    exec: [/bin/true]\n    "+c.yaml+"\n"))
			if code != exitUsage || !strings.Contains(errs, c.field) {
				t.Errorf("exit %d, stderr %q; want %d naming %s", code, errs, exitUsage, c.field)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, "pods")); len(entries) != 0 {
				t.Errorf("a refused manifest left state: %v", entries)
			}
		})
	}
}

// A manifest that breaks other rules too still has its host checked, so
// that every error comes at once, each once: the user and workingDir of
// apps[0] are reported beside apps[1]'s empty exec, and a host check that
// cannot run because its field, or the rootfs it looks in, is refused
// already (apps[2]) says nothing.
func TestPodCreateReportsHostErrorsWithOthers(t *testing.T) {
	dir := t.TempDir()
	manifest := manifestFile(t, `name: host
apps:
  - name: a
    exec: [/bin/true]
    user: nosuchuserx
    workingDir: /nonexistent
  - name: b
    exec: []
  - name: c
    exec: [/bin/true]
    user: "bad name"
    rootfs: /nonexistent-rootfs
    workingDir: /nonexistent
`)
	_, errs, code := podCLI(t, dir, "create", manifest)
	want := "unitrun: " + manifest + `: apps[1].exec: must not be empty
apps[2].user "bad name": must be a name of 1 to 31 characters of a-z, A-Z, 0-9, _ and -, starting with a letter or _, or a numeric ID below 4294967295
apps[2].rootfs "/nonexistent-rootfs": needs isolation: namespaces
apps[0].user "nosuchuserx": no such user on this host
apps[0].workingDir "/nonexistent": no such directory
`
	if code != exitUsage || errs != want {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, errs, exitUsage, want)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "pods")); len(entries) != 0 {
		t.Errorf("a refused manifest left state: %v", entries)
	}
}

// A group or working directory that is gone by the time the app starts
// fails the run, recorded with its reason: the hooks that record it run
// under neither (systemd 252 would fail them too, 216/GROUP, 200/CHDIR,
// and the pod would say Succeeded). With OnFailure the app backs off as
// for any failure, and a stop during the back-off leaves the failure as
// the pod's outcome.
func TestPodRunTimeSetupFailure(t *testing.T) {
	group := fmt.Sprintf("unitrun-t%d", os.Getpid())
	if out, err := exec.Command("groupadd", group).CombinedOutput(); err != nil {
		t.Skipf("cannot add a group for the test: %v: %s", err, out)
	}
	defer exec.Command("groupdel", group).Run()
	work := t.TempDir()
	for _, c := range []struct {
		name, setting, message string
		gone                   func() error
	}{
		{"group", "group: " + group, "group " + group + ": no such group", func() error { return exec.Command("groupdel", group).Run() }},
		{"dir", "workingDir: " + work, "workingDir " + work + ": no such file or directory", func() error { return os.Remove(work) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			name := "gone-" + c.name
			path := manifestFile(t, fmt.Sprintf(`
name: %s
restartBackoff: {initial: 1h, max: 1h}
apps:
  - name: a
    restartPolicy: OnFailure
    exec: ["/bin/true"]
    %s
  - name: b
    exec: ["/bin/sleep", "600"]
`, name, c.setting))
			if _, errs, code := podCLI(t, dir, "create", path); code != 0 {
				t.Fatalf("pod create: exit %d: %s", code, errs)
			}
			rmPod(t, dir, name)
			if err := c.gone(); err != nil {
				t.Fatal(err)
			}
			if _, errs, code := podCLI(t, dir, "start", name); code != 0 {
				t.Fatalf("pod start: exit %d: %s", code, errs)
			}
			// Stopped only once b runs: b, stopped before it ran, would
			// have failed, never started.
			var o podView
			for range 600 {
				o = podStatus(t, dir, name)
				if b, _, _ := appOf(o, "b"); o.Apps[0].State == "restarting" && b == "running" {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if state, msg, _ := appOf(o, "a"); state != "restarting" || msg != c.message {
				t.Fatalf("app a: %s, message %q; want restarting, %q", state, msg, c.message)
			}
			if _, errs, code := podCLI(t, dir, "stop", name); code != 126 {
				t.Errorf("pod stop: exit %d, want 126: %s", code, errs)
			}
			wantOutcome(t, dir, name, "Failed", 126, map[string]string{"a": "failed 126 0", "b": "exited 143 0"})
		})
	}
}

// An Always app that waits out its back-off when the pod ends has ended
// with its last run: the interrupted back-off is no run, and the pod's
// exit code is that run's.
func TestPodEndsDuringBackoff(t *testing.T) {
	const apps = `
name: %s
restartBackoff: {initial: 1h, max: 1h}
apps:
  - name: a
    restartPolicy: Always
    exec: ["/bin/true"]
  - name: b
    exec: ["/bin/sh", "-c", "while [ ! -e %s/pods/%s/status/a ]; do sleep 0.05; done; %s"]
`
	t.Run("exit-policy-any", func(t *testing.T) {
		dir := t.TempDir()
		name := "backoff-any"
		rmPod(t, dir, name)
		_, errs, code := podCLI(t, dir, "run", "--exit-policy", "any", manifestFile(t, fmt.Sprintf(apps, name, dir, name, "exit 0")))
		if code != 0 {
			t.Errorf("pod run: exit %d, want 0: %s", code, errs)
		}
		wantOutcome(t, dir, name, "Succeeded", 0, map[string]string{"a": "exited 0 0", "b": "exited 0 0"})
	})
	t.Run("pod-stop", func(t *testing.T) {
		dir := t.TempDir()
		name := "backoff-stop"
		rmPod(t, dir, name)
		if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, fmt.Sprintf(apps, name, dir, name, "exec sleep 600"))); code != 0 {
			t.Fatalf("pod run --detach: exit %d: %s", code, errs)
		}
		// Stopped only once b runs: b, stopped before it ran, would have
		// failed, never started.
		for range 600 {
			o := podStatus(t, dir, name)
			if a, _, _ := appOf(o, "a"); a == "restarting" {
				if b, _, _ := appOf(o, "b"); b == "running" {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, errs, code := podCLI(t, dir, "stop", name); code != 0 {
			t.Errorf("pod stop: exit %d, want 0: %s", code, errs)
		}
		wantOutcome(t, dir, name, "Succeeded", 0, map[string]string{"a": "exited 0 0", "b": "exited 143 0"})
	})
}

// A stop from outside, systemctl exit of the manager the pod runs on,
// records every app as it ended: an Always app that traps SIGTERM and
// exits 0 has succeeded and did not restart, and an app with no restart
// policy keeps the start of its run.
func TestPodManagerExit(t *testing.T) {
	em := &manager.Embedded{Dir: filepath.Join(systemdtest.RunDir(t), "manager")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := em.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	defer em.Stop(context.Background(), 10*time.Second)
	dir := t.TempDir()
	name := "mgr-exit"
	spec := "--manager=private:" + em.Socket()
	cmd := exec.Command(systemdtest.Binary(t), "pod", "run", spec, "--state-dir", dir, manifestFile(t, `
name: mgr-exit
apps:
  - name: always
    restartPolicy: Always
    exec: ["/bin/sh", "-c", "trap 'exit 0' TERM; echo trapped; sleep 600 & wait"]
  - name: once
    exec: ["/bin/sh", "-c", "echo started; exec sleep 600"]
`))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := bufio.NewReader(out)
	var seen []string
	for len(seen) < 2 {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("pod run printed %q, then %v", seen, err)
		}
		seen = append(seen, line)
	}
	slices.Sort(seen)
	if want := []string{"always | trapped\n", "once | started\n"}; !slices.Equal(seen, want) {
		t.Fatalf("pod run printed %q, want %q", seen, want)
	}
	exitCmd := exec.Command("systemctl", "--user", "exit")
	exitCmd.Env = append(os.Environ(), em.Env()...)
	if out, err := exitCmd.CombinedOutput(); err != nil {
		t.Fatalf("systemctl --user exit: %v: %s", err, out)
	}
	for range 600 {
		if podStatus(t, dir, name).Phase != "Running" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	o := wantOutcome(t, dir, name, "Succeeded", 0, map[string]string{"always": "exited 0 0", "once": "exited 143 0"})
	if _, _, started := appOf(o, "once"); !started {
		t.Errorf("app once lost its start at the manager's exit")
	}
}

// rkt's TestExitCodeWithSeveralApps: three apps exit 0, 5 and (later) 6;
// the pod exits 5, the first failure. rkt recorded the third app, stopped
// when the second failed, as status 0 (rkt#1461); here its status says it
// was stopped by SIGTERM.
func TestPodExitCodeWithSeveralApps(t *testing.T) {
	dir := t.TempDir()
	name := "several"
	rmPod(t, dir, name)
	// hello1 fails once hello0 has exited and hello2's command runs:
	// hello2, stopped before it ran, would have failed, never started.
	up := filepath.Join(t.TempDir(), "hello2-up")
	_, errs, code := podCLI(t, dir, "run", manifestFile(t, fmt.Sprintf(`
name: several
apps:
  - name: hello0
    exec: ["/bin/sh", "-c", "echo HelloWorld; exit 0"]
  - name: hello1
    exec: ["/bin/sh", "-c", "echo HelloWorld; while [ ! -e %s/pods/several/status/hello0 ] || [ ! -e %s ]; do sleep 0.05; done; exit 5"]
  - name: hello2
    exec: ["/bin/sh", "-c", "echo HelloWorld; touch %s; sleep 600; exit 6"]
`, dir, up, up)))
	if code != 5 {
		t.Errorf("pod run: exit %d, want 5: %s", code, errs)
	}
	wantOutcome(t, dir, name, "Failed", 5, map[string]string{"hello0": "exited 0 0", "hello1": "failed 5 0", "hello2": "exited 143 0"})
}

// systemctl stop of an app of a host-mode pod is a stop, though no pod
// stop marked it: an Always app that traps SIGTERM and exits 0 succeeded,
// does not restart, and the pod, all of whose apps have ended, succeeds.
func TestPodAppStoppedBySystemctl(t *testing.T) {
	dir := t.TempDir()
	name := "sysstop"
	rmPod(t, dir, name)
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, `
name: sysstop
apps:
  - name: a
    restartPolicy: Always
    exec: ["/bin/sh", "-c", "trap 'exit 0' TERM; echo trapped; sleep 600 & wait"]
`)); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	for range 600 {
		if data, _ := os.ReadFile(filepath.Join(dir, "pods", name, "logs", "a.log")); string(data) == "trapped\n" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := exec.Command("systemctl", "--user", "stop", "unitrun-pod-sysstop-a.service").CombinedOutput(); err != nil {
		t.Fatalf("systemctl stop: %v: %s", err, out)
	}
	for range 600 {
		if podStatus(t, dir, name).Phase != "Running" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantOutcome(t, dir, name, "Succeeded", 0, map[string]string{"a": "exited 0 0"})
}

// An app's user, group and working directory are taken on by the exec
// hook, as systemd's User=, Group= and WorkingDirectory= would: the
// command runs with the user's ids and no capabilities, in the directory.
func TestPodAppUser(t *testing.T) {
	dir := t.TempDir()
	name := "as-nobody"
	rmPod(t, dir, name)
	out, errs, code := podCLI(t, dir, "run", manifestFile(t, `
name: as-nobody
apps:
  - name: a
    user: "65534"
    workingDir: /tmp
    exec: ["/bin/sh", "-c", "echo $(id -u) $(id -g) $(pwd) $(grep CapEff /proc/self/status | tr -d '\t')"]
`))
	if code != 0 || out != "a | 65534 65534 /tmp CapEff:0000000000000000\n" {
		t.Errorf("pod run: exit %d, output %q; want the user's ids, its directory, no capabilities (stderr %q)", code, out, errs)
	}
}
