package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/internal/lazyregexp"
	"github.com/unitrun/unitrun/internal/pathtrust"
)

// Store keeps job records durably in a state directory:
//
//	<state>/store-version     the schema's version (see schemaVersion)
//	<state>/records.log       every job's records, started marks and removals, a checksummed JSON line each (see logLine, encodeLine)
//	<state>/output/<id>.log   the job's stdout and stderr, appended by its unit
//
// A job's current record is the last of its lines in the log, and the
// Store keeps in memory where it is (see entry): a read by id is one
// pread. A record is durable when Put returns: the first writer that
// waits for a sync syncs the log for every line written before it (group
// commit). Each line carries a checksum (encodeLine). A line goes just
// after the last one written, so that a line a full disk cut short is
// overwritten by the next; lines a crash tore at the log's end are passed
// over and cut off when the log is read, and lines that do not read back
// before intact ones are damage, which Open refuses (see Repair). Prune
// appends removals and deletes the jobs' output logs; once the log holds
// four times as many lines as it needs, Prune rewrites it (compact).
//
// A Store may be used by several goroutines at once; one state directory
// should be used by one process at a time.
type Store struct {
	dir    string // absolute state directory
	output string // dir/output

	mu      sync.Mutex
	cond    *sync.Cond      // signalled when a sync ends
	log     *os.File        // records.log
	end     int64           // where the next line goes
	written uint64          // appends written so far
	synced  uint64          // appends made durable
	syncErr error           // the error of a sync that failed (see waitSyncedLocked)
	syncing bool            // a writer syncs the log, outside mu
	index                   // what the log holds
	issued  map[string]bool // ids returned by NewID and not yet Put

	pruneMu sync.Mutex // held by Prune, and so by compact

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
	logFile    = "records.log"
	outputDir  = "output"
	tempPrefix = "." // starts the names of the store's temp files
)

// idPattern matches a job id as NewID makes them.
const idPattern = `[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}`

var idRE = lazyregexp.New(`^` + idPattern + `$`)

// checkID refuses an id that NewID cannot have returned, so that no id
// names a path outside the store.
func checkID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("%w %q: want the form 20060102T150405Z-0123abcd", ErrInvalidID, id)
	}
	return nil
}

// Open opens the store in the state directory dir, creating dir and
// dir/output with mode 0700 when missing. It refuses a dir or output
// directory that is a symlink, is not a directory or is writable by group
// or others, a state dir, log or output directory that fails pathtrust's
// rules, or under a directory or symlink that does (ensurePrivateDir), a
// log that is not a regular file, a log damaged in the middle (a
// *DamageError), and a store of a schema version newer than this code's.
// A store of version 1 or 2 is migrated first (see migrate and
// migrateV2). Every directory is checked before anything is written in
// dir. Output logs of jobs without a record, which a crash in
// the middle of Prune or before a record's sync leaves, are deleted.
func Open(dir string) (*Store, error) {
	s, _, err := open(dir, false)
	return s, err
}

// Repair opens the store in dir as Open does, but repairs a log damaged in
// the middle (where Open returns a *DamageError) instead of refusing it:
// it keeps every line that decodes, and records as failed, outcome
// unknown, each job not finished in what it keeps that the damage may
// have touched: one named in a damaged line, or whose current record is
// before the last damaged line (its later lines, such as its outcome or
// its started mark, may be among the damaged). Such a job is never run
// again. It then rewrites the log without the damaged lines (compact). It
// returns the ids of the jobs it recorded so.
func Repair(dir string) (*Store, []string, error) {
	return open(dir, true)
}

