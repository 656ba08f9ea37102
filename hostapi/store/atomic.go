package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// tempPrefix starts the names of the temp files and directories the store
// writes before renaming them into place (atomicfile's temp files start
// with it too); no job id starts with it.
const tempPrefix = "."

// writeClose writes data to f, syncs its data when sync is set, and
// closes it.
func writeClose(f *os.File, data []byte, sync bool) error {
	_, err := f.Write(data)
	return closeSynced(f, err, sync)
}

// closeSynced closes f after syncing its data (fdatasync: what reading the
// data back needs, its size included, and not its times) when sync is set
// and err, the error of the writes to f, is nil. It returns the first
// error.
func closeSynced(f *os.File, err error, sync bool) error {
	if err == nil && sync {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

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
