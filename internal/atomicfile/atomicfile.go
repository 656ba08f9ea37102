// Package atomicfile writes files so that readers see the old content or
// the new, never a part: through a temporary file in the same directory
// that is written, synced and renamed over the target, and a synced
// directory.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, with permissions perm. It never follows a
// symlink at path: the rename replaces the link itself.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