func open(dir string, repair bool) (*Store, []string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	if err := ensureDirs(abs); err != nil {
		return nil, nil, err
	}
	if err := openVersion(abs); err != nil {
		return nil, nil, err
	}
	s := &Store{dir: abs, output: filepath.Join(abs, outputDir), index: newIndex(), issued: make(map[string]bool)}
	s.cond = sync.NewCond(&s.mu)
	if err := ensurePrivateDir(s.output); err != nil {
		return nil, nil, err
	}
	// What a compaction that did not finish left.
	os.Remove(filepath.Join(abs, compactTemp))
	f, err := openRegular(filepath.Join(abs, logFile), os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	s.log = f
	damaged, err := s.load(repair)
	var repaired []string
	if err == nil && len(damaged) > 0 {
		repaired, err = s.repair(damaged)
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("state dir: %s: %w", f.Name(), err)
	}
	if err := s.removeOrphans(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("state dir: %w", err)
	}
	return s, repaired, nil
}

// repair records the unfinished jobs that the damaged lines may have
// touched as failed, outcome unknown, and rewrites the log without the
// damaged lines (see Repair).
func (s *Store) repair(damaged []badLine) ([]string, error) {
	last := damaged[len(damaged)-1].off
	suspect := make(map[string]bool)
	for _, b := range damaged {
		for _, id := range b.ids {
			suspect[id] = true
		}
	}
	for id, e := range s.recs {
		if e.off < last {
			suspect[id] = true
		}
	}
	var repaired []string
	for id := range suspect {
		if e, ok := s.recs[id]; !ok || e.done {
			continue
		}
		r, err := s.Get(id)
		if err != nil {
			return nil, err
		}
		now := time.Now().UTC()
		r.Message = fmt.Sprintf("outcome unknown: %s was damaged (at byte offset %d) where this job's later records may have been; it was repaired, and the job, %s in what was kept, is not run again", logFile, damaged[0].off, r.State)
		r.State, r.FinishedAt = "failed", &now
		if err := s.Put(r); err != nil {
			return nil, err
		}
		repaired = append(repaired, id)
	}
	slices.Sort(repaired)
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	if err := s.compact(true); err != nil {
		return nil, fmt.Errorf("rewriting the repaired log: %w", err)
	}
	return repaired, nil
}

// Close makes every line written to the log durable, those of the writes
// that did not wait for a sync too (Stage, MarkStarted), and closes the
// log; it returns the error of that sync or of the close. The Store must
// not be used after.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.waitSyncedLocked(s.written)
	if cerr := s.log.Close(); err == nil {
		err = cerr
	}
	return err
}

// openRegular opens path, not following a symlink there, creating it
// with mode 0600 when flag holds os.O_CREATE, and checks that it is a
// regular file that passes pathtrust.Rule.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	err = unix.Fstat(int(f.Fd()), &st)
	switch {
	case err != nil:
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = fmt.Errorf("%s is not a regular file", path)
	case pathtrust.Rule(&st) != "":
		err = &pathtrust.Error{Path: path, Rule: pathtrust.Rule(&st)}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// EnsureDir is what Open first does with the state directory dir
// (ensureDirs): it checks that dir may be trusted, creating it only once
// its parents have been checked, and that its output directory, if there,
// may be trusted too. The daemon calls it before it takes the lock it
// holds in dir, so that it creates nothing in a directory it then refuses.
func EnsureDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	return ensureDirs(abs)
}

// ensureDirs checks the state directory dir, an absolute path, creating
// it when missing (ensurePrivateDir), and then its output directory when
// it is there, without creating it: Open writes in dir (the version file,
// a migration) only after both have passed, and creates a missing output
// directory after that.
func ensureDirs(dir string) error {
	if err := ensurePrivateDir(dir); err != nil {
		return err
	}
	out := filepath.Join(dir, outputDir)
	if _, err := os.Lstat(out); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return ensurePrivateDir(out)
}

// ensurePrivateDir checks that dir is a real directory that only its
// owner may write, and that it and every directory and symlink on the
// way to it pass pathtrust's rules: owned by root or the daemon's uid and
// writable by no one else (a sticky directory of root's, as /tmp is, may
// be on the way). Whoever else could write the state directory, or
// rename one of its parents, could plant records that the daemon recovers
// and runs as root. A missing dir is created, with mode 0700, once the
// directories on the way to it have passed; nothing is created before.
func ensurePrivateDir(dir string) error {
	if _, err := os.Lstat(dir); err != nil { // missing, or under a file (MkdirAll tells)
		if err := checkParents(dir); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
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
		return fmt.Errorf("state dir: %s is writable by group or others (mode %#o)", dir, fi.Mode().Perm())
	}
	if _, err := pathtrust.Resolve(dir); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	return nil
}

