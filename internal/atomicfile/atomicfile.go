// Package atomicfile writes files so that readers see the old content or
// the new, never a part: through a temporary file in the same directory
// (named "." + the file's name + ".tmp-*", so directory readers can skip
// it) that is renamed over the target.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, with permissions perm, durably: the
// temporary file is synced before the rename and the directory after it.
// It never follows a symlink at path: the rename replaces the link itself.
func Write(path string, data []byte, perm os.FileMode) error {
	if err := write(path, data, perm, true); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Replace is Write without the syncs: atomic for readers, but a crash of
// the host may leave the old content. It suits files that describe what a
// crash takes away anyway (the state of running units).
func Replace(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm os.FileMode, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// SyncDir makes the entries of dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
