package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// pod logs of an app that ran twice: --previous prints the first run's
// lines exactly, --timestamps begins each line with its time (RFC 3339
// with nanoseconds), --since that time of the second run's line prints
// that line only, --since as a duration and --tail cut as asked; bad
// --since and --tail values are refused naming the flag, with exit 2.
func TestPodLogsFlags(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "twice")
	script := fmt.Sprintf(`echo x >> %[1]s/n; n=$(wc -l < %[1]s/n); echo "run $n  spaced "; test $n -ge 2`, t.TempDir())
	manifest := fmt.Sprintf("name: twice\nrestartBackoff: {initial: 100ms}\napps: [{name: a, restartPolicy: OnFailure, exec: [/bin/sh, -c, %q]}]\n", script)
	if _, errs, code := podCLI(t, dir, "run", manifestFile(t, manifest)); code != 0 {
		t.Fatalf("pod run: exit %d: %s", code, errs)
	}
	if out, errs, code := podCLI(t, dir, "logs", "--previous", "twice", "a"); code != 0 || out != "run 1  spaced \n" {
		t.Errorf("pod logs --previous: exit %d, %q, %q; want the first run's line", code, out, errs)
	}
	out, errs, code := podCLI(t, dir, "logs", "--timestamps", "twice", "a")
	lines := strings.SplitAfter(out, "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("pod logs --timestamps: exit %d, %q, %q; want two lines", code, out, errs)
	}
	stamp, rest, _ := strings.Cut(lines[1], " ")
	if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil || rest != "run 2  spaced \n" {
		t.Errorf("pod logs --timestamps: second line %q, want its time in RFC 3339, a space, the line", lines[1])
	}
	if out, errs, code := podCLI(t, dir, "logs", "--since", stamp, "twice"); code != 0 || out != "a | run 2  spaced \n" {
		t.Errorf("pod logs --since %s: exit %d, %q, %q; want the second run's line", stamp, code, out, errs)
	}
	if out, errs, code := podCLI(t, dir, "logs", "--since", "1h", "--tail", "1", "twice", "a"); code != 0 || out != "run 2  spaced \n" {
		t.Errorf("pod logs --since 1h --tail 1: exit %d, %q, %q; want the last line", code, out, errs)
	}
	// As kubectl logs: --tail 0 none, -1 all.
	for tail, want := range map[string]string{"0": "", "-1": "run 1  spaced \nrun 2  spaced \n"} {
		if out, errs, code := podCLI(t, dir, "logs", "--tail", tail, "twice", "a"); code != 0 || out != want {
			t.Errorf("pod logs --tail %s: exit %d, %q, %q; want %q", tail, code, out, errs, want)
		}
	}
	for flag, value := range map[string]string{"--since": "yesterday", "--tail": "-2"} {
		if out, errs, code := podCLI(t, dir, "logs", flag, value, "twice"); code != 2 || out != "" || !strings.Contains(errs, flag+" ") {
			t.Errorf("pod logs %s %s: exit %d, %q, %q; want exit 2 and an error naming %s", flag, value, code, out, errs, flag)
		}
	}
}

// A chatty app whose pod bounds its logs to files of 8K, 2 a run: while
// it runs, its log files hold 16K at most, no file more than 8K, and pod
// logs prints its newest lines exactly, in order, with the oldest gone;
// --tail 3 its last three.
func TestPodLogsRotation(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "chatty")
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const last = 5000
	manifest := fmt.Sprintf("name: chatty\nlogs: {maxSize: 8K, maxFiles: 2}\napps: [{name: a, exec: [/bin/sh, -c, 'seq 1 %d | sed \"s/^/line /\"; read x < %s']}]\n", last, fifo)
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, manifest)); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	defer os.WriteFile(fifo, []byte("\n"), 0)
	want := fmt.Sprintf("line %d\n", last)
	for i := 0; ; i++ {
		out, errs, code := podCLI(t, dir, "logs", "--tail", "1", "chatty", "a")
		if code != 0 {
			t.Fatalf("pod logs --tail 1: exit %d: %s", code, errs)
		}
		if out == want {
			break
		}
		if i == 600 {
			t.Fatalf("pod logs --tail 1: %q; the app did not print its last line", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "pods", "chatty", "logs", "a.*"))
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v; want 0600", filepath.Base(f), st.Mode().Perm())
		}
		if st.Size() > 8<<10 {
			t.Errorf("%s holds %d bytes, more than maxSize 8K", filepath.Base(f), st.Size())
		}
	}
	if total > 2*8<<10 || len(files) > 4 {
		t.Errorf("the log's files %q hold %d bytes, more than maxFiles 2 of maxSize 8K", files, total)
	}
	out, errs, code := podCLI(t, dir, "logs", "chatty", "a")
	var first int
	if _, err := fmt.Sscanf(out, "line %d\n", &first); code != 0 || err != nil || first <= 1 {
		t.Fatalf("pod logs: exit %d, %q, %q; want the newest lines, the oldest gone", code, out, errs)
	}
	var b strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if out != b.String() {
		t.Errorf("pod logs: %q, want lines %d to %d in order", out, first, last)
	}
	if out, errs, code := podCLI(t, dir, "logs", "--tail", "3", "chatty", "a"); code != 0 || out != fmt.Sprintf("line %d\nline %d\nline %d\n", last-2, last-1, last) {
		t.Errorf("pod logs --tail 3: exit %d, %q, %q; want the last three lines", code, out, errs)
	}
	// --timestamps: the time of the last mark at or before the line's
	// first byte, in the live log's times file.
	live := filepath.Join(dir, "pods", "chatty", "logs", "a.log")
	log, _ := os.ReadFile(live)
	times, _ := os.ReadFile(strings.TrimSuffix(live, ".log") + ".times")
	at := bytes.LastIndex(log, []byte(want))
	var stamp string
	for _, mark := range strings.Split(strings.TrimSpace(string(times)), "\n") {
		var kind string
		var off, ns int64
		if _, err := fmt.Sscanf(mark, "%s %d %d", &kind, &off, &ns); err == nil && off <= int64(at) {
			stamp = time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
		}
	}
	if out, errs, code := podCLI(t, dir, "logs", "--timestamps", "--tail", "1", "chatty", "a"); code != 0 || at < 0 || out != stamp+" "+want {
		t.Errorf("pod logs --timestamps --tail 1: exit %d, %q, %q; want %q", code, out, errs, stamp+" "+want)
	}
}

