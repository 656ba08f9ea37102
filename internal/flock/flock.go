// Package flock takes flock(2) locks whose wait a context can end.
package flock

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// Lock takes an exclusive flock(2) lock on f, waiting until ctx ends. A
// blocking flock cannot be interrupted, so Lock tries without blocking
// every millisecond. If it returns an error, it has closed f. The lock is
// released when f is closed.
func Lock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
