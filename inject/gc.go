package inject

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// staleTemp is the age after which GC removes a temp file that an Install
// left behind when it did not finish.
const staleTemp = time.Hour

// GC removes from dir the installed files that are not in use: regular
// files named as Install names them ("<base>-<16 hex digits>") for which
// inUse(path) is false, and temp files of Installs that did not finish,
// once they are an hour old. It never follows a symlink and never removes
// anything else, and it refuses a dir that Install would refuse. It returns
// the paths it removed; err joins the failures to remove.
func GC(dir string, inUse func(path string) bool) (removed []string, err error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("inject: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		switch {
		case installedRE.MatchString(name):
			if inUse(path) {
				continue
			}
		case tempRE.MatchString(name):
			info, err := e.Info()
			if err != nil || time.Since(info.ModTime()) < staleTemp {
				continue
			}
		default:
			continue
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, fmt.Errorf("inject: %w", err))
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}
