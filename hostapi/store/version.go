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
// writes and reads: the layout of Store's comment, the lines of the log
// (logLine) and the JSON of Record. A change to any is a new version,
// which Open migrates to from the versions before it and which older code
// refuses to open. Version 1 kept a directory per job (see migrate).
const schemaVersion = 2

// versionFile, in the state directory, holds the store's version as a
// decimal number and a newline. A state directory without it was written
// before the file existed, by the schema of version 1, if it has a jobs
// directory; else it is a new store.
const versionFile = "store-version"

// openVersion reads the store's version in the state directory dir and
// readies the directory for this code: it migrates a store of version 1
// (migrate), ends a migration that a crash stopped after its commit
// point (dropV1), writes the version of a new store, and returns an
// error for a version this code does not read. If writing a new store's
// version fails for want of space (the file system is full or the owner
// over quota), the store is opened all the same and the next Open writes
// it.
func openVersion(dir string) error {
	path := filepath.Join(dir, versionFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Lstat(filepath.Join(dir, v1Jobs)); err == nil {
			return migrate(dir)
		}
		err = writeVersion(dir)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return nil
		}
		return err
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
	case v == 1:
		return migrate(dir)
	}
	return dropV1(dir)
}

// writeVersion writes schemaVersion to the version file, atomically and
// durably.
func writeVersion(dir string) error {
	err := atomicfile.Write(filepath.Join(dir, versionFile), []byte(strconv.Itoa(schemaVersion)+"\n"), 0o600)
	if err != nil {
		return fmt.Errorf("state dir: writing the store's version: %w", err)
	}
	return nil
}
