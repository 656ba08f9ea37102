package podrun

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
)

// TestLogCopierOneProcess runs an app that prints its own children and
// then waits: the app's output goes through exactly one copier, "unitrun
// pod log-copy", whose parent is the manager (not the app's command, which
// has no child, nor a process that started it and exited), in a session
// of its own; every line reaches the log, and no copier is left once the
// pod has ended.
func TestLogCopierOneProcess(t *testing.T) {
	r := newRunner(t)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	name := run(t, r, fmt.Sprintf(`
name: copier
apps:
  - name: a
    exec: ["/bin/sh", "-c", "read c < /proc/$$/task/$$/children; echo \"children: [$c]\"; read x < %s; echo done"]
`, fifo), "")
	var app int
	for range 600 {
		s, err := pod.ReadAppOrNew(r.StateDir, name, "a")
		if err != nil {
			t.Fatal(err)
		}
		if log, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "a")); s.PID != 0 && len(log) > 0 {
			app = s.PID
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if app == 0 {
		t.Fatal("the app did not start and print")
	}
	out, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", app))
	if err != nil || !strings.HasPrefix(out, "pipe:") {
		t.Fatalf("the app's stdout is %q (%v), want a pipe", out, err)
	}
	copiers := readers(t, out, app)
	if len(copiers) != 1 {
		t.Fatalf("the app's output is read by %v, want one copier", copiers)
	}
	c := copiers[0]
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
	if want := systemdtest.Binary(t) + "\x00pod\x00log-copy\x00"; string(cmdline) != want {
		t.Errorf("the copier's command line is %q, want %q", cmdline, want)
	}
	ppid, sid := statFields(t, c)
	if mgr := systemdtest.Manager(t).PID(); os.Getenv("UNITRUN_MANAGER") == "" && ppid != mgr {
		t.Errorf("the copier's parent is %d, want the manager %d", ppid, mgr)
	}
	if sid != c {
		t.Errorf("the copier is in session %d, want one of its own (%d)", sid, c)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	if log, err := os.ReadFile(pod.LogFile(r.StateDir, name, "a")); err != nil || string(log) != "children: []\ndone\n" {
		t.Errorf("the app's log: %q, %v; want its two lines", log, err)
	}
	if systemdtest.Alive(c) {
		t.Errorf("the copier %d is alive after the pod ended", c)
	}
}

// readers returns the processes but except whose stdin is pipe.
func readers(t *testing.T, pipe string, except int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == except {
			continue
		}
		if in, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid)); err == nil && in == pipe {
			pids = append(pids, pid)
		}
	}
	return pids
}

// statFields returns the parent and the session of process pid.
func statFields(t *testing.T, pid int) (ppid, sid int) {
	t.Helper()
	f := procStat(t, pid)
	ppid, _ = strconv.Atoi(f[1])
	sid, _ = strconv.Atoi(f[3])
	return ppid, sid
}

// procStat returns the fields of /proc/PID/stat after the command name,
// which is in parentheses: state is [0], ppid [1], pgrp [2], session [3],
// utime [11], stime [12], cutime [13], cstime [14].
func procStat(t testing.TB, pid int) []string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
}
