package hostapi

import (
	"os"
	"path/filepath"
)

// tempPrefix starts the names of the temp files and directories the store
// writes before renaming them into place; no job id starts with it.
const tempPrefix = "."

// writeFileAtomic replaces dir/name with data, mode 0600: it writes a temp
// file in dir, syncs it, renames it over name and syncs dir. A crash leaves
// the old file or the new one, and at worst a temp file named
// ".<name>.tmp-*" beside it.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, tempPrefix+name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := writeSyncClose(f, data); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// writeSyncClose writes data to f, syncs and closes it.
func writeSyncClose(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
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
