package podrun

import (
	"bytes"
	"context"
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
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
)

// TestLogCopierOneProcess runs an app that prints its own children and
// then waits: the app's output goes through exactly one copier, "unitrun
// pod unit-hook log-copy" run by the hook binary beside unitrun, whose parent is the manager (not the app's command, which
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
		s, err := record.ReadAppOrNew(r.StateDir, name, "a")
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
	bin := systemdtest.Binary(t)
	want := pod.HookPath(bin) + "\x00" + bin + "\x00pod\x00unit-hook\x00log-copy\x00--state-dir\x00" + r.StateDir + "\x00"
	if !strings.HasPrefix(string(cmdline), want) || !strings.HasSuffix(string(cmdline), "\x00"+name+"\x00a\x00") {
		t.Errorf("the copier's command line is %q, want %q...%s a", cmdline, want, name)
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

// TestLogsRunsAndTimes runs an app that fails twice, then succeeds, each
// run printing two lines, its last without a newline: each run begins a
// log file of its own, the live log holds the last run's bytes exactly
// and the one before it is kept in its segment, the first run's removed
// as the third started; logs read the kept runs as one, each run's last
// line ended but the log's, copied as written; --previous gives the second run's lines, --timestamps
// begins each line with its time in RFC 3339, and --since the first line
// of the last run gives that run's lines only; --tail 1 the last line. A
// log without its times file (written by an older unitrun) is still read
// whole, and refuses --previous by name.
func TestLogsRunsAndTimes(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	begin := time.Now()
	name := run(t, r, fmt.Sprintf(`
name: runs
restartBackoff: {initial: 100ms}
apps:
  - name: a
    restartPolicy: OnFailure
    exec: ["/bin/sh", "-c", "echo x >> %[1]s/n; n=$(wc -l < %[1]s/n); echo run $n; printf 'end %%s' $n; test $n -ge 3"]
`, dir), "")
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	logs := func(o pod.LogOptions) string {
		t.Helper()
		var out bytes.Buffer
		if err := pod.Logs(context.Background(), r.StateDir, name, []string{"a"}, &out, o, nil); err != nil {
			t.Fatalf("logs %+v: %v", o, err)
		}
		return out.String()
	}
	live := pod.LogFile(r.StateDir, name, "a")
	if log, err := os.ReadFile(live); err != nil || string(log) != "run 3\nend 3" {
		t.Errorf("the live log: %q, %v; want the last run's bytes", log, err)
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(live), "a.*.log"))
	if prev, err := os.ReadFile(logcopy.SegmentPath(live, 1, 0)); len(files) != 1 || err != nil || string(prev) != "run 2\nend 2" {
		t.Errorf("the log's segments: %q, the second run's %q, %v; want the second run's bytes alone", files, prev, err)
	}
	if got, want := logs(pod.LogOptions{}), "run 2\nend 2\nrun 3\nend 3"; got != want {
		t.Errorf("logs: %q, want %q, each run's last line ended but the log's", got, want)
	}
	if got, want := logs(pod.LogOptions{Previous: true}), "run 2\nend 2"; got != want {
		t.Errorf("logs --previous: %q, want %q", got, want)
	}
	if got, want := logs(pod.LogOptions{Tail: 1}), "end 3"; got != want {
		t.Errorf("logs --tail 1: %q, want %q", got, want)
	}
	stamped := strings.SplitAfter(logs(pod.LogOptions{Timestamps: true}), "\n")
	var times []time.Time
	for i, line := range stamped {
		stamp, rest, _ := strings.Cut(line, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || at.Before(begin) || at.After(time.Now()) || (i > 0 && at.Before(times[i-1])) || i >= 4 || rest != []string{"run 2\n", "end 2\n", "run 3\n", "end 3"}[i] {
			t.Fatalf("logs --timestamps line %d: %q, want the time it was written (RFC 3339, in order), a space, the line", i, line)
		}
		times = append(times, at)
	}
	if len(times) != 4 {
		t.Fatalf("logs --timestamps: %q, want 4 lines", stamped)
	}
	if got, want := logs(pod.LogOptions{Since: times[2]}), "run 3\nend 3"; got != want {
		t.Errorf("logs --since the last run's first line: %q, want %q", got, want)
	}
	for _, f := range append(files, live) {
		if err := os.Remove(logcopy.Times(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if got, want := logs(pod.LogOptions{}), "run 3\nend 3"; got != want {
		t.Errorf("logs without times: %q, want %q", got, want)
	}
	if err := pod.Logs(context.Background(), r.StateDir, name, []string{"a"}, &bytes.Buffer{}, pod.LogOptions{Previous: true}, nil); err == nil || !strings.Contains(err.Error(), "--previous") {
		t.Errorf("logs --previous without times: %v, want a refusal naming --previous", err)
	}
}
