package main

import (
	"os"
	"time"

	"github.com/unitrun/unitrun/hostapi/store"
)

// v2 is the daemon's store as it is (package hostapi/store: the one log of version 2, its lines checksummed since version 3).
type v2 struct{ s *store.Store }

func openV2(dir string) (design, error) {
	s, err := store.Open(dir)
	return v2{s}, err
}

func (t v2) newID() string { return t.s.NewID() }

// create stages the running record and commits it, as the daemon does
// while the job's unit is created.
func (t v2) create(r *store.Record) error {
	if err := t.s.Stage(r); err != nil {
		return err
	}
	return t.s.Commit(r.ID)
}

func (t v2) markStarted(id string) error            { return t.s.MarkStarted(id) }
func (t v2) put(r *store.Record) error              { return t.s.Put(r) }
func (t v2) openOutput(id string) (*os.File, error) { return t.s.OpenOutput(id) }
func (t v2) tail(id string, n int) (string, error)  { return t.s.Tail(id, n) }
func (t v2) get(id string) (*store.Record, error)   { return t.s.Get(id) }
func (t v2) close() error                           { return t.s.Close() }

func (t v2) page(limit int) (int, error) {
	recs, _, err := t.s.Page(nil, limit, func(string, uint32) bool { return true })
	return len(recs), err
}

func (t v2) prune(keep int) error {
	_, err := t.s.Prune(keep, 0, time.Now())
	return err
}
