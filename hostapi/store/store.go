package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/internal/lazyregexp"
	"golang.org/x/sys/unix"
)

// Store keeps job records durably in a state directory:
//
//	<state>/store-version           the schema's version (see schemaVersion)
//	<state>/mark                    the file that started marks link to
//	<state>/jobs/<id>/record.jsonl  the Record, a JSON line per version, the last one current
//	<state>/jobs/<id>/output.log    the op's stdout and stderr, appended by its unit
//	<state>/jobs/<id>/started       the started mark (MarkStarted), a link to <state>/mark
//	<state>/jobs/.spare-*           emptied directories of pruned jobs (see sparePrefix)
//
// A job directory appears with its first record in place, so every job
// directory holds a record. A new version of a record is appended to its
// file, not written to a new file renamed over it: on the file systems of
// hosts it spares each update an inode and the sync of a directory (see
// docs/performance.md). Entries of jobs/ whose names start with "." are the
// store's temp files and are never listed.
//
// A Store may be used by several goroutines at once; one state directory
// should be used by one process at a time.
type Store struct {
	dir  string // absolute state directory
	jobs string // dir/jobs

	mu     sync.Mutex
	issued map[string]bool      // ids returned by NewID and not yet Put
	spares []string             // names of the spares in jobs (see recycle)
	index  map[string]pruneMeta // the records by id, for Prune (see loadIndex)

	pruneMu sync.Mutex // held by Prune

	reads atomic.Int64 // records read by Get, which the tests of Page count
}

// Errors returned by the Store; test them with errors.Is.
var (
	ErrNotFound  = errors.New("hostapi: job not found")  // the words the daemon has always said
	ErrInvalidID = errors.New("hostapi: invalid job id") // the words the daemon has always said
)

// A RecordError reports a record that exists but cannot be read or is not
// a valid record.
type RecordError struct {
	ID  string
	Err error
}

func (e *RecordError) Error() string { return "job " + e.ID + ": corrupt record: " + e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }

const (
	idLayout   = "20060102T150405Z"
	recordFile = "record.jsonl"
	outputFile = "output.log"
)

var idRE = lazyregexp.New(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)

// checkID refuses an id that NewID cannot have returned, so that no id
// names a path outside the store.
func checkID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("%w %q: want the form 20060102T150405Z-0123abcd", ErrInvalidID, id)
	}
	return nil
}

// Open opens the store in the state directory dir, creating dir and
// dir/jobs with mode 0700 when missing. It refuses a dir or jobs directory
// that is a symlink, is not a directory or is writable by group or others,
// and a store of a schema version newer than this code's (checkVersion).
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	s := &Store{dir: abs, jobs: filepath.Join(abs, "jobs"), issued: make(map[string]bool)}
	for _, d := range []string{s.dir, s.jobs} {
		if err := ensurePrivateDir(d); err != nil {
			return nil, err
		}
	}
	if err := checkVersion(abs); err != nil {
		return nil, err
	}
	if err := ensureMarkFile(filepath.Join(abs, markFile)); err != nil {
		return nil, err
	}
	if err := s.loadSpares(); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	return s, nil
}

// ensureMarkFile creates the store's mark file (see Store.mark) with mode
// 0600 if it is missing, and checks that it is a regular file of mode 0600.
func ensureMarkFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return fmt.Errorf("state dir: %w", err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("state dir: %s is not a regular file", path)
	case fi.Mode().Perm() != 0o600:
		return fmt.Errorf("state dir: %s has mode %v, want 0600 (every job's marks share it)", path, fi.Mode().Perm())
	}
	return nil
}

