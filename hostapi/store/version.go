package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// (logLine, encodeLine) and the JSON of Record. A change to any is a new
// version, which Open migrates to from the versions before it and which
// older code refuses to open. Version 1 kept a directory per job (see
// migrate); version 2 wrote the log's lines without their checksums (see
// migrateV2).
const schemaVersion = 3

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
	case v == 2:
		return migrateV2(dir)
	}
	if err := finishV2(dir); err != nil {
		return err
	}
	return dropV1(dir)
}

// v3Log, in the state directory, is the log of this version that
// migrateV2 writes from one of version 2.
const v3Log = tempPrefix + logFile + ".v3"

// migrateV2 turns the store of version 2 in dir into one of this version:
// it writes each line of the log that decodes (as version 2 read them,
// passing over the others) with its checksum to v3Log and syncs it,
// writes the version file atomically (the commit point), and renames
// v3Log over the log (finishV2). A crash before the commit point leaves
// version 2 whole, and the next Open migrates again; after it, the next
// Open renames v3Log. A log of version 2 is read only so: the lines of
// this version's log without a checksum are damage.
func migrateV2(dir string) error {
	tmp := filepath.Join(dir, v3Log)
	err := addChecksums(filepath.Join(dir, logFile), tmp)
	if err == nil {
		err = step("migrate v2: written")
	}
	if err == nil {
		err = writeVersion(dir) // the commit point
	}
	if err != nil && !isVersion(dir, schemaVersion) {
		os.Remove(tmp)
		return fmt.Errorf("state dir: migrating the store in %s from version 2 to %d (version 2 is left whole): %w", dir, schemaVersion, err)
	}
	if err := step("migrate v2: committed"); err != nil {
		return err
	}
	return finishV2(dir)
}

// addChecksums writes to tmp, and syncs, the lines of the log of version
// 2 at path that decode, each with its checksum.
func addChecksums(path, tmp string) error {
	in, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a store of version 2 that never stored a record
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	r, w := bufio.NewReaderSize(in, 1<<20), bufio.NewWriterSize(out, 1<<20)
	for {
		data, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // bytes without a newline: a torn line
		}
		if err != nil {
			return err
		}
		data = data[:len(data)-1]
		var ln logLine
		if len(data) == 0 || json.Unmarshal(data, &ln) != nil {
			continue
		}
		w.Write(appendLine(nil, data))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return fdatasync(out)
}

// finishV2 renames the log that migrateV2 wrote, if there is one, over
// the log of version 2, once the version file says this version.
func finishV2(dir string) error {
	err := os.Rename(filepath.Join(dir, v3Log), filepath.Join(dir, logFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err == nil:
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("state dir: ending the migration of the store from version 2: %w", err)
	}
	return nil
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
