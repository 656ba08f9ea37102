package hostapi

import (
	"os"
	"path/filepath"

	"github.com/unitrun/unitrun/internal/atomicfile"
)

// tempPrefix starts the names of the temp files and directories the store
// writes before renaming them into place (atomicfile's temp files start
// with it too); no job id starts with it.
const tempPrefix = "."

// writeFileAtomic replaces dir/name with data, mode 0600, durably when
// sync is set. A crash leaves the old file or the new one, and at worst a
// temp file named ".<name>.tmp-*" beside it.
func writeFileAtomic(dir, name string, data []byte, sync bool) error {
	if !sync {
		return atomicfile.Replace(filepath.Join(dir, name), data, 0o600)
	}
	return atomicfile.Write(filepath.Join(dir, name), data, 0o600)
}

// writeClose writes data to f, syncs it when sync is set, and closes it.
func writeClose(f *os.File, data []byte, sync bool) error {
	_, err := f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