// pod logs -f of a chatty app whose log rotates as it prints (files of
// 8K, enough of them that none is removed) prints every line exactly once,
// in order, across the rotations.
func TestPodLogsFollowRotation(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "rotating")
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const last = 3000
	manifest := fmt.Sprintf("name: rotating\nlogs: {maxSize: 8K, maxFiles: 20}\napps: [{name: a, exec: [/bin/sh, -c, 'echo first; read x < %s; seq 2 %d | sed \"s/^/line /\"']}, {name: b, exec: [/bin/sleep, 600]}]\n", fifo, last)
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, manifest)); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	cmd := exec.Command(systemdtest.Binary(t), "pod", "logs", "-f", "rotating", "a", "--state-dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("pod logs -f: first line %q, %v", line, err)
	}
	os.WriteFile(fifo, []byte("\n"), 0)
	rest, _ := io.ReadAll(r)
	cmd.Wait()
	var b strings.Builder
	for i := 2; i <= last; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "pods", "rotating", "logs", "a.*.log")); len(files) < 3 {
		t.Errorf("the log rotated into %q; want several files", files)
	}
	if string(rest) != b.String() || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("pod logs -f across rotations: exit %d, %d bytes; want lines 2 to %d exactly, exit 0", cmd.ProcessState.ExitCode(), len(rest), last)
	}
}

// pod logs -f of one app prints its lines as they come and returns, with
// exit 0, once that app's run has ended (its last line as written, without
// a newline), though the pod runs on; of an app
// that runs on, it returns with exit 0 at Ctrl-C, as journalctl -f does.
func TestPodLogsFollow(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "follow")
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("name: follow\napps:\n- {name: a, exec: [/bin/sh, -c, 'echo one; read x < %s; printf \"two\\nthree\"']}\n- {name: b, exec: [/bin/sh, -c, 'echo b up; exec sleep 600']}\n", fifo)
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, manifest)); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	follow := func(app string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
		cmd := exec.Command(systemdtest.Binary(t), "pod", "logs", "-f", "follow", app, "--state-dir", dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewReader(out), &errb
	}
	// rest reads the rest of cmd's output and waits for it, failing the
	// test if it has not ended after a minute: -f that would follow the
	// pod waits on.
	rest := func(cmd *exec.Cmd, out io.Reader, what string) string {
		done := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(out)
			cmd.Wait()
			done <- b
		}()
		select {
		case b := <-done:
			return string(b)
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Errorf("pod logs -f %s: still following a minute on", what)
			return string(<-done)
		}
	}
	cmd, out, errb := follow("a")
	if line, err := out.ReadString('\n'); err != nil || line != "one\n" {
		t.Fatalf("pod logs -f follow a: first line %q, %v; want \"one\\n\"", line, err)
	}
	os.WriteFile(fifo, []byte("\n"), 0)
	if rest := rest(cmd, out, "follow a, once a has ended"); rest != "two\nthree" || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("pod logs -f follow a: then %q, exit %d, stderr %q; want \"two\\nthree\" and exit 0 once a has ended", rest, cmd.ProcessState.ExitCode(), errb)
	}
	// The bytes as a wrote them, without a newline it did not write
	// after its last line, as kubectl logs prints them; --timestamps
	// too; the "APP | " form of every app ends that line, which b's
	// lines follow.
	if out, errs, code := podCLI(t, dir, "logs", "follow", "a"); code != 0 || out != "one\ntwo\nthree" {
		t.Errorf("pod logs follow a: exit %d, %q, %q; want \"one\\ntwo\\nthree\"", code, out, errs)
	}
	if out, errs, code := podCLI(t, dir, "logs", "--timestamps", "--tail", "1", "follow", "a"); code != 0 || !strings.HasSuffix(out, "Z three") || strings.Count(out, " ") != 1 {
		t.Errorf("pod logs --timestamps --tail 1 follow a: exit %d, %q, %q; want the time, a space, \"three\"", code, out, errs)
	}
	if out, errs, code := podCLI(t, dir, "logs", "follow"); code != 0 || out != "a | one\na | two\na | three\nb | b up\n" {
		t.Errorf("pod logs follow: exit %d, %q, %q; want each app's lines, a's last ended", code, out, errs)
	}
	cmd, out, errb = follow("b")
	if line, err := out.ReadString('\n'); err != nil || line != "b up\n" {
		t.Fatalf("pod logs -f follow b: first line %q, %v; want \"b up\\n\"", line, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if rest := rest(cmd, out, "follow b, at SIGINT"); rest != "" || cmd.ProcessState.ExitCode() != 0 || errb.Len() != 0 {
		t.Errorf("pod logs -f follow b at SIGINT: then %q, exit %d, stderr %q; want nothing more, exit 0", rest, cmd.ProcessState.ExitCode(), errb)
	}
}
