package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/unitrun/unitrun/internal/atomicfile"
)

// The layout of version 1, which migrate reads:
//
//	<state>/mark                    the file that started marks linked to
//	<state>/jobs/<id>/record.jsonl  the Record, a JSON line per version, the last complete one current
//	<state>/jobs/<id>/output.log    the op's stdout and stderr, appended by its unit
//	<state>/jobs/<id>/started       the started mark
//	<state>/jobs/.*                 temp directories and emptied directories of pruned jobs, no jobs
const (
	v1Jobs    = "jobs"
	v1Mark    = "mark"
	v1Record  = "record.jsonl"
	v1Output  = "output.log"
	v1Started = "started"
)

// A v1Job is what migrate reads of a job of version 1.
type v1Job struct {
	rec     *Record
	output  bool // it has an output log
	started bool
}

// migrate turns the store of version 1 in dir into one of this version. It
// writes the log from each job directory's current record and started
// mark, hard-links each output log into the output directory (a unit
// still writing its log writes on to the same file), syncs the log and
// the directories, and writes the version file, atomically: that write is
// the commit point. A crash before it leaves version 1 whole, and the
// next Open migrates again from scratch; after it, this version is whole and
// Open deletes what is left of version 1 (dropV1). A record that version
// 1 could not read either is not carried over. If the file system is too
// full to migrate, the error says so and version 1 is left whole.
func migrate(dir string) error {
	err := buildFromV1(dir)
	if err == nil {
		err = step("migrate: built")
	}
	if err == nil {
		err = writeVersion(dir) // the commit point
	}
	if err != nil && !isVersion(dir, schemaVersion) {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return fmt.Errorf("state dir: the file system of %s is too full to migrate its store from version 1 to %d; version 1 is left whole (free some space and start again): %w", dir, schemaVersion, err)
		}
		return fmt.Errorf("state dir: migrating the store in %s from version 1 to %d (version 1 is left whole): %w", dir, schemaVersion, err)
	}
	if err := step("migrate: committed"); err != nil {
		return err
	}
	return dropV1(dir)
}

// isVersion reports whether the version file of dir holds version v.
func isVersion(dir string, v int) bool {
	data, err := os.ReadFile(filepath.Join(dir, versionFile))
	return err == nil && string(data) == strconv.Itoa(v)+"\n"
}

// buildFromV1 writes the log and the output directory of this version from the
// jobs of version 1 in dir, durably, after deleting what an earlier
// migration that did not reach its commit point left of them.
func buildFromV1(dir string) error {
	out := filepath.Join(dir, outputDir)
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, logFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	jobs, err := readV1(filepath.Join(dir, v1Jobs))
	if err != nil {
		return err
	}
	if err := writeLog(filepath.Join(dir, logFile), jobs); err != nil {
		return err
	}
	if err := step("migrate: log written"); err != nil {
		return err
	}
	if err := os.Mkdir(out, 0o700); err != nil {
		return err
	}
	for _, j := range jobs {
		if !j.output {
			continue
		}
		if err := os.Link(filepath.Join(dir, v1Jobs, j.rec.ID, v1Output), filepath.Join(out, j.rec.ID+".log")); err != nil {
			return err
		}
	}
	if err := step("migrate: outputs linked"); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(out); err != nil {
		return err
	}
	return atomicfile.SyncDir(dir)
}

// writeLog writes a new log at path holding each job's record and, for
// those marked, started mark, and syncs it.
func writeLog(path string, jobs []v1Job) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, j := range jobs {
		lines := []logLine{{Rec: j.rec}}
		if j.started {
			lines = append(lines, logLine{Started: j.rec.ID})
		}
		for _, ln := range lines {
			line, err := encodeLine(&ln)
			if err != nil {
				f.Close()
				return err
			}
			w.Write(line)
		}
	}
	err = w.Flush()
	if err == nil {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// dropV1 deletes what is left of version 1 in dir once the store is of
// version 2 or later.
func dropV1(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, v1Jobs)); err != nil {
		return fmt.Errorf("state dir: removing the jobs of store version 1: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, v1Mark)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state dir: removing the mark of store version 1: %w", err)
	}
	return nil
}

// readV1 reads the jobs of version 1 in its jobs directory, in the order
// of their ids. It passes over entries that are not jobs (temp and spare
// directories, symlinks) and jobs whose record cannot be read.
func readV1(jobs string) ([]v1Job, error) {
	entries, err := os.ReadDir(jobs)
	if err != nil {
		return nil, err
	}
	var out []v1Job
	for _, e := range entries {
		if checkID(e.Name()) != nil || !e.IsDir() {
			continue
		}
		j, err := readV1Job(filepath.Join(jobs, e.Name()), e.Name())
		if err != nil {
			continue
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b v1Job) int { return strings.Compare(a.rec.ID, b.rec.ID) })
	return out, nil
}

// readV1Job reads the job id of version 1 from its directory dir.
func readV1Job(dir, id string) (v1Job, error) {
	f, err := openRegular(filepath.Join(dir, v1Record), os.O_RDONLY)
	if err != nil {
		return v1Job{}, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return v1Job{}, err
	}
	r, err := decodeRecord(data)
	if err == nil {
		err = checkRecord(&r, id)
	}
	if err != nil {
		return v1Job{}, err
	}
	j := v1Job{rec: &r}
	if fi, err := os.Lstat(filepath.Join(dir, v1Output)); err == nil && fi.Mode().IsRegular() {
		j.output = true
	}
	if _, err := os.Lstat(filepath.Join(dir, v1Started)); err == nil {
		j.started = true
	}
	return j, nil
}

// decodeRecord returns the current version of a record of version 1 from
// its file's contents: the last line, ended by a newline, that decodes as
// JSON. A line that a crash left unfinished, without its newline or
// holding bytes that do not decode, is passed over for the version before
// it; empty lines separate the versions.
func decodeRecord(data []byte) (Record, error) {
	err := errors.New("no complete line")
	rest := data[:bytes.LastIndexByte(data, '\n')+1]
	for len(rest) > 0 {
		line := rest[:len(rest)-1]
		start := bytes.LastIndexByte(line, '\n') + 1
		rest = rest[:start]
		if start == len(line) {
			continue // an empty line
		}
		var r Record
		if err = json.Unmarshal(line[start:], &r); err == nil {
			return r, nil
		}
	}
	return Record{}, err
}
