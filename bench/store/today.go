package main

import (
	"os"
	"time"

	"github.com/unitrun/unitrun/hostapi/store"
)

// today is the daemon's store as it is (package hostapi/store).
type today struct{ s *store.Store }

func openToday(dir string) (design, error) {
	s, err := store.Open(dir)
	return today{s}, err
}

func (t today) newID() string { return t.s.NewID() }

// create stages the running record and commits it, as the daemon does
// while the job's unit is created.
func (t today) create(r *store.Record) error {
	if err := t.s.Stage(r); err != nil {
		return err
	}
	return t.s.Commit(r.ID)
}

func (t today) markStarted(id string) error            { return t.s.MarkStarted(id) }
func (t today) put(r *store.Record) error              { return t.s.Put(r) }
func (t today) openOutput(id string) (*os.File, error) { return t.s.OpenOutput(id) }
func (t today) tail(id string, n int) (string, error)  { return t.s.Tail(id, n) }
func (t today) get(id string) (*store.Record, error)   { return t.s.Get(id) }
func (t today) close() error                           { return nil }

func (t today) page(limit int) (int, error) {
	recs, _, err := t.s.Page(nil, limit, func(string, uint32) bool { return true })
	return len(recs), err
}

func (t today) prune(keep int) error {
	_, err := t.s.Prune(keep, 0, time.Now())
	return err
}
