package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/unitrun/unitrun/internal/pty"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// onTerminal runs cmd as a session whose controlling terminal, stdin,
// stdout and stderr are a new pseudo-terminal of 40 rows and 120 columns,
// as a user's shell runs it; once the terminal has shown ready, it types
// input. It returns what the terminal showed and the exit status.
func onTerminal(t *testing.T, cmd *exec.Cmd, ready, input string) (string, int) {
	t.Helper()
	p, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	master, tty := p.Master, p.TTY
	defer master.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var (
		mu    sync.Mutex
		out   bytes.Buffer
		typed bool
		done  = make(chan error, 1)
	)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			if !typed && strings.Contains(out.String(), ready) {
				typed = true
				master.Write([]byte(input))
			}
			mu.Unlock()
			if err != nil {
				done <- err
				return
			}
		}
	}()
	if err := cmd.Wait(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	if rerr := <-done; !errors.Is(rerr, syscall.EIO) {
		t.Fatal(rerr)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// run -t/--pty gives the command a terminal of its own, its controlling
// terminal, with unitrun's typed input (Ctrl-C included) and its output
// on unitrun's terminal, exactly as systemd-run --pty does on the same
// manager.
func TestRunPTYLikeSystemdRun(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("skipping: no python3 to call tcgetpgrp: %v", err)
	}
	srun, err := exec.LookPath("systemd-run")
	if err != nil {
		t.Skipf("skipping: systemd-run not found: %v", err)
	}
	script := `import os
print("ready", flush=True)
line = input()
print(os.tcgetpgrp(0) == os.getpgrp(), os.ttyname(0).startswith("/dev/pts/"), os.environ.get("TERM"), repr(line))`
	t.Setenv("TERM", "xterm-test")
	want, code := onTerminal(t, exec.Command(srun, "--user", "-q", "--pty", python, "-c", script), "ready", "typed words\r")
	if !strings.Contains(want, "True True xterm-test 'typed words'") || code != 0 {
		t.Fatalf("systemd-run --pty showed %q, exit %d", want, code)
	}
	for _, flag := range []string{"--pty", "-t"} {
		got, code := onTerminal(t, exec.Command(systemdtest.Binary(t), "run", "-q", flag, "--", python, "-c", script), "ready", "typed words\r")
		if got != want || code != 0 {
			t.Errorf("run %s showed %q, exit %d; systemd-run --pty showed %q", flag, got, code, want)
		}
	}
	// The command's exit status is unitrun's, as without --pty.
	if _, code := onTerminal(t, exec.Command(systemdtest.Binary(t), "run", "-q", "--pty", "--", "sh", "-c", "exit 3"), "", ""); code != 3 {
		t.Errorf("run --pty -- sh -c 'exit 3': exit %d", code)
	}
	// Ctrl-C, typed, interrupts the command through its terminal.
	if _, code := onTerminal(t, exec.Command(systemdtest.Binary(t), "run", "-q", "--pty", "--", "sh", "-c", "echo ready; sleep 100"), "ready", "\x03"); code != 130 {
		t.Errorf("run --pty, Ctrl-C typed: exit %d; want 130, the command's SIGINT", code)
	}
	_, errs, code := unitrun(t, "run", "--pty", "--no-wait", "--", "true")
	if code != 2 || !strings.Contains(errs, "--pty and --no-wait") {
		t.Errorf("run --pty --no-wait: exit %d, stderr %q; want 2 (systemd-run refuses --pty --no-block)", code, errs)
	}
}

// run -S/--shell runs $SHELL on a terminal of its own in unitrun's current
// directory, as systemd-run -S does, and exits with the shell's status.
func TestRunShellLikeSystemdRun(t *testing.T) {
	srun, err := exec.LookPath("systemd-run")
	if err != nil {
		t.Skipf("skipping: systemd-run not found: %v", err)
	}
	dir := t.TempDir()
	systemdtest.Binary(t) // built from the module's directory, before the Chdir
	t.Chdir(dir)
	t.Setenv("SHELL", "/bin/sh")
	input := `echo "$PWD" $(tty | cut -c1-9); exit 3` + "\r"
	want, refCode := onTerminal(t, exec.Command(srun, "--user", "-q", "-S", "-E", "PS1=ready> "), "ready> ", input)
	if refCode != 3 || !strings.Contains(want, dir+" /dev/pts/") {
		t.Fatalf("systemd-run -S showed %q, exit %d", want, refCode)
	}
	got, code := onTerminal(t, exec.Command(systemdtest.Binary(t), "run", "-q", "-S", "-E", "PS1=ready> "), "ready> ", input)
	if got != want || code != refCode {
		t.Errorf("run -S showed %q, exit %d; systemd-run -S showed %q, exit %d", got, code, want, refCode)
	}
	_, errs, code := unitrun(t, "run", "-S", "--", "true")
	if code != 2 || !strings.Contains(errs, "--shell runs $SHELL: give no command") {
		t.Errorf("run -S -- true: exit %d, stderr %q; want 2", code, errs)
	}
}
