// Package flock takes flock(2) locks whose wait a context can end.
package flock

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
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
