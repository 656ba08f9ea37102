package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// A spare is the emptied directory of a pruned job, kept as jobs/.spare-*
// to be the directory of a new job: its record file and output log stay,
// the log emptied and the record file zeroed (recordRoom), so that a new
// job that takes a spare allocates no inode and a pruned one frees none.
// On some file systems making a file is the costliest step of a job's
// storage: the test machines' ext4 has no journal, and there each new
// inode steps over every inode freed in the last minute
// (docs/performance.md). A daemon that has run records_keep
// jobs prunes one job for each new one, so in its steady state every new
// job finds a spare.
const sparePrefix = tempPrefix + "spare-"

// maxSpares bounds the spares kept: a Prune that finds as many makes no
// more and deletes the jobs it removes.
const maxSpares = 256

// loadSpares lists the spares that an earlier Store left in the jobs
// directory.
func (s *Store) loadSpares() error {
	entries, err := os.ReadDir(s.jobs)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), sparePrefix) && e.IsDir() {
			s.spares = append(s.spares, e.Name())
		}
	}
	return nil
}

// takeSpare returns the path of a spare, no longer listed as one, for the
// caller to fill and rename into place, or "" when there is none.
func (s *Store) takeSpare() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.spares)
	if n == 0 {
		return ""
	}
	name := s.spares[n-1]
	s.spares = s.spares[:n-1]
	return filepath.Join(s.jobs, name)
}

// createFromSpare makes the job's directory from a spare, with data, the
// first record, in its record file (see fillSpare), and reports whether
// it did. It reports false, having changed nothing in the store, when
// there is no spare to take; a spare that cannot be used is deleted.
func (s *Store) createFromSpare(id string, data []byte, sync bool) (bool, error) {
	spare := s.takeSpare()
	if spare == "" {
		return false, nil
	}
	err := s.fillSpare(spare, data, sync)
	if err == nil {
		err = unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, filepath.Join(s.jobs, id), unix.RENAME_NOREPLACE)
	}
	if err != nil {
		os.RemoveAll(spare)
		if errors.Is(err, unix.EEXIST) {
			// Another Put created the job first.
			return true, s.appendRecord(id, data, sync)
		}
		return false, nil
	}
	if !sync {
		return true, nil
	}
	return true, atomicfile.SyncDir(s.jobs)
}

// fillSpare empties the spare's output log, removes a started mark (a
// crash of the host may have undone those steps of recycle) and writes
// data, the first record, to its record file: into the file's zeroed room
// when recycle's zeros are all there, else to the file emptied first.
func (s *Store) fillSpare(spare string, data []byte, sync bool) error {
	dfd, err := unix.Open(spare, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := zeroFileAt(dfd, outputFile, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if err := unix.Unlinkat(dfd, startedFile, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	fd, err := unix.Openat(dfd, recordFile, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), filepath.Join(spare, recordFile))
	old, err := io.ReadAll(f)
	if err == nil && len(bytes.Trim(old, "\x00")) != 0 {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	return closeSynced(f, err, sync)
}

// recordRoom is the size of the zeroed room that recycle leaves in a
// spare's record file: records written there change no metadata of the
// file, so that syncing them is one write to the disk. It holds a job's
// records unless its output tail is long.
const recordRoom = 8 << 10

// zeroFileAt makes the regular file name of the directory dfd size bytes
// long, all zeros, written: not a hole, which a write would fill with new
// blocks.
func zeroFileAt(dfd int, name string, size int) error {
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &fs.PathError{Op: "truncate", Path: name, Err: unix.EINVAL}
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil || size == 0 {
		return err
	}
	_, err = unix.Pwrite(fd, make([]byte, size), 0)
	return err
}

// recycle turns dir, the directory of a pruned job already renamed away
// from its id, into a spare, and reports whether it did. It does not when
// the store has maxSpares spares, or when dir holds anything but a record
// file, an output log and a started mark.
func (s *Store) recycle(dir string) bool {
	s.mu.Lock()
	full := len(s.spares) >= maxSpares
	s.mu.Unlock()
	if full {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(dfd)
	for _, e := range entries {
		switch e.Name() {
		case recordFile:
			err = zeroFileAt(dfd, recordFile, recordRoom)
		case outputFile:
			err = zeroFileAt(dfd, outputFile, 0)
		case startedFile:
			err = unix.Unlinkat(dfd, startedFile, 0)
		default:
			return false
		}
		if err != nil {
			return false
		}
	}
	var b [8]byte
	rand.Read(b[:])
	name := sparePrefix + hex.EncodeToString(b[:])
	if unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, filepath.Join(s.jobs, name), unix.RENAME_NOREPLACE) != nil {
		return false
	}
	s.mu.Lock()
	s.spares = append(s.spares, name)
	s.mu.Unlock()
	return true
}

// holds reports whether f, opened from the job's directory, is still the
// job's file name there. A job's files move with its directory when Prune
// removes the job, before they are emptied for another job (recycle): so a
// read from f that holds reports true after was a read of the job's own
// bytes.
func (s *Store) holds(id, name string, f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(s.jobPath(id, name))
	return err == nil && os.SameFile(fi, pi)
}
