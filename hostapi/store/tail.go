package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Tail returns the last n bytes of the job's output log, exactly (the tail
// may begin inside a UTF-8 sequence), or all of it when it is shorter. It
// returns "" when n <= 0 or the job has no output log yet, and an error
// wrapping ErrNotFound when there is no such job, or Prune removed it
// while Tail read. Output appended while Tail reads is not included.
func (s *Store) Tail(id string, n int) (string, error) {
	if n <= 0 {
		return "", checkID(id)
	}
	f, err := s.openJobFile(id, outputFile, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := fi.Size()
	off := max(size-int64(n), 0)
	buf := make([]byte, size-off)
	m, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if !s.holds(id, outputFile, f) {
		return "", fmt.Errorf("job %s: %w", id, ErrNotFound) // pruned while read
	}
	return string(buf[:m]), nil
}

// CopyOutput copies the job's output log f, opened by openJobFile, to w
// from f's offset to its end, through buf. Each chunk is written only once
// f is known to be the job's own log still: if Prune removed the job
// meanwhile, the file may hold another job's output by now (see recycle),
// and the copy ends with an error wrapping ErrNotFound.
func (s *Store) CopyOutput(w io.Writer, id string, f *os.File, buf []byte) (int64, error) {
	var n int64
	for {
		m, err := f.Read(buf)
		if m > 0 {
			if !s.holds(id, outputFile, f) {
				return n, fmt.Errorf("job %s: %w", id, ErrNotFound)
			}
			if _, err := w.Write(buf[:m]); err != nil {
				return n, err
			}
			n += int64(m)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