// ensurePrivateDir creates dir with mode 0700 if it is missing and checks
// that it is a real directory that only its owner may write.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("state dir: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("state dir: %s is a symlink", dir)
	case !fi.IsDir():
		return fmt.Errorf("state dir: %s is not a directory", dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("state dir: %s is writable by group or others (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}

// NewID returns a new job id: the UTC time to the second and 8 random hex
// digits, as in 20261202T142501Z-0123abcd, so that ids sort by creation
// time to the second. The id is used by no job in the store and was not
// returned before by this Store.
func (s *Store) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var b [4]byte
		rand.Read(b[:])
		id := time.Now().UTC().Format(idLayout) + "-" + hex.EncodeToString(b[:])
		if s.issued[id] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.jobs, id)); err == nil {
			continue
		}
		s.issued[id] = true
		return id
	}
}

// Dir returns the job's directory, or "" for an id not of NewID's form.
func (s *Store) Dir(id string) string {
	if checkID(id) != nil {
		return ""
	}
	return filepath.Join(s.jobs, id)
}

// OutputPath returns the path of the job's output log, or "" for an id not
// of NewID's form.
func (s *Store) OutputPath(id string) string {
	return s.jobPath(id, outputFile)
}

func (s *Store) jobPath(id, name string) string {
	if checkID(id) != nil {
		return ""
	}
	return filepath.Join(s.jobs, id, name)
}

// Put stores r durably, replacing the job's record atomically: after a
// crash Get returns the old record or the new one. The first Put of an id
// creates the job's directory, with the record already in it; later ones
// append the new version to the record file (see appendRecord). Put
// refuses an id not of NewID's form, an empty Op and an unknown State.
func (s *Store) Put(r *Record) error { return s.put(r, true) }

// Stage is Put without the syncs: the record is in place, atomically, for
// a daemon that starts after this one dies, but a crash of the host may
// take it away until Commit returns.
func (s *Store) Stage(r *Record) error { return s.put(r, false) }

// Commit makes the job's record, as stage left it, durable.
func (s *Store) Commit(id string) error {
	f, err := s.openJobFile(id, recordFile, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	err = closeSynced(f, nil, true)
	if err == nil {
		err = atomicfile.SyncDir(s.jobs)
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	return nil
}

func (s *Store) put(r *Record, sync bool) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if r.Op == "" {
		return fmt.Errorf("job %s: record has no op", r.ID)
	}
	if !validState(r.State) {
		return fmt.Errorf("job %s: record state %q is not one of queued, running, succeeded, failed, canceled", r.ID, r.State)
	}
	// One line: JSON escapes the newlines of strings.
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("job %s: %w", r.ID, err)
	}
	data = append(data, '\n')
	dir := filepath.Join(s.jobs, r.ID)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = s.create(r.ID, data, sync)
	case err != nil:
	case !fi.IsDir():
		err = fmt.Errorf("%s is not a directory", dir)
	default:
		err = s.appendRecord(r.ID, data, sync)
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", r.ID, err)
	}
	s.mu.Lock()
	delete(s.issued, r.ID)
	s.indexLocked(r)
	s.mu.Unlock()
	return nil
}

// appendRecord adds line, a record ended by a newline, to the job's record
// file, and syncs the file's data when sync is set. The line is written
// just after the file's last newline: over a line that a crash left
// unfinished, which Get passed over (see decodeRecord), and over the
// zeroed room of a spare's record file (see recycle), which then needs no
// sync of the file's size. Of Puts of one job that run at once, the one
// written last wins: should a shorter line end before a longer one's, the
// longer one's rest follows the last newline and is passed over too.
func (s *Store) appendRecord(id string, line []byte, sync bool) error {
	f, err := s.openJobFile(id, recordFile, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", f.Name())
	}
	var data []byte
	if err == nil {
		data, err = io.ReadAll(f)
	}
	if err == nil {
		_, err = f.WriteAt(line, nextRecordAt(data))
	}
	return closeSynced(f, err, sync)
}

// nextRecordAt returns where the next version of a record goes in a
// record file that holds data: just after its last newline.
func nextRecordAt(data []byte) int64 { return int64(bytes.LastIndexByte(data, '\n') + 1) }

