package podrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/pod"
)

// An app's output goes to its log file in the pod's state directory,
// which also holds the pod's records: a log that filled that file system
// would leave no room to record any exit. So the app writes into a pipe,
// and a copier, "unitrun pod log-copy", appends what it reads to the log
// while the log's file system keeps LogReserve bytes free, then writes
// [DroppedMarker] once and drops the rest of the run's output, reading
// on, so that the app is neither blocked nor killed by SIGPIPE. Beside
// the log, the copier keeps its times file ([pod.LogTimes]): a mark as it
// starts, one copier a run, and before each write where the bytes begin
// and when they were read, so that each line keeps its time and run while
// the log holds the app's bytes exactly.

// LogReserve is the free space that an app's log leaves on its file
// system, for the pod's records.
const LogReserve = 1 << 20

// DroppedMarker is the line a log ends with once its copier drops output.
const DroppedMarker = "[unitrun: output dropped from here on: the log's file system keeps 1 MiB free for the pod's records]\n"

// pipeOutput makes the process's stdout and stderr, its log file, a pipe
// to a copier (see [LogCopy]) and returns once the copier ignores the stop
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
// it has closed its end of a pipe, once it ignores the stop signals.
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

// LogCopy is "unitrun pod log-copy", the copier that [pipeOutput] starts,
// with its stdin the pipe an app writes to, its stdout the app's log file
// and fd 3 the pipe it closes once it ignores the stop signals. It appends
// what it reads to the log, each write marked in the log's times file
// first (a log that is not a file, or whose times file cannot be opened,
// gets no marks), while the log's file system keeps [LogReserve]
// bytes free, then writes [DroppedMarker] and drops the rest; it returns
// at the end of its input, once every writer has closed it. It ignores
// SIGTERM, SIGINT and SIGHUP: a stop's signals end the app, and the copier
// ends with its output.
func LogCopy() error {
	ossignal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	c := &copier{log: os.Stdout}
	if path, err := os.Readlink("/proc/self/fd/1"); err == nil && filepath.IsAbs(path) {
		if c.times, err = pod.OpenLogTimes(path); err == nil {
			defer c.times.Close()
		}
	}
	// Marked before the app starts: a reader that sees the app run sees
	// its run.
	c.mark(true)
	os.NewFile(3, "ready").Close()
	return c.copy(os.Stdin)
}

// copier appends an app's output to its log, marking the run's start and
// each write in times if it is not nil, as LogCopy says.
type copier struct {
	log   *os.File
	times *pod.LogTimesWriter
}

// mark marks the start of a run if run is set, else of a write, at the
// log's end, now.
func (c *copier) mark(run bool) {
	if c.times == nil {
		return
	}
	if st, err := c.log.Stat(); err == nil {
		c.times.Mark(run, st.Size(), time.Now())
	}
}

// markSize bounds the size of a mark, counted with each write against
// [LogReserve]: the times file shares the log's file system.
const markSize = 64

// write marks a write and appends b to the log.
func (c *copier) write(b []byte) error {
	c.mark(false)
	_, err := c.log.Write(b)
	return err
}

// copy appends in to the log until its end, as LogCopy says.
func (c *copier) copy(in io.Reader) error {
	buf := make([]byte, 64<<10)
	dropping := false
	for {
		n, err := in.Read(buf)
		if n > 0 && !dropping {
			var st syscall.Statfs_t
			if serr := syscall.Fstatfs(int(c.log.Fd()), &st); serr == nil && int64(st.Bavail)*st.Bsize-int64(n)-markSize < LogReserve {
				dropping = true
				c.write([]byte(DroppedMarker))
			} else if werr := c.write(buf[:n]); werr != nil {
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
