// Package logcopy is the copier of an app's output into its log, and the
// writer of the log's times file. It links the standard library alone,
// for the pods' exit hook (cmd/unitrun-hook), which runs it at every run
// of every app.
package logcopy

import (
	"bytes"
	"errors"
	"io"
	"os"
	ossignal "os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// An app's output goes to its log file in the pod's state directory,
// which also holds the pod's records: a log that filled that file system
// would leave no room to record any exit. So the app writes into a pipe,
// and a copier, "unitrun pod unit-hook log-copy" (the start hook starts
// it, run by the small hook binary where there is one), appends what it reads to the log while
// the log's file system keeps LogReserve bytes free, then writes
// [DroppedMarker] once and drops the rest of the run's output, reading
// on, so that the app is neither blocked nor killed by SIGPIPE. Beside
// the log, the copier keeps its times file ([Times]): a mark as it
// starts, one copier a run, and before each write where the bytes begin
// and when they were read, so that each line keeps its time and run while
// the log holds the app's bytes exactly. The copier bounds the log by
// rotation (rotate.go).

// LogReserve is the free space that an app's log leaves on its file
// system, for the pod's records.
const LogReserve = 1 << 20

// DroppedMarker is the line a log ends with once its copier drops output.
const DroppedMarker = "[unitrun: output dropped from here on: the log's file system keeps 1 MiB free for the pod's records]\n"

// Copy is "unitrun pod unit-hook log-copy", the copier that the start
// hook starts, with its stdin the pipe an app writes to, its stdout the app's log file
// and fd 3 the pipe it closes once it ignores the stop signals. It appends
// what it reads to the log, each write marked in the log's times file
// first (a log that is not a file, or whose times file cannot be opened,
// gets no marks), and rotated as [Rotation] says (a log that is not a
// file is not), while the log's file system keeps [LogReserve]
// bytes free, then writes [DroppedMarker] and drops the rest; it returns
// at the end of its input, once every writer has closed it. It ignores
// SIGTERM, SIGINT and SIGHUP: a stop's signals end the app, and the copier
// ends with its output.
func Copy() error {
	ossignal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	c := &copier{log: os.Stdout}
	if path, err := os.Readlink("/proc/self/fd/1"); err == nil && filepath.IsAbs(path) {
		ro := &rotator{path: path, r: ReadRotation(filepath.Dir(path))}
		if ro.startRun() == nil && c.open(path) == nil {
			c.rot = ro
		}
		if c.times, err = OpenTimes(path); err == nil {
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
// each write in times if it is not nil, and rotating the log with rot if
// it is not nil, as Copy says.
type copier struct {
	log   *os.File
	times *TimesWriter
	rot   *rotator
}

// open opens the live log at path, to append to it.
func (c *copier) open(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	// The file may be one systemd created for StandardOutput=append:,
	// with the mode its umask leaves (0644): the log is root's alone.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	c.log = f
	return nil
}

// rotate renames the live log into a segment (rotator.rotate) and goes
// on in a new one.
func (c *copier) rotate() error {
	if err := c.rot.rotate(); err != nil {
		return err
	}
	c.log.Close()
	if c.times != nil {
		c.times.Close()
		c.times = nil
	}
	if err := c.open(c.rot.path); err != nil {
		return err
	}
	times, err := OpenTimes(c.rot.path)
	if err == nil {
		c.times = times
	}
	return nil
}

// used is the size of the live log and its times file.
func (c *copier) used() int64 {
	var n int64
	if st, err := c.log.Stat(); err == nil {
		n += st.Size()
	}
	if c.times != nil {
		if st, err := c.times.f.Stat(); err == nil {
			n += st.Size()
		}
	}
	return n
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

// write appends b to the log, each write marked. With rotation, a file
// takes the whole lines that fit in it (a line longer than a file is cut)
// before the log is rotated, so that each file begins with a line.
func (c *copier) write(b []byte) error {
	for len(b) > 0 {
		n, full := len(b), false
		if c.rot != nil {
			used := c.used()
			if room := c.rot.r.MaxSize - markSize - used; int64(n) > room {
				n, full = bytes.LastIndexByte(b[:max(room, 0)], '\n')+1, true
				if n == 0 && used == 0 {
					n = int(room)
				}
			}
		}
		if n > 0 {
			c.mark(false)
			if _, err := c.log.Write(b[:n]); err != nil {
				return err
			}
			b = b[n:]
		}
		if full {
			if err := c.rotate(); err != nil {
				return err
			}
		}
	}
	return nil
}

// copy appends in to the log until its end, as Copy says.
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
