package store

import (
	"testing"
	"time"
)

// TestPageBounded lists a store of 250 records of uid 0 and 10 of uid
// 1000: pages hold at most the limit asked and, followed by their
// cursors, give every visible record once, newest first; a page reads
// only the records it returns, so a caller that may see no job has none
// read, whatever the store holds.
func TestPageBounded(t *testing.T) {
	s := openTestStore(t)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var all []*Record
	for i := range 260 {
		r := &Record{ID: s.NewID(), Op: "rebase", State: StateSucceeded, CreatedAt: t0.Add(time.Duration(i%130) * time.Second)}
		if i%26 == 0 {
			r.CallerUID = 1000
		}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	everyone := func(string, uint32) bool { return true }
	if _, _, err := s.Page(nil, 0, everyone); err == nil {
		t.Error("a page of 0 records: no error, want the limit refused")
	}
	const limit = 100

	var got []*Record
	var after *Cursor
	for pages := 0; ; pages++ {
		reads := s.reads.Load()
		recs, next, err := s.Page(after, limit, everyone)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.reads.Load() - reads; pages > 0 && n != int64(len(recs)) {
			t.Errorf("page %d: %d records read for %d returned", pages, n, len(recs))
		}
		if len(recs) > limit {
			t.Fatalf("page %d holds %d records, more than %d", pages, len(recs), limit)
		}
		got = append(got, recs...)
		if next == nil {
			break
		}
		after = next
	}
	if len(got) != len(all) {
		t.Fatalf("pages gave %d records, want %d", len(got), len(all))
	}
	seen := make(map[string]bool)
	for i, r := range got {
		if seen[r.ID] {
			t.Errorf("record %s listed twice", r.ID)
		}
		seen[r.ID] = true
		if i > 0 && newestFirst(got[i-1].CreatedAt, got[i-1].ID, r.CreatedAt, r.ID) >= 0 {
			t.Errorf("records %d and %d out of order", i-1, i)
		}
	}

	reads := s.reads.Load()
	recs, next, err := s.Page(nil, limit, func(string, uint32) bool { return false })
	if err != nil || len(recs) != 0 || next != nil || s.reads.Load() != reads {
		t.Errorf("a caller that may see nothing: %d records, next %v, %v, %d records read: want none read", len(recs), next, err, s.reads.Load()-reads)
	}
	recs, next, err = s.Page(nil, limit, func(_ string, uid uint32) bool { return uid == 1000 })
	if err != nil || len(recs) != 10 || next != nil || s.reads.Load()-reads != 10 {
		t.Errorf("uid 1000's jobs: %d records, next %v, %v, %d records read: want its 10, 10 read", len(recs), next, err, s.reads.Load()-reads)
	}
	if _, err := ParseCursor("1.../../x"); err == nil {
		t.Error("a forged cursor parsed")
	}
}
