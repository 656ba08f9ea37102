package podrun

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/unitrun/unitrun/pod"
)

// An app's output goes through a copier that keeps its log from filling
// the records' file system ([pod.LogCopy]); pipeOutput starts it.

// pipeOutput makes the process's stdout and stderr, its log file, a pipe
// to a copier (see [pod.LogCopy]) and returns once the copier ignores the stop
// signals: until then, systemd's SIGTERM to what is left of the service
// once the app has exited would end it, and the app is executed only once
// this returns. The copier is one process, started with CLONE_PARENT, so
// that its parent is the service's manager, not this process: it is no
// child of the app's command, which this process becomes (an app that
// waits for all its children would wait for it, and it for the app), and
// no process in between has to start it and exit, which cost each run one
// more unitrun process. It runs in a session of its own, in the app's
// cgroup, until every writer of the pipe has closed it.
func pipeOutput() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	err = startCopier(r)
	r.Close()
	if err != nil {
		return fmt.Errorf("start the copier of the log: %w", err)
	}
	for _, fd := range []int{1, 2} {
		if err := syscall.Dup3(int(w.Fd()), fd, 0); err != nil {
			return err
		}
	}
	return nil
}

// startCopier starts "unitrun pod log-copy" reading in, with the process's
// stdout, the app's log, as its own, as pipeOutput says, and waits until
// it has closed its end of a pipe, once it ignores the stop signals. The
// small hook binary beside unitrun ([pod.HookBinary]) runs it, where
// there is one: it starts in half the time, and the app's command is
// executed only once the copier is ready.
func startCopier(in *os.File) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer ready.Close()
	cmd := exec.Command(self, "pod", "log-copy")
	if hook := pod.HookBinary(self); hook != "" {
		cmd = exec.Command(hook, self, "pod", "log-copy")
	}
	cmd.Stdin, cmd.Stdout = in, os.Stdout
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_PARENT}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return err
	}
	// Not this process's child: its manager reaps it.
	cmd.Process.Release()
	_, err = io.Copy(io.Discard, ready)
	return err
}
