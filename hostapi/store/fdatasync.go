package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync syncs f's data, as f.Sync does its data and its metadata.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := rc.Control(func(fd uintptr) {
		for err = unix.Fdatasync(int(fd)); err == unix.EINTR; err = unix.Fdatasync(int(fd)) {
		}
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