// checkParents checks, for dir, an absolute path that is not there,
// the nearest directory above it that exists and the way to that
// directory by pathtrust's rules, and says what fails as the
// *pathtrust.Error of dir.
func checkParents(dir string) error {
	top := filepath.Dir(dir)
	for top != "/" {
		if _, err := os.Lstat(top); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		top = filepath.Dir(top)
	}
	_, err := pathtrust.Resolve(top)
	if pe, ok := errors.AsType[*pathtrust.Error](err); ok {
		if !strings.HasPrefix(pe.Rule, "reached through ") {
			pe.Rule = "reached through " + top + ", " + pe.Rule
		}
		pe.Path = dir
	}
	return err
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
		if _, ok := s.recs[id]; ok || s.issued[id] {
			continue
		}
		s.issued[id] = true
		return id
	}
}

// Put stores r durably, replacing the job's record atomically: after a
// crash Get returns the old record or the new one. Put refuses an id not
// of NewID's form, an empty Op and an unknown State, and a new job when
// the state directory's file system is nearly full (checkRoom).
func (s *Store) Put(r *Record) error { return s.put(r, true) }

// Stage is Put without waiting for the sync: the record is in place,
// atomically, for a daemon that starts after this one dies, but a crash
// of the host may take it away until Commit returns.
func (s *Store) Stage(r *Record) error { return s.put(r, false) }

// Commit makes the job's record, as Stage left it, durable.
func (s *Store) Commit(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.recs[id]
	if !ok {
		return fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err := s.waitSyncedLocked(e.seq); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	return nil
}

func (s *Store) put(r *Record, durable bool) error {
	if err := checkID(r.ID); err != nil {
		return err
	}
	if r.Op == "" {
		return fmt.Errorf("job %s: record has no op", r.ID)
	}
	if !validState(r.State) {
		return fmt.Errorf("job %s: record state %q is not one of queued, running, succeeded, failed, canceled", r.ID, r.State)
	}
	s.mu.Lock()
	_, known := s.recs[r.ID]
	s.mu.Unlock()
	if !known {
		if err := s.checkRoom(); err != nil {
			return fmt.Errorf("job %s: %w", r.ID, err)
		}
	}
	if err := s.append([]logLine{{Rec: r}}, durable); err != nil {
		if !known {
			// The caller hears that there is no such job: none is
			// read or recovered, here or, if the removal reaches
			// the disk, after a restart.
			s.append([]logLine{{Rm: r.ID}}, false)
		}
		return fmt.Errorf("job %s: %w", r.ID, err)
	}
	return nil
}

// minRoom is the free space of the state directory's file system below
// which Put refuses a new job: room for its record's versions with an
// output tail of 64 KiB, and for its output log to begin. Without it, a
// new job's record could fit in the last block of the log on a full file
// system, and the job run with no room for its output.
const minRoom = 256 << 10

// checkRoom returns an error satisfying errors.Is(err, syscall.ENOSPC)
// when the state directory's file system has less than minRoom free.
func (s *Store) checkRoom() error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return &fs.PathError{Op: "statfs", Path: s.dir, Err: err}
	}
	if free := st.Bavail * uint64(st.Bsize); free < minRoom {
		return &fs.PathError{Op: "statfs", Path: s.dir, Err: syscall.ENOSPC}
	}
	return nil
}

// Get returns the job's record. It returns an error wrapping ErrNotFound
// when there is none, ErrInvalidID for an id not of NewID's form, and a
// *RecordError when the record cannot be decoded.
func (s *Store) Get(id string) (*Record, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.reads.Add(1)
	s.mu.Lock()
	e, ok := s.recs[id]
	var data []byte
	var err error
	if ok {
		data, err = s.readLocked(e)
	}
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, &RecordError{ID: id, Err: err}
	}
	ln, err := decodeLine(data)
	if err != nil {
		return nil, &RecordError{ID: id, Err: err}
	}
	if err := checkRecord(ln.Rec, id); err != nil {
		return nil, &RecordError{ID: id, Err: err}
	}
	return ln.Rec, nil
}

// checkRecord checks that r, read as the record of the job id, is one
// that Put can have stored.
func checkRecord(r *Record, id string) error {
	switch {
	case r == nil:
		return errors.New("not a record")
	case r.ID != id:
		return fmt.Errorf("holds id %q", r.ID)
	case r.Op == "":
		return errors.New("has no op")
	case !validState(r.State):
		return fmt.Errorf("state %q is not a state", r.State)
	}
	return nil
}

// Reads returns how many records Get has read from disk, Page's and
// List's reads included.
func (s *Store) Reads() int64 { return s.reads.Load() }
