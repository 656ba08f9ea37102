package pod

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// Logs copies the output of apps of pod (their log files) to w, each line
// prefixed with "APP | " if prefix is set. Without follow it copies what
// the files hold and returns. With follow it keeps copying what the apps
// write until ctx is done, or until done returns true, after which it
// copies what is left and returns. A log file that is a symlink is refused.
func Logs(ctx context.Context, stateDir, pod string, apps []string, w io.Writer, prefix, follow bool, done func() bool) error {
	var logs []*appLog
	defer func() {
		for _, l := range logs {
			l.f.Close()
		}
	}()
	for _, a := range apps {
		if err := checkNames(pod, a); err != nil {
			return err
		}
		f, err := os.OpenFile(LogFile(stateDir, pod, a), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		l := &appLog{f: f, r: bufio.NewReader(f)}
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
	f       *os.File
	r       *bufio.Reader
	prefix  string
	partial []byte // the start of a line not yet ended
}

// copy writes the complete lines the file holds now to w, and with final
// also the last line if it has no newline.
func (l *appLog) copy(w io.Writer, final bool) error {
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
