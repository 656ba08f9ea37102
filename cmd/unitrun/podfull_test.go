package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/logcopy"
)

// fullStateDir returns a state dir on a 2 MiB tmpfs that the test manager
// sees, unmounted when the test ends. The manager has a mount namespace of
// its own: the tmpfs is mounted there, and the test and the CLI reach it
// through the manager's root, /proc/PID/root, which the hooks resolve to
// the same directory.
func fullStateDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	pid := systemdtest.Manager(t).PID()
	dir := t.TempDir()
	ns := []string{"-t", fmt.Sprint(pid), "-m", "--"}
	if out, err := exec.Command("nsenter", append(ns, "mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", dir)...).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("nsenter", append(ns, "umount", dir)...).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return fmt.Sprintf("/proc/%d/root%s", pid, dir)
}

// forceRm removes pod name, if it is left, when the test ends (and before
// its state dir is unmounted).
func forceRm(t *testing.T, dir, name string) {
	t.Cleanup(func() {
		if _, err := os.Lstat(filepath.Join(dir, "pods", name)); err == nil {
			podCLI(t, dir, "rm", "--force", name)
		}
	})
}

// fillingPod is a pod whose app filler fills dir, its state dir, (3 MB
// on 2 MiB, into a file of its own: its output could not fill it) once
// app other runs, and exits 3, so that no hook can record anything after
// it; other runs otherCmd.
func fillingPod(t *testing.T, dir, name, otherCmd string) string {
	up := filepath.Join(dir, "other-up")
	return manifestFile(t, fmt.Sprintf(`name: %s
apps:
  - name: filler
    exec: ["/bin/sh", "-c", "until [ -e %s ]; do sleep 0.05; done; head -c 3000000 /dev/zero > %s/fill; exit 3"]
  - name: other
    exec: ["/bin/sh", "-c", %q]
`, name, up, dir, "touch "+up+"; "+otherCmd))
}

// wantEndFromSystemd checks that pod name ended Failed with filler's exit
// code 3, read back from systemd since no hook could record it, says so,
// and is removed without force, leaving nothing.
func wantEndFromSystemd(t *testing.T, dir, name, other string) {
	t.Helper()
	_, errs, code := podCLI(t, dir, "status", name)
	if code != 0 || !strings.Contains(errs, "could not be recorded (is the state dir full?)") {
		t.Errorf("pod status: exit %d, stderr %q; want 0 and a note that the exits are systemd's", code, errs)
	}
	v := podStatus(t, dir, name)
	if v.Phase != pod.PodFailed || v.ExitCode == nil || *v.ExitCode != 3 || !v.FromSystemd {
		t.Errorf("pod %s: %s, exit code %s, from systemd %v; want Failed, 3, true", name, v.Phase, fmtInt(v.ExitCode), v.FromSystemd)
	}
	for _, a := range v.Apps {
		got := fmt.Sprintf("%s %s", a.State, fmtInt(a.ExitCode))
		if want := map[string]string{"filler": "failed 3", "other": other}[a.Name]; got != want || a.Name == "filler" && !a.FromSystemd {
			t.Errorf("app %s: %q, from systemd %v; want %q", a.Name, got, a.FromSystemd, want)
		}
	}
	if _, errs, code := podCLI(t, dir, "rm", name); code != 0 {
		t.Errorf("pod rm: exit %d, %q; want 0", code, errs)
	}
	if left := podLeft(t, dir, name); len(left) > 0 {
		t.Errorf("pod rm left %v", left)
	}
}

