package pod

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// pollInterval is how often Logs, following, looks at the log files.
const pollInterval = 50 * time.Millisecond

// LogOptions choose what Logs copies of each app's log.
type LogOptions struct {
	Prefix     bool      // each line starts with "APP | "
	Follow     bool      // go on with what the apps write (not with Previous)
	Tail       int       // if above 0, only the last Tail lines of each app's log to begin with
	Since      time.Time // if not zero, only the lines written at or after it
	Timestamps bool      // each line starts with its time, RFC 3339 with nanoseconds in UTC, and a space
	Previous   bool      // only the lines of the app's run before its last one
}

// Logs copies the output of apps of pod (their log files) to w, as o
// chooses: see [OpenLogs] and [AppLogs.Copy].
func Logs(ctx context.Context, stateDir, pod string, apps []string, w io.Writer, o LogOptions, done func() bool) error {
	l, err := OpenLogs(stateDir, pod, apps, o)
	if err != nil {
		return err
	}
	defer l.Close()
	return l.Copy(ctx, w, done)
}

// AppLogs are the logs of apps of a pod being copied.
type AppLogs struct {
	logs   []*appLog
	follow bool
}

// OpenLogs opens the logs of apps of pod for Copy. A line is ended by its
// newline, or by the end of its run or of the log; one the log ends
// without a newline is copied with one. A log file that is a symlink is
// refused; so are o.Since, o.Timestamps and o.Previous for a log written
// before unitrun kept its times, and o.Previous for an app with one run
// only.
func OpenLogs(stateDir, pod string, apps []string, o LogOptions) (*AppLogs, error) {
	if _, err := os.Lstat(Dir(stateDir, pod)); err != nil {
		return nil, err
	}
	a := &AppLogs{follow: o.Follow && !o.Previous}
	for _, app := range apps {
		if err := CheckNames(pod, app); err != nil {
			a.Close()
			return nil, err
		}
		l := &appLog{app: app, path: LogFile(stateDir, pod, app), o: o, run: -1, previous: -1}
		if o.Prefix {
			l.prefix = app + " | "
		}
		a.logs = append(a.logs, l)
		if err := l.open(); err != nil {
			a.Close()
			return nil, err
		}
		if err := l.check(); err != nil {
			a.Close()
			return nil, err
		}
	}
	return a, nil
}

// Copy copies the logs to w. Without o.Follow it copies what the files
// hold and returns. With it, it keeps copying what the apps write until
// ctx is done, or until done returns true, after which it copies what is
// left and returns.
func (a *AppLogs) Copy(ctx context.Context, w io.Writer, done func() bool) error {
	last := !a.follow || done()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		for _, l := range a.logs {
			if err := l.copy(w, last); err != nil {
				return err
			}
		}
		if last {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		last = done()
	}
}

// Close closes the log files.
func (a *AppLogs) Close() {
	for _, l := range a.logs {
		l.close()
	}
}

// appLog is one app's log file being read, with its marks.
type appLog struct {
	app    string
	path   string
	o      LogOptions
	prefix string
	f      *os.File // nil until the file exists
	buf    []byte   // what copy reads into
	marks  logMarks
	next   []logMark // marks read, not yet passed
	pos    int64     // the log's offset read up to
	run    int       // the run pos is in, counted from 0; -1 before the first mark
	t      time.Time // the time of the write pos is in
	// previous is the run o.Previous copies, found by check.
	previous int
	// The line being read: its start, time and run.
	partial []byte
	lineT   time.Time
	lineRun int
	// tail holds the last lines before the first copy's end, with o.Tail.
	tail   []string
	copied bool // the first copy is done
}

