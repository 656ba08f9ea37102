package scheduler

import (
	"io"
	"os"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/store"
	"github.com/unitrun/unitrun/unit/exit"
)

// recordStore is what the daemon calls of its record store, in the
// store's terms (package store): records in the disk's schema.
type recordStore interface {
	NewID() string
	Put(r *store.Record) error
	Stage(r *store.Record) error
	Commit(id string) error
	Get(id string) (*store.Record, error)
	List() ([]*store.Record, error)
	Page(after *store.Cursor, limit int, see func(op string, uid uint32) bool) ([]*store.Record, *store.Cursor, error)
	Prune(keep int, maxAge time.Duration, now time.Time) (removed []string, err error)
	MarkStarted(id string) error
	Started(id string) (bool, error)
	OpenOutput(id string) (*os.File, error)
	ReadOutput(id string) (*os.File, error)
	CopyOutput(w io.Writer, id string, f *os.File, buf []byte) (int64, error)
	Tail(id string, n int) (string, error)
	Close() error
}

// Store is the daemon's record store in the daemon's terms: records go in
// and come out as the Records it serves. The conversion between a Record
// and the store's disk schema is here and nowhere else.
type Store struct {
	recordStore
	dir string // the state directory, as given to OpenStore
}

// OpenStore opens the record store in the state directory dir (see
// store.Open).
func OpenStore(dir string) (*Store, error) {
	s, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	return &Store{recordStore: s, dir: dir}, nil
}

// RepairStore opens the record store in the state directory dir as
// OpenStore does, repairing a log damaged in the middle instead of
// refusing it, and returns the ids of the unfinished jobs the damage may
// have touched, now recorded as failed, outcome unknown (see
// store.Repair): none is run again.
func RepairStore(dir string) (*Store, []string, error) {
	s, repaired, err := store.Repair(dir)
	if err != nil {
		return nil, nil, err
	}
	return &Store{recordStore: s, dir: dir}, repaired, nil
}

// Errors of the store, as the daemon's callers test them with errors.Is.
var (
	ErrNotFound  = store.ErrNotFound
	ErrInvalidID = store.ErrInvalidID
)

// Put stores r durably (store.Store.Put).
func (s *Store) Put(r *api.Record) error { return s.recordStore.Put(toDisk(r)) }

// stage stores r for a daemon that starts after this one, not yet durably
// (store.Store.Stage).
func (s *Store) stage(r *api.Record) error { return s.recordStore.Stage(toDisk(r)) }

// Get returns the job's record (store.Store.Get).
func (s *Store) Get(id string) (*api.Record, error) {
	r, err := s.recordStore.Get(id)
	if r == nil {
		return nil, err
	}
	return fromDisk(r), err
}

// List returns the store's records, newest first (store.Store.List).
func (s *Store) List() ([]*api.Record, error) {
	recs, err := s.recordStore.List()
	return fromDiskAll(recs), err
}

// Page returns a page of the records that see admits (store.Store.Page).
func (s *Store) Page(after *store.Cursor, limit int, see func(op string, uid uint32) bool) ([]*api.Record, *store.Cursor, error) {
	recs, next, err := s.recordStore.Page(after, limit, see)
	return fromDiskAll(recs), next, err
}

func fromDiskAll(recs []*store.Record) []*api.Record {
	if recs == nil {
		return nil
	}
	out := make([]*api.Record, len(recs))
	for i, r := range recs {
		out[i] = fromDisk(r)
	}
	return out
}

// toDisk returns r in the store's disk schema.
func toDisk(r *api.Record) *store.Record {
	return &store.Record{
		ID: r.ID, Op: r.Op, Args: r.Args, State: string(r.State), Unit: r.Unit,
		InvocationID: r.InvocationID, JobResult: r.JobResult, Result: r.Result,
		ExitCode: r.ExitCode, Signal: r.Signal, RebootRequired: r.RebootRequired,
		CallerUID: r.CallerUID, CallerPID: r.CallerPID,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Attempts: r.Attempts, BootID: r.BootID, Key: r.Key, Message: r.Message, OutputTail: r.OutputTail,
	}
}

// fromDisk returns the record r of the store's disk schema as the daemon
// serves it. The exit is read with exit.ParseExit, so that a record
// written before exit_code was set for a signal reads as one written
// today (exit_code 128+N beside the signal).
func fromDisk(r *store.Record) *api.Record {
	exitCode, signal := exit.ParseExit(r.ExitCode, r.Signal, r.Result).JSON()
	return &api.Record{
		ID: r.ID, Op: r.Op, Args: r.Args, State: api.State(r.State), Unit: r.Unit,
		InvocationID: r.InvocationID, JobResult: r.JobResult, Result: r.Result,
		ExitCode: exitCode, Signal: signal, RebootRequired: r.RebootRequired,
		CallerUID: r.CallerUID, CallerPID: r.CallerPID,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Attempts: r.Attempts, BootID: r.BootID, Key: r.Key, Message: r.Message, OutputTail: r.OutputTail,
	}
}
