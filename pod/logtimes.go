package pod

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// An app's log holds its output's bytes exactly; its times file, beside
// it, says when each byte was written and by which run of the app. It is
// text, a mark a line: "r OFFSET TIME" where a run's copier starts, and
// "w OFFSET TIME" before each write, OFFSET the log's size then and TIME
// the Unix time in nanoseconds. A line of the log was written at the time
// of the last mark at or before its first byte, by the run of the last
// "r" mark at or before it. A log without a times file was written before
// unitrun kept one: one run, no times.

// LogTimes is the times file of the log at path.
func LogTimes(path string) string { return strings.TrimSuffix(path, ".log") + ".times" }

// LogTimesWriter appends marks to a log's times file.
type LogTimesWriter struct{ f *os.File }

// OpenLogTimes opens the times file of the log at path for appending,
// creating it (0600) if need be.
func OpenLogTimes(path string) (*LogTimesWriter, error) {
	f, err := os.OpenFile(LogTimes(path), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return &LogTimesWriter{f}, nil
}

// Mark appends a mark: the start of a run if run is set, else a write,
// at offset of the log, at time t.
func (w *LogTimesWriter) Mark(run bool, offset int64, t time.Time) error {
	kind := "w"
	if run {
		kind = "r"
	}
	_, err := fmt.Fprintf(w.f, "%s %d %d\n", kind, offset, t.UnixNano())
	return err
}

// Close closes the times file.
func (w *LogTimesWriter) Close() error { return w.f.Close() }

// logMark is one mark of a times file.
type logMark struct {
	run    bool
	offset int64
	t      time.Time
}

// logMarks reads a times file's marks as it grows.
type logMarks struct {
	f       *os.File // nil if the log has no times file
	r       *bufio.Reader
	partial string
}

// read returns the marks whose line is complete, not yet returned.
func (m *logMarks) read() ([]logMark, error) {
	var marks []logMark
	for m.f != nil {
		s, err := m.r.ReadString('\n')
		m.partial += s
		if err != nil {
			return marks, nil
		}
		line := m.partial
		m.partial = ""
		var kind string
		var off, ns int64
		if _, err := fmt.Sscanf(line, "%s %d %d\n", &kind, &off, &ns); err != nil || (kind != "r" && kind != "w") {
			return marks, fmt.Errorf("%s: mark %q: not \"r|w OFFSET TIME\"", m.f.Name(), strings.TrimSpace(line))
		}
		marks = append(marks, logMark{run: kind == "r", offset: off, t: time.Unix(0, ns)})
	}
	return marks, nil
}
