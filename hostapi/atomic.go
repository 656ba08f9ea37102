package hostapi

import "os"

// tempPrefix starts the names of the temp files and directories the store
// writes before renaming them into place (atomicfile's temp files start
// with it too); no job id starts with it.
const tempPrefix = "."

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
