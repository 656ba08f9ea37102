package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// OutputPath returns the path of the job's output log, or "" for an id
// not of NewID's form.
func (s *Store) OutputPath(id string) string {
	if checkID(id) != nil {
		return ""
	}
	return filepath.Join(s.output, id+".log")
}

// OpenOutput opens the job's output log for appending, creating it with
// mode 0600: the file to hand to the job's unit as stdout and stderr, so
// that the output goes on when the daemon is gone. The job's record must
// have been Put first (else the error wraps ErrNotFound). The log may not
// be a symlink.
func (s *Store) OpenOutput(id string) (*os.File, error) {
	return s.openOutput(id, os.O_CREATE|os.O_APPEND|os.O_WRONLY)
}

// ReadOutput opens the job's output log for reading. A job with no log
// yet is an error satisfying errors.Is(err, fs.ErrNotExist); no job, one
// wrapping ErrNotFound.
func (s *Store) ReadOutput(id string) (*os.File, error) {
	return s.openOutput(id, os.O_RDONLY)
}

// openOutput opens the job's output log, not following a symlink there,
// once it has checked that the job has a record.
func (s *Store) openOutput(id string, flag int) (*os.File, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	_, ok := s.recs[id]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	return openRegular(s.OutputPath(id), flag)
}

// Tail returns the last n bytes of the job's output log, exactly (the tail
// may begin inside a UTF-8 sequence), or all of it when it is shorter. It
// returns "" when n <= 0 or the job has no output log yet, and an error
// wrapping ErrNotFound when there is no such job. Output appended while
// Tail reads is not included.
func (s *Store) Tail(id string, n int) (string, error) {
	if n <= 0 {
		return "", checkID(id)
	}
	f, err := s.ReadOutput(id)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	return TailOf(f, n)
}

// TailOf returns the last n bytes of the open file f, or all of it when it
// is shorter.
func TailOf(f *os.File, n int) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(fi.Size()-int64(n), 0)
	buf := make([]byte, fi.Size()-off)
	m, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return string(buf[:m]), nil
}

// CopyOutput copies the job's output log f, opened by ReadOutput, to w
// from f's offset to its end, through buf. An output log is never reused:
// once Prune deletes it, f still reads the job's own bytes.
func (s *Store) CopyOutput(w io.Writer, id string, f *os.File, buf []byte) (int64, error) {
	return io.CopyBuffer(onlyWriter{w}, onlyReader{f}, buf)
}

// onlyWriter and onlyReader hide the methods with which io.CopyBuffer
// would pass buf over (ReadFrom, WriteTo).
type (
	onlyWriter struct{ io.Writer }
	onlyReader struct{ io.Reader }
)

// removeOutput deletes the job's output log, if it has one.
func (s *Store) removeOutput(id string) error {
	err := os.Remove(s.OutputPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// removeOrphans deletes the output logs of jobs without a record, and
// whatever else but directories the output directory holds.
func (s *Store) removeOrphans() error {
	entries, err := os.ReadDir(s.output)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".log")
		if _, live := s.recs[id]; ok && live || e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(s.output, e.Name())); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
