package hostapi

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// Tail returns the last n bytes of the job's output log, exactly (the tail
// may begin inside a UTF-8 sequence), or all of it when it is shorter. It
// returns "" when n <= 0 or the job has no output log yet, and an error
// wrapping ErrNotFound when there is no such job. Output appended while
// Tail reads is not included.
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
	return string(buf[:m]), nil
}
