package pod

import (
	"os"
	"path/filepath"
)

// replace replaces the file at path with data, mode 0644, so that a reader
// sees the old content or the new, never a part: data goes to a temporary
// file in the same directory, which is renamed over path. Unlike
// atomicfile.Write it syncs neither file nor directory: what it writes (unit
// files in the manager's runtime unit directory, status files and app
// records of a running pod) describes units that a crash of the host takes
// away, so durability would buy nothing for the fsyncs it costs on every
// exit.
func replace(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
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