// create makes the job's directory with its first record: it fills a spare
// or, when there is none, a new temp directory, and renames it into place,
// syncing file and directories when sync is set. If another Put created
// the directory first, the record is appended to that Put's.
func (s *Store) create(id string, data []byte, sync bool) error {
	if took, err := s.createFromSpare(id, data, sync); took {
		return err
	}
	tmp, err := os.MkdirTemp(s.jobs, tempPrefix+"new-"+id+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	f, err := os.OpenFile(filepath.Join(tmp, recordFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := writeClose(f, data, sync); err != nil {
		return err
	}
	// Synced even when the record is not: commit syncs the record file
	// and the jobs dir, not the job's own (a spare's has its entries).
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	dir := filepath.Join(s.jobs, id)
	if err := os.Rename(tmp, dir); err != nil {
		if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
			return err
		}
		return s.appendRecord(id, data, sync)
	}
	if !sync {
		return nil
	}
	return atomicfile.SyncDir(s.jobs)
}

// Get returns the job's record. It returns an error wrapping ErrNotFound
// when there is none, ErrInvalidID for an id not of NewID's form, and a
// *RecordError when the record cannot be decoded.
func (s *Store) Get(id string) (*Record, error) {
	s.reads.Add(1)
	f, err := s.openJobFile(id, recordFile, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Put never leaves a job directory without its record; one made
		// by hand is no job.
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := readRecord(f, id)
	if err != nil && !s.holds(id, recordFile, f) {
		// Prune removed the job while it was read, and its file may be
		// another job's by now (see recycle).
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	return r, err
}

// readRecord reads the record of the job id from its record file f.
func readRecord(f *os.File, id string) (*Record, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, &RecordError{ID: id, Err: err}
	}
	r, err := decodeRecord(data)
	if err != nil {
		return nil, &RecordError{ID: id, Err: err}
	}
	switch {
	case r.ID != id:
		return nil, &RecordError{ID: id, Err: fmt.Errorf("holds id %q", r.ID)}
	case r.Op == "":
		return nil, &RecordError{ID: id, Err: errors.New("has no op")}
	case !validState(r.State):
		return nil, &RecordError{ID: id, Err: fmt.Errorf("state %q is not a state", r.State)}
	}
	return &r, nil
}

// decodeRecord returns the current version of a record from its file's
// contents: the last line, ended by a newline, that decodes as JSON. A
// line that a crash left unfinished, without its newline or holding bytes
// that do not decode, is passed over for the version before it; empty
// lines separate the versions.
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

// OpenOutput opens the job's output log for appending, creating it with
// mode 0600: the file to hand to the job's unit as stdout and stderr, so
// that the output goes on when the daemon is gone. The job's record must
// have been Put first (else the error wraps ErrNotFound). Neither the job
// directory nor the log may be a symlink.
func (s *Store) OpenOutput(id string) (*os.File, error) {
	return s.openJobFile(id, outputFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
}

// ReadOutput opens the job's output log for reading. A job with no log
// yet is an error satisfying errors.Is(err, fs.ErrNotExist); no job, one
// wrapping ErrNotFound.
func (s *Store) ReadOutput(id string) (*os.File, error) {
	return s.openJobFile(id, outputFile, os.O_RDONLY, 0)
}

// Reads returns how many records Get has read from disk, Page's and
// List's reads included.
func (s *Store) Reads() int64 { return s.reads.Load() }

// openJobFile opens name in the job's directory, following no symlink at
// the directory or the file. A missing directory is ErrNotFound; a missing
// file is an error satisfying errors.Is(err, fs.ErrNotExist).
func (s *Store) openJobFile(id, name string, flag int, perm uint32) (*os.File, error) {
	dfd, err := s.openJobDir(id)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	path := filepath.Join(s.jobs, id, name)
	fd, err := unix.Openat(dfd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openJobDir opens the job's directory, not following a symlink there. A
// missing directory is ErrNotFound.
func (s *Store) openJobDir(id string) (int, error) {
	if err := checkID(id); err != nil {
		return -1, err
	}
	dir := filepath.Join(s.jobs, id)
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return dfd, nil
}
