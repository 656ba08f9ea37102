package pod

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// pollInterval is how often Logs, following, looks at the log files.
const pollInterval = 50 * time.Millisecond

// Logs copies the output of apps of pod (their log files) to w, each line
// prefixed with "APP | " if prefix is set. Without follow it copies what
// the files hold and returns. With follow it keeps copying what the apps
// write until ctx is done, or until done returns true, after which it
// copies what is left and returns. A log file that is a symlink is refused.
func Logs(ctx context.Context, stateDir, pod string, apps []string, w io.Writer, prefix, follow bool, done func() bool) error {
	var logs []*appLog
	defer func() {
		for _, l := range logs {
			if l.f != nil {
				l.f.Close()
			}
		}
	}()
	if _, err := os.Lstat(Dir(stateDir, pod)); err != nil {
		return err
	}
	for _, a := range apps {
		if err := CheckNames(pod, a); err != nil {
			return err
		}
		l := &appLog{path: LogFile(stateDir, pod, a)}
		if err := l.open(); err != nil {
			return err
		}
		if prefix {
			l.prefix = a + " | "
		}
		logs = append(logs, l)
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		last := !follow || done()
		for _, l := range logs {
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
	}
}

// appLog is one app's log file being read.
type appLog struct {
	path    string
	f       *os.File // nil until the file exists
	r       *bufio.Reader
	prefix  string
	partial []byte // the start of a line not yet ended
}

// open opens the log file if it exists: systemd creates it as the app
// first starts (StandardOutput=append:).
func (l *appLog) open() error {
	f, err := os.OpenFile(l.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	l.f, l.r = f, bufio.NewReader(f)
	return nil
}

// copy writes the complete lines the file holds now to w, and with final
// also the last line if it has no newline. A file that does not exist yet
// holds nothing.
func (l *appLog) copy(w io.Writer, final bool) error {
	if l.f == nil {
		if err := l.open(); err != nil || l.f == nil {
			return err
		}
	}
	for {
		chunk, err := l.r.ReadBytes('\n')
		l.partial = append(l.partial, chunk...)
		if errors.Is(err, io.EOF) {
			if final && len(l.partial) > 0 {
				return l.flush(w, append(l.partial, '\n'))
			}
			return nil
		}
		if err != nil {
			return err
		}
		if err := l.flush(w, l.partial); err != nil {
			return err
		}
	}
}

func (l *appLog) flush(w io.Writer, line []byte) error {
	_, err := io.WriteString(w, l.prefix+string(line))
	l.partial = l.partial[:0]
	return err
}
