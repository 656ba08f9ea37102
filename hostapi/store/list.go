package store

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// List returns the store's records, newest first (by CreatedAt, then by
// id). A record that cannot be read is left out of the list and reported:
// the error is then a join (errors.Join) of one *RecordError per record
// left out, returned together with the records that could be read.
func (s *Store) List() ([]*Record, error) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.recs))
	for id := range s.recs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	var recs []*Record
	var errs []error
	for _, id := range ids {
		r, err := s.Get(id)
		switch {
		case errors.Is(err, ErrNotFound):
			// Removed meanwhile, by Prune.
		case err != nil:
			errs = append(errs, err)
		default:
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b *Record) int { return newestFirst(a.CreatedAt, a.ID, b.CreatedAt, b.ID) })
	return recs, errors.Join(errs...)
}

// A Cursor is where a page of a listing ends: the creation time and id of
// its last record. The next page starts with the record after it, newest
// first, whatever was added or pruned meanwhile.
type Cursor struct {
	Created time.Time
	ID      string
}

// String returns the cursor as a caller passes it back: the creation time
// in nanoseconds since 1970, a dot and the id.
func (c Cursor) String() string {
	return fmt.Sprintf("%d.%s", c.Created.UnixNano(), c.ID)
}

// ParseCursor parses what Cursor.String returned.
func ParseCursor(s string) (Cursor, error) {
	ns, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || checkID(id) != nil {
		return Cursor{}, fmt.Errorf("cursor %q is not one a listing gave", s)
	}
	return Cursor{Created: time.Unix(0, n), ID: id}, nil
}

// Page returns, newest first, at most limit (1 or more) of the records
// whose op and caller uid see admits, those after the cursor when after
// is not nil, and the cursor of the page's last record when there are
// more. It chooses from the store's index in memory and reads no other
// record than those it returns: a caller that may see no job has no
// record read. Records that cannot be read are left out.
func (s *Store) Page(after *Cursor, limit int, see func(op string, uid uint32) bool) ([]*Record, *Cursor, error) {
	if limit < 1 {
		return nil, nil, fmt.Errorf("limit %d: must be 1 or more", limit)
	}
	var page []Cursor
	s.mu.Lock()
	for id, m := range s.recs {
		c := Cursor{Created: m.created, ID: id}
		if (after == nil || newestFirst(after.Created, after.ID, c.Created, c.ID) < 0) && see(m.op, m.uid) {
			page = append(page, c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(page, func(a, b Cursor) int { return newestFirst(a.Created, a.ID, b.Created, b.ID) })
	var next *Cursor
	if len(page) > limit {
		page = page[:limit]
		next = &page[limit-1]
	}
	recs := make([]*Record, 0, len(page))
	for _, c := range page {
		if r, err := s.Get(c.ID); err == nil {
			recs = append(recs, r)
		}
	}
	return recs, next, nil
}

// newestFirst orders jobs newest first: by creation time, then by id.
func newestFirst(aCreated time.Time, aID string, bCreated time.Time, bID string) int {
	if c := bCreated.Compare(aCreated); c != 0 {
		return c
	}
	return strings.Compare(bID, aID)
}

// Prune removes finished jobs, their records and output logs: those
// beyond the keep newest finished ones, and those that finished
// (FinishedAt, or CreatedAt when it is unset) before now minus maxAge. A
// negative keep or a maxAge <= 0 sets no bound of that kind. A job that
// is not done is never removed. The removals are durable in the log
// before any output log is deleted (a crash between leaves output logs
// that the next Open deletes). Prune then compacts the log if it holds
// four times as many lines as it needs (compact). Prunes run one at a
// time.
func (s *Store) Prune(keep int, maxAge time.Duration, now time.Time) (removed []string, err error) {
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	type job struct {
		id string
		pruneMeta
	}
	s.mu.Lock()
	jobs := make([]job, 0, len(s.recs))
	for id, e := range s.recs {
		if e.done {
			jobs = append(jobs, job{id, e.pruneMeta})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int { return newestFirst(a.created, a.id, b.created, b.id) })
	var gone []logLine
	kept := 0
	for _, j := range jobs {
		tooMany := keep >= 0 && kept >= keep
		tooOld := maxAge > 0 && j.end.Before(now.Add(-maxAge))
		if !tooMany && !tooOld {
			kept++
			continue
		}
		gone = append(gone, logLine{Rm: j.id})
		removed = append(removed, j.id)
	}
	if len(gone) == 0 {
		return nil, nil
	}
	if err := s.append(gone, true); err != nil {
		return nil, fmt.Errorf("records log: %w", err)
	}
	var errs []error
	for _, id := range removed {
		if err := s.removeOutput(id); err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", id, err))
		}
	}
	if err := s.compact(false); err != nil {
		errs = append(errs, fmt.Errorf("records log: compacting: %w", err))
	}
	return removed, errors.Join(errs...)
}