// open opens the log file and its times file if the log exists: systemd
// creates it as the app first starts (StandardOutput=append:), before
// its copier creates the times file.
func (l *appLog) open() error {
	f, err := os.OpenFile(l.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l.f = f
	return l.openMarks()
}

// openMarks opens the times file if it exists and is not yet open.
func (l *appLog) openMarks() error {
	if l.marks.f != nil {
		return nil
	}
	f, err := os.OpenFile(LogTimes(l.path), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l.marks = logMarks{f: f, r: bufio.NewReader(f)}
	return nil
}

func (l *appLog) close() {
	if l.f != nil {
		l.f.Close()
	}
	if l.marks.f != nil {
		l.marks.f.Close()
	}
}

// check refuses what the log cannot give, as Logs says, and finds the
// run that o.Previous copies.
func (l *appLog) check() error {
	if l.f != nil && l.marks.f == nil {
		if st, err := l.f.Stat(); err != nil {
			return err
		} else if st.Size() > 0 && (l.o.Previous || l.o.Timestamps || !l.o.Since.IsZero()) {
			return fmt.Errorf("the log of app %s was written by an older unitrun and has no times: --previous, --since and --timestamps cannot be honoured", l.app)
		}
	}
	if !l.o.Previous {
		return nil
	}
	runs := 0
	if l.f != nil {
		marks, err := l.marks.read()
		if err != nil {
			return err
		}
		l.next = marks
		for _, m := range marks {
			if m.run {
				runs++
			}
		}
	}
	if runs < 2 {
		return fmt.Errorf("app %s has no previous run (--previous): it has run %d time(s)", l.app, runs)
	}
	l.previous = runs - 2
	return nil
}

// copy writes the lines the file holds now to w that o chooses, and with
// final also the last line if it has no newline. A file that does not
// exist yet holds nothing.
func (l *appLog) copy(w io.Writer, final bool) error {
	if l.f == nil {
		if err := l.open(); err != nil || l.f == nil {
			return err
		}
	}
	if err := l.openMarks(); err != nil {
		return err
	}
	// Every byte below size was written after its mark: read the marks
	// after the size.
	st, err := l.f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	marks, err := l.marks.read()
	if err != nil {
		return err
	}
	l.next = append(l.next, marks...)
	emit := func(line []byte) error { return l.line(w, line) }
	if l.buf == nil {
		l.buf = make([]byte, 64<<10)
	}
	for l.pos < size {
		n, err := l.f.ReadAt(l.buf[:min(int64(len(l.buf)), size-l.pos)], l.pos)
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		for data := l.buf[:n]; len(data) > 0; {
			if err := l.pass(emit); err != nil {
				return err
			}
			end := len(data)
			if len(l.next) > 0 && l.next[0].offset-l.pos < int64(end) {
				end = int(l.next[0].offset - l.pos)
			}
			seg := data[:end]
			for len(seg) > 0 {
				if len(l.partial) == 0 {
					l.lineT, l.lineRun = l.t, l.run
				}
				i := bytes.IndexByte(seg, '\n')
				if i < 0 {
					l.partial = append(l.partial, seg...)
					break
				}
				l.partial = append(l.partial, seg[:i+1]...)
				seg = seg[i+1:]
				if err := emit(l.partial); err != nil {
					return err
				}
				l.partial = l.partial[:0]
			}
			l.pos += int64(end)
			data = data[end:]
		}
	}
	if final {
		if err := l.pass(emit); err != nil {
			return err
		}
		if err := l.endLine(emit); err != nil {
			return err
		}
	}
	if !l.copied {
		l.copied = true
		for _, s := range l.tail {
			if _, err := io.WriteString(w, s); err != nil {
				return err
			}
		}
		l.tail = nil
	}
	return nil
}

// pass applies the marks at or before pos: a run's start ends the line
// the run before left without a newline.
func (l *appLog) pass(emit func([]byte) error) error {
	for len(l.next) > 0 && l.next[0].offset <= l.pos {
		m := l.next[0]
		l.next = l.next[1:]
		if m.run {
			if err := l.endLine(emit); err != nil {
				return err
			}
			l.run++
		}
		l.t = m.t
	}
	return nil
}

// endLine copies the line being read, if any, with a newline.
func (l *appLog) endLine(emit func([]byte) error) error {
	if len(l.partial) == 0 {
		return nil
	}
	err := emit(append(l.partial, '\n'))
	l.partial = l.partial[:0]
	return err
}

// line writes one line, with its newline, if o chooses it: to w, or to
// the tail kept until the first copy's end.
func (l *appLog) line(w io.Writer, line []byte) error {
	if l.o.Previous && l.lineRun != l.previous || !l.o.Since.IsZero() && l.lineT.Before(l.o.Since) {
		return nil
	}
	s := l.prefix
	if l.o.Timestamps {
		s += l.lineT.UTC().Format(time.RFC3339Nano) + " "
	}
	s += string(line)
	if l.o.Tail > 0 && !l.copied {
		if len(l.tail) == l.o.Tail {
			l.tail = l.tail[1:]
		}
		l.tail = append(l.tail, s)
		return nil
	}
	_, err := io.WriteString(w, s)
	return err
}
