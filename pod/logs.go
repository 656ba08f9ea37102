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
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
)

// pollInterval is how often Logs, following, looks at the log files.
const pollInterval = 50 * time.Millisecond

// LogOptions choose what Logs copies of each app's log.
type LogOptions struct {
	Prefix     bool      // each line starts with "APP | "
	Follow     bool      // go on with what the apps write (not with Previous)
	Tail       int       // if above 0, only the last Tail lines of each app's log to begin with; if below 0, none of them (only what Follow copies)
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

// FollowEnds returns the done func with which Logs follows the log of
// app of pod, or of all its apps if app is "", as kubectl logs -f does: it
// reports true once the pod has ended (or its state cannot be read), and
// for one app, once the app's run that was going on at the first call, or
// else its next, has ended.
func FollowEnds(stateDir, pod, app string) func() bool {
	var followed *record.AppStatus
	return func() bool {
		s, err := ReadPod(stateDir, pod)
		if err != nil || s.Ended() {
			return true
		}
		i := slices.IndexFunc(s.Apps, func(a record.AppStatus) bool { return a.Name == app })
		if i < 0 {
			return app != ""
		}
		a := s.Apps[i]
		switch {
		case followed != nil:
			return a.State != record.AppRunning || a.Restarts != followed.Restarts || !a.StartedAt.Equal(followed.StartedAt)
		case a.State == record.AppRunning:
			followed = &a
			return false
		}
		return a.State != record.AppWaiting
	}
}

// AppLogs are the logs of apps of a pod being copied.
type AppLogs struct {
	logs   []*appLog
	follow bool
}

// OpenLogs opens the logs of apps of pod for Copy: each app's files that
// logcopy's rotation keeps, oldest first, read as one stream (a run's
// first file kept begins a run, though its start was removed). A line is
// ended by its newline, or by the end of its run or of the log; one
// without a newline is copied with one only where more follows it (the
// next run's lines, or with o.Prefix another app's), so that one app's
// log is copied exactly as it was written. A log file that is a symlink is
// refused; so are o.Since, o.Timestamps and o.Previous for a log written
// before unitrun kept its times, and o.Previous for an app with one run
// only.
func OpenLogs(stateDir, pod string, apps []string, o LogOptions) (*AppLogs, error) {
	if _, err := os.Lstat(record.Dir(stateDir, pod)); err != nil {
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
		if err := l.refresh(); err != nil {
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

// appLog is one app's log being read: its segments then its live log
// (logcopy's rotation), as one stream, with their marks.
type appLog struct {
	app    string
	path   string
	o      LogOptions
	prefix string
	segs   []*logFile // the files not yet read to their end, oldest first
	live   *logFile   // the live log, once open: the last of segs
	after  *logcopy.Segment
	buf    []byte // what copy reads into
	// entered says segs[0] has been entered: its start passed.
	entered bool
	pos     int64     // the offset of segs[0] read up to
	run     int       // the run pos is in, counted from 0; -1 before the first
	t       time.Time // the time of the write pos is in
	// previous is the run o.Previous copies, found by check.
	previous int
	// The line being read: its start, time and run.
	partial []byte
	lineT   time.Time
	lineRun int
	// tail holds the last lines before the first copy's end, with o.Tail
	// above 0.
	tail   []string
	copied bool // the first copy is done
}

// logFile is one file of an app's log, a segment or the live log, with
// its times file.
type logFile struct {
	f     *os.File
	marks logMarks
	next  []logMark // marks read, not yet passed
	run   int       // the run its segment's name gives; -1 for the live log
}

// openLogFile opens the log file at path and its times file; nil if it
// does not exist.
func openLogFile(path string, run int) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lf := &logFile{f: f, run: run}
	if err := lf.openMarks(path); err != nil {
		f.Close()
		return nil, err
	}
	return lf, nil
}

// openMarks opens the times file of the log file at path if it exists and
// is not yet open: systemd creates the live log as the app first starts
// (StandardOutput=append:), before its copier creates the times file.
func (lf *logFile) openMarks(path string) error {
	if lf.marks.f != nil {
		return nil
	}
	f, err := os.OpenFile(logcopy.Times(path), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lf.marks = logMarks{f: f, r: bufio.NewReader(f)}
	return nil
}

// readMarks appends the marks written since to next.
func (lf *logFile) readMarks() error {
	marks, err := lf.marks.read()
	lf.next = append(lf.next, marks...)
	return err
}

func (lf *logFile) close() {
	lf.f.Close()
	if lf.marks.f != nil {
		lf.marks.f.Close()
	}
}

// startsRun reports whether reading enters a new run at the start of lf,
// after a file of run prev (first: none), other than by a run's mark: lf
// holds something, does not begin with a run's mark, and is the first
// file read or the segment of another run than prev (the first segment
// kept of a run, or a log without times: one run).
func (lf *logFile) startsRun(prev int, first bool) (bool, error) {
	st, err := lf.f.Stat()
	if err != nil {
		return false, err
	}
	if st.Size() == 0 && len(lf.next) == 0 {
		return false, nil
	}
	if len(lf.next) > 0 && lf.next[0].run && lf.next[0].offset == 0 {
		return false, nil
	}
	return first || prev != -1 && lf.run != -1 && lf.run != prev, nil
}

// refresh opens what is new of the log: the live log once it exists, and
// once it has been rotated, the segments after it and the new live log,
// under the logs directory's shared lock.
func (l *appLog) refresh() error {
	if l.live != nil {
		st, err := os.Lstat(l.path)
		cur, serr := l.live.f.Stat()
		if serr != nil {
			return serr
		}
		if err == nil && os.SameFile(st, cur) {
			return nil
		}
	}
	unlock, err := logcopy.LockDir(filepath.Dir(l.path), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	var live os.FileInfo
	if l.live != nil {
		if live, err = l.live.f.Stat(); err != nil {
			return err
		}
		if st, err := os.Lstat(l.path); err == nil && os.SameFile(st, live) {
			return nil
		}
	}
	segs, err := logcopy.Segments(l.path)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if l.after != nil && (s.Run < l.after.Run || s.Run == l.after.Run && s.Part <= l.after.Part) {
			continue
		}
		l.after = &s
		if st, err := os.Lstat(s.Path); err == nil && live != nil && os.SameFile(st, live) {
			// The live log read so far, rotated.
			l.live.run = s.Run
			if err := l.live.openMarks(s.Path); err != nil {
				return err
			}
			continue
		}
		lf, err := openLogFile(s.Path, s.Run)
		if err != nil {
			return err
		}
		if lf != nil {
			l.segs = append(l.segs, lf)
		}
	}
	lf, err := openLogFile(l.path, -1)
	if err != nil {
		return err
	}
	l.live = lf
	if lf != nil {
		l.segs = append(l.segs, lf)
	}
	return nil
}

func (l *appLog) close() {
	for _, lf := range l.segs {
		lf.close()
	}
}

// check refuses what the log cannot give, as Logs says, and finds the
// run that o.Previous copies.
func (l *appLog) check() error {
	if l.live != nil && len(l.segs) == 1 && l.live.marks.f == nil {
		if st, err := l.live.f.Stat(); err != nil {
			return err
		} else if st.Size() > 0 && (l.o.Previous || l.o.Timestamps || !l.o.Since.IsZero()) {
			return fmt.Errorf("the log of app %s was written by an older unitrun and has no times: --previous, --since and --timestamps cannot be honoured", l.app)
		}
	}
	if !l.o.Previous {
		return nil
	}
	runs, prev := 0, -1
	for _, lf := range l.segs {
		if err := lf.readMarks(); err != nil {
			return err
		}
		if starts, err := lf.startsRun(prev, runs == 0); err != nil {
			return err
		} else if starts {
			runs++
		}
		for _, m := range lf.next {
			if m.run {
				runs++
			}
		}
		prev = lf.run
	}
	if runs < 2 {
		return fmt.Errorf("app %s has no previous run (--previous): it has run %d time(s)", l.app, runs)
	}
	l.previous = runs - 2
	return nil
}

// copy writes the lines the files hold now to w that o chooses, and with
// final also the last line if it has no newline ([appLog.endLine]). A log
// that does not exist yet holds nothing.
func (l *appLog) copy(w io.Writer, final bool) error {
	if err := l.refresh(); err != nil {
		return err
	}
	emit := func(line []byte) error { return l.line(w, line) }
	prev := -1
	for len(l.segs) > 0 {
		lf := l.segs[0]
		if !l.entered {
			if err := lf.readMarks(); err != nil {
				return err
			}
			starts, err := lf.startsRun(prev, l.run == -1)
			if err != nil {
				return err
			}
			if starts {
				if err := l.endLine(emit, false); err != nil {
					return err
				}
				l.run++
			}
			l.entered = true
		}
		if err := l.read(lf, emit); err != nil {
			return err
		}
		if len(l.segs) == 1 {
			break
		}
		// A segment, read to its end: on to the next file.
		if err := l.pass(lf, emit); err != nil {
			return err
		}
		lf.close()
		prev = lf.run
		l.segs, l.pos, l.entered = l.segs[1:], 0, false
	}
	if final && len(l.segs) > 0 {
		if err := l.pass(l.segs[0], emit); err != nil {
			return err
		}
		if err := l.endLine(emit, true); err != nil {
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

// read passes the lines of lf that it holds now to emit, from pos on.
func (l *appLog) read(lf *logFile, emit func([]byte) error) error {
	if lf == l.live {
		if err := lf.openMarks(l.path); err != nil {
			return err
		}
	}
	// Every byte below size was written after its mark: read the marks
	// after the size.
	st, err := lf.f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if err := lf.readMarks(); err != nil {
		return err
	}
	if l.buf == nil {
		l.buf = make([]byte, 64<<10)
	}
	for l.pos < size {
		n, err := lf.f.ReadAt(l.buf[:min(int64(len(l.buf)), size-l.pos)], l.pos)
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		for data := l.buf[:n]; len(data) > 0; {
			if err := l.pass(lf, emit); err != nil {
				return err
			}
			end := len(data)
			if len(lf.next) > 0 && lf.next[0].offset-l.pos < int64(end) {
				end = int(lf.next[0].offset - l.pos)
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
	return nil
}

// pass applies the marks of lf at or before pos: a run's start ends the
// line the run before left without a newline.
func (l *appLog) pass(lf *logFile, emit func([]byte) error) error {
	for len(lf.next) > 0 && lf.next[0].offset <= l.pos {
		m := lf.next[0]
		lf.next = lf.next[1:]
		if m.run {
			if err := l.endLine(emit, false); err != nil {
				return err
			}
			l.run++
		}
		l.t = m.t
	}
	return nil
}

// endLine copies the line being read, if any, which its run or, with
// atEnd, the log ends: with a newline, so that the next run's lines (or
// in the "APP | " form the next app's) begin lines of their own, but as
// the app wrote it, without one, where nothing is printed after it (the
// log's end, the run --previous prints), as kubectl logs prints a
// container's last partial line.
func (l *appLog) endLine(emit func([]byte) error, atEnd bool) error {
	if len(l.partial) == 0 {
		return nil
	}
	last := atEnd || l.o.Previous && l.lineRun == l.previous
	line := l.partial
	if !last || l.prefix != "" {
		line = append(line, '\n')
	}
	err := emit(line)
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
	if l.o.Tail < 0 && !l.copied {
		return nil
	}
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
