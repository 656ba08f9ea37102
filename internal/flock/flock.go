// Package flock takes flock(2) locks whose wait a context can end.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// turns holds, for each path locked in this process, a channel of
// capacity one whose holder is the one goroutine that may take the flock.
var turns sync.Map // path -> chan struct{}

// Lock takes an exclusive flock(2) lock on the file at path, creating it
// (mode 0644) if it is not there, or opening it read-only when the caller
// may not write it (flock needs no write access), waiting until ctx ends.
// It returns the function that releases the lock.
//
// A blocking flock cannot be interrupted, so Lock tries without blocking
// every millisecond. The goroutines of one process that lock one path
// wait their turn in the process first: only one of them tries at a time,
// however many wait (200 callers of the daemon polling one lock spent
// more CPU than the jobs they waited to start).
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	v, _ := turns.LoadOrStore(path, make(chan struct{}, 1))
	turn := v.(chan struct{})
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if IsPermission(err) {
		f, err = os.Open(path)
	}
	if err != nil {
		<-turn
		return nil, err
	}
	if err := lock(ctx, f); err != nil {
		f.Close()
		<-turn
		return nil, err
	}
	return func() {
		f.Close() // closing the file releases the flock
		<-turn
	}, nil
}

// lock takes the flock on f, trying every millisecond until ctx ends.
func lock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// IsPermission reports an error of a caller that may not write a file.
func IsPermission(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// A HeldError is TryLock's error when another open file holds the lock.
type HeldError struct {
	Path string
	// PID is the process that took the lock, as /proc/locks names it,
	// or 0 when it does not.
	PID int
}

func (e *HeldError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s is locked by another process", e.Path)
	}
	return fmt.Sprintf("%s is locked by process %d", e.Path, e.PID)
}

// TryLock takes an exclusive flock(2) lock on the file at path, creating
// it with mode 0600 if it is not there and not following a symlink, without
// waiting: when another open file holds the lock (another process, or an
// earlier Lock or TryLock in this one), it returns a *HeldError. The lock
// is held until unlock is called or the process exits.
func TryLock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		err = &HeldError{Path: path, PID: holder(f)}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// holder returns the pid that /proc/locks names as holding a flock on f's
// file, or 0.
func holder(f *os.File) int {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return 0
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	// Lines as "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF", the
	// device's major and minor in hex; waiters' lines have "->" after the
	// number.
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for line := range strings.Lines(string(locks)) {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == file {
			pid, _ := strconv.Atoi(f[4])
			return pid
		}
	}
	return 0
}
