package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/unitrun/unitrun/internal/atomicfile"
)

// schemaVersion is the version of the store's on-disk schema that this code
// writes and reads: the layout of Store's comment and the JSON of Record.
// A change to either is a new version, which Open migrates to from the
// versions before it and which older code refuses to open.
const schemaVersion = 1

// versionFile, in the state directory, holds the store's version as a
// decimal number and a newline. A state directory without it was written
// before the file existed, by the schema of version 1.
const versionFile = "store-version"

// checkVersion reads the store's version in the state directory dir and
// returns an error if it is not one this code reads. It writes the file
// when it is missing; if that fails for want of space (the file system is
// full or the owner over quota), the store is opened all the same, its
// version being what a missing file means, and the next Open writes it.
func checkVersion(dir string) error {
	path := filepath.Join(dir, versionFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		err = atomicfile.Write(path, []byte(strconv.Itoa(schemaVersion)+"\n"), 0o600)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("state dir: writing the store's version: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSuffix(string(data), "\n"))
	switch {
	case err != nil || v < 1:
		return fmt.Errorf("state dir: %s holds %q, not a store version (a number from 1)", path, data)
	case v > schemaVersion:
		return fmt.Errorf("state dir: the store in %s is of version %d, newer than this unitrun reads (%d): it was written by a newer unitrun; run that one, or give this one another state directory", dir, v, schemaVersion)
	}
	return nil
}
