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
// files named as Install names them ("<base>-<16 hex digits>") and as
// Self names their companions, of a [group] for none of which
// inUse(path) holds, and temp files of Installs that did not finish,
// once they are an hour old. It never follows a symlink and never removes
// anything else, and it refuses a dir that CheckDir refuses. It returns the paths it removed; err joins the failures to
// remove.
func GC(dir string, inUse func(path string) bool) (removed []string, err error) {
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("inject: %w", err)
	}
	used := make(map[string]bool) // installed names whose group is in use
	for _, e := range entries {
		if g := group(e.Name()); g != "" && e.Type().IsRegular() && inUse(filepath.Join(dir, e.Name())) {
			used[g] = true
		}
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		switch g := group(name); {
		case g != "":
			if used[g] {
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

// group returns the installed name that the file name of dir goes with:
// itself for an installed file ("<base>-<16 hex digits>"), its binary's
// for a companion that Self installed (that name plus "-WORD"), "" for
// anything else. GC keeps or removes a binary and its companions together.
func group(name string) string {
	if installedRE.MatchString(name) {
		return name
	}
	if m := companionRE.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}