// A pod whose state dir fills cannot record its exits:
// pod run still ends with the pod's exit code, pod stop and a SIGTERM to
// pod run still stop it, and pod status reads each end back from systemd,
// saying so; pod rm then removes it without force.
func TestPodFullStateDir(t *testing.T) {
	t.Run("run", func(t *testing.T) {
		dir := fullStateDir(t)
		forceRm(t, dir, "full-run")
		_, errs, code := podCLI(t, dir, "run", "-q", fillingPod(t, dir, "full-run", "sleep 2"))
		if code != 3 || !strings.Contains(errs, "could not be recorded (is the state dir full?)") {
			t.Errorf("pod run: exit %d, stderr %q; want 3 and a note that the exits are systemd's", code, errs)
		}
		wantEndFromSystemd(t, dir, "full-run", "exited 0")
	})
	t.Run("stop", func(t *testing.T) {
		dir := fullStateDir(t)
		forceRm(t, dir, "full-stop")
		if _, errs, code := podCLI(t, dir, "run", "--detach", fillingPod(t, dir, "full-stop", "exec sleep 600")); code != 0 {
			t.Fatalf("pod run --detach: exit %d, %q", code, errs)
		}
		systemdtest.WaitActiveState(t, systemdtest.Conn(t), pod.AppUnit("full-stop", "filler"), "failed")
		if _, errs, code := podCLI(t, dir, "stop", "full-stop"); code != 3 {
			t.Errorf("pod stop: exit %d, want 3 (stderr %q)", code, errs)
		}
		// sleep's death by the stop's SIGTERM is clean, as systemd counts it.
		wantEndFromSystemd(t, dir, "full-stop", "exited 143")
	})
	t.Run("sigterm", func(t *testing.T) {
		dir := fullStateDir(t)
		forceRm(t, dir, "full-sig")
		cmd := exec.Command(systemdtest.Binary(t), "pod", "run", "-q", "--state-dir", dir, fillingPod(t, dir, "full-sig", "exec sleep 600"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		systemdtest.WaitActiveState(t, systemdtest.Conn(t), pod.AppUnit("full-sig", "filler"), "failed")
		cmd.Process.Signal(syscall.SIGTERM)
		// Before, pod run went on until SIGKILL.
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
			t.Errorf("pod run after SIGTERM: %v, want exit 143", err)
		}
		wantEndFromSystemd(t, dir, "full-sig", "exited 143")
	})
}

// An app whose output would fill the state dir (3 MB on 2 MiB) leaves the
// pod's records room: its log stops 1 MiB short of full, with a line that
// says so, and every exit is recorded as usual; before, the log filled the
// file system and no exit was recorded.
func TestPodLogLeavesRoomForRecords(t *testing.T) {
	dir := fullStateDir(t)
	forceRm(t, dir, "full-log")
	_, errs, code := podCLI(t, dir, "run", "-q", manifestFile(t, `name: full-log
apps:
  - name: talker
    exec: ["/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo after; exit 3"]
  - name: other
    exec: ["/bin/sleep", "600"]
`))
	if code != 3 {
		t.Errorf("pod run: exit %d, want 3 (stderr %q)", code, errs)
	}
	v := wantOutcome(t, dir, "full-log", "Failed", 3, map[string]string{"talker": "failed 3 0", "other": "exited 143 0"})
	if v.FromSystemd {
		t.Errorf("the pod's end was read back from systemd: its records were not written")
	}
	log, err := os.ReadFile(filepath.Join(dir, "pods", "full-log", "logs", "talker.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(log), logcopy.DroppedMarker) || len(log) > 1<<20 || strings.Count(string(log), "x") < 1<<19 {
		t.Errorf("talker's log: %d bytes ending %q; want its first bytes, then %q", len(log), log[max(0, len(log)-120):], logcopy.DroppedMarker)
	}
	if _, errs, code := podCLI(t, dir, "rm", "full-log"); code != 0 {
		t.Errorf("pod rm: exit %d, %q", code, errs)
	}
}

// The test manager has a mount namespace of its own, as the embedded
// manager has: a state dir on a tmpfs mounted after it started is not
// there for it, and its hooks could record nothing (every app failed with
// 209/STDOUT and pod run hung). pod create and pod run refuse it, saying
// why, and leave nothing.
func TestPodStateDirUnseenByManager(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v: %s", mnt, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	dir := filepath.Join(mnt, "state")
	path := manifestFile(t, "name: unseen\napps:\n  - name: a\n    exec: [/bin/true]\n")
	for _, cmd := range []string{"create", "run"} {
		_, errs, code := podCLI(t, dir, cmd, path)
		if code != exitFailed || !strings.Contains(errs, "state dir "+dir+": the manager does not see it as unitrun does") {
			t.Errorf("pod %s: exit %d, stderr %q; want 125 saying the manager does not see the state dir", cmd, code, errs)
		}
		if left := podLeft(t, dir, "unseen"); len(left) > 0 {
			t.Errorf("pod %s left %v", cmd, left)
			podCLI(t, dir, "rm", "--force", "unseen")
		}
	}
}
