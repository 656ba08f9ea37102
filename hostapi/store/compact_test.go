package store

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// fillForCompaction stores 200 jobs, each in three versions and marked
// started, finishes them, and returns the records, newest last.
func fillForCompaction(t *testing.T, s *Store) []*Record {
	t.Helper()
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var recs []*Record
	for i := range 200 {
		r := putRecord(t, s, StateQueued, t0.Add(time.Duration(i)*time.Second))
		r.State = StateRunning
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkStarted(r.ID); err != nil {
			t.Fatal(err)
		}
		r.State = StateSucceeded
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return recs
}

// checkKept checks that s holds the records of kept, with their started
// marks, and none of gone.
func checkKept(t *testing.T, s *Store, kept, gone []*Record) {
	t.Helper()
	for _, r := range kept {
		got, err := s.Get(r.ID)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("Get(%s) = %+v, %v; want %+v", r.ID, got, err, r)
		}
		if ok, err := s.Started(r.ID); !ok || err != nil {
			t.Errorf("Started(%s) = %v, %v; want true", r.ID, ok, err)
		}
	}
	for _, r := range gone {
		if _, err := s.Get(r.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s) of a pruned job: %v, want ErrNotFound", r.ID, err)
		}
	}
}

// TestCompact prunes a store down to 10 of its 200 jobs: the log, then
// many times longer than it needs, is rewritten to the lines it needs.
// A job stored and one marked while the live lines are copied, which
// compact does without the Store's lock, are in the new log too.
func TestCompact(t *testing.T) {
	s := openTestStore(t)
	recs := fillForCompaction(t, s)
	var during *Record
	crashAt = func(step string) error {
		if step == "compact: copied" {
			during = putRecord(t, s, StateRunning, time.Now().UTC().Round(0))
			if err := s.MarkStarted(during.ID); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	defer func() { crashAt = nil }()
	if _, err := s.Prune(10, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if during == nil {
		t.Fatal("Prune of 190 of 200 jobs did not compact the log")
	}
	kept := append(recs[190:], during)
	if n, want := len(logLines(t, s)), 2*len(kept); n != want {
		t.Errorf("the compacted log holds %d lines, want %d: a record and a mark per job", n, want)
	}
	checkKept(t, s, kept, recs[:190])
	r := putRecord(t, s, StateQueued, time.Now().UTC().Round(0))
	kept = append(kept, r)
	s = reopen(t, s)
	if err := s.MarkStarted(r.ID); err != nil {
		t.Fatal(err)
	}
	checkKept(t, s, kept, recs[:190])
}

// TestCompactCrash stops compact at each of its steps, as a crash would:
// a Store opened after finds every record kept, and none pruned.
func TestCompactCrash(t *testing.T) {
	for _, at := range []string{"compact: copied", "compact: synced", "compact: renamed"} {
		t.Run(at, func(t *testing.T) {
			s := openTestStore(t)
			recs := fillForCompaction(t, s)
			crash := errors.New("crash")
			crashAt = func(step string) error {
				if step == at {
					return crash
				}
				return nil
			}
			_, err := s.Prune(10, 0, time.Now())
			crashAt = nil
			if !errors.Is(err, crash) {
				t.Fatalf("Prune with a crash at %q: %v", at, err)
			}
			checkKept(t, s, recs[190:], recs[:190])
			s = reopen(t, s)
			checkKept(t, s, recs[190:], recs[:190])
		})
	}
}
