package podrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	ossignal "os/signal"
	"syscall"
)

// An app's output goes to its log file in the pod's state directory,
// which also holds the pod's records: a log that filled that file system
// would leave no room to record any exit. So the app writes into a pipe,
// and a copier, "unitrun pod log-copy", appends what it reads to the log
// while the log's file system keeps LogReserve bytes free, then writes
// [DroppedMarker] once and drops the rest of the run's output, reading
// on, so that the app is neither blocked nor killed by SIGPIPE.

// LogReserve is the free space that an app's log leaves on its file
// system, for the pod's records.
const LogReserve = 1 << 20

// DroppedMarker is the line a log ends with once its copier drops output.
const DroppedMarker = "[unitrun: output dropped from here on: the log's file system keeps 1 MiB free for the pod's records]\n"

// envLogCopier marks the copier proper, which "pod log-copy" starts and
// leaves running.
const envLogCopier = "UNITRUN_LOG_COPIER"

// pipeOutput makes the process's stdout and stderr, its log file, a pipe
// to a copier (see [LogCopy]). The copier is no child of the process,
// which becomes the app's command: an app that waits for all its children
// would wait for it, and it for the app.
func pipeOutput() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	cmd, err := logCopyCmd(r)
	if err == nil {
		err = cmd.Run()
	}
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

// LogCopy is "unitrun pod log-copy", with its stdin the pipe an app
// writes to and its stdout the app's log file. Run by [pipeOutput], it
// starts the copier proper, the same command, and returns once the
// copier ignores the stop signals, without waiting for its end, so that
// the copier is left to the service's manager.
// The copier appends what it reads to the log while the log's file system
// keeps [LogReserve] bytes free, then writes [DroppedMarker] and drops
// the rest; it returns at the end of its input, once every writer has
// closed it. It ignores SIGTERM, SIGINT and SIGHUP: a stop's signals end
// the app, and the copier ends with its output.
func LogCopy() error {
	if os.Getenv(envLogCopier) == "" {
		// The copier closes its end of ready once it ignores the stop
		// signals: until then, systemd's SIGTERM to what is left of the
		// service once the app has exited would end it, and the app is
		// executed only once this returns.
		ready, readyW, err := os.Pipe()
		if err != nil {
			return err
		}
		defer ready.Close()
		cmd, err := logCopyCmd(os.Stdin)
		if err != nil {
			readyW.Close()
			return err
		}
		cmd.ExtraFiles = []*os.File{readyW}
		cmd.Env = append(os.Environ(), envLogCopier+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		readyW.Close()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, ready)
		return err
	}
	ossignal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	os.NewFile(3, "ready").Close()
	return copyLog(os.Stdout, os.Stdin)
}

// logCopyCmd is "unitrun pod log-copy" reading in, with the process's
// stdout, the app's log, as its own.
func logCopyCmd(in *os.File) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "pod", "log-copy")
	cmd.Stdin, cmd.Stdout = in, os.Stdout
	return cmd, nil
}

// copyLog appends in to log until its end, as LogCopy says.
func copyLog(log *os.File, in io.Reader) error {
	buf := make([]byte, 64<<10)
	dropping := false
	for {
		n, err := in.Read(buf)
		if n > 0 && !dropping {
			var st syscall.Statfs_t
			if serr := syscall.Fstatfs(int(log.Fd()), &st); serr == nil && int64(st.Bavail)*st.Bsize-int64(n) < LogReserve {
				dropping = true
				log.WriteString(DroppedMarker)
			} else if _, werr := log.Write(buf[:n]); werr != nil {
				dropping = true
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
