package logcopy

import (
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

// Times is the times file of the log at path.
func Times(path string) string { return strings.TrimSuffix(path, ".log") + ".times" }

// TimesWriter appends marks to a log's times file.
type TimesWriter struct{ f *os.File }

// OpenTimes opens the times file of the log at path for appending,
// creating it (0600) if need be.
func OpenTimes(path string) (*TimesWriter, error) {
	f, err := os.OpenFile(Times(path), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return &TimesWriter{f}, nil
}

// Mark appends a mark: the start of a run if run is set, else a write,
// at offset of the log, at time t.
func (w *TimesWriter) Mark(run bool, offset int64, t time.Time) error {
	kind := "w"
	if run {
		kind = "r"
	}
	_, err := fmt.Fprintf(w.f, "%s %d %d\n", kind, offset, t.UnixNano())
	return err
}

// Close closes the times file.
func (w *TimesWriter) Close() error { return w.f.Close() }
