package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/unitrun/unitrun/dist"
	"github.com/unitrun/unitrun/internal/atomicfile"
)

// dbusFiles maps each file of dist.DBus to its directory under the D-Bus
// data dir (--dbus-dir): the system bus's policy and activation files.
// The bus daemon notices new files there by itself.
var dbusFiles = map[string]string{
	"org.unitrun.Ops1.conf":    "system.d",
	"org.unitrun.Ops1.service": "system-services",
}

// installDBus writes the D-Bus files under dir.
func installDBus(dir string) error {
	for name, sub := range dbusFiles {
		data, err := fs.ReadFile(dist.DBus, "dbus/"+name)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, sub, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("install %s: %w", p, err)
		}
		if err := atomicfile.Write(p, data, 0o644); err != nil {
			return fmt.Errorf("install %s: %w", p, err)
		}
	}
	return nil
}

// uninstallDBus removes the D-Bus files under dir; what is already gone
// is not an error.
func uninstallDBus(dir string) error {
	var errs []error
	for name, sub := range dbusFiles {
		if err := os.Remove(filepath.Join(dir, sub, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
