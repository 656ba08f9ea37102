package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
)

// List returns the store's records, newest first (by CreatedAt, then by
// id). A record that cannot be read is left out of the list and reported:
// the error is then a join (errors.Join) of one *RecordError per record
// left out, returned together with the records that could be read. Only a
// failure to read the jobs directory itself returns no records.
func (s *Store) List() ([]*Record, error) {
	entries, err := os.ReadDir(s.jobs)
	if err != nil {
		return nil, fmt.Errorf("jobs dir: %w", err)
	}
	var recs []*Record
	var errs []error
	for _, e := range entries {
		if checkID(e.Name()) != nil {
			continue
		}
		r, err := s.Get(e.Name())
		switch {
		case errors.Is(err, ErrNotFound):
			// Removed since ReadDir, by Prune.
		case err != nil:
			var re *RecordError
			if !errors.As(err, &re) {
				err = &RecordError{ID: e.Name(), Err: err}
			}
			errs = append(errs, err)
		default:
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b *Record) int { return newestFirst(a.CreatedAt, a.ID, b.CreatedAt, b.ID) })
	return recs, errors.Join(errs...)
}

// MaxPage is the most records a page of a listing holds (Store.Page).
const MaxPage = 100

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

// Page returns, newest first, at most limit (1 to MaxPage) of the records
// whose op and caller uid see admits, those after the cursor when after
// is not nil, and the cursor of the page's last record when there are
// more. It chooses from the store's index (which the first listing or
// Prune of a Store makes by reading each record once) and reads no other
// record than those it returns: a caller that may see no job has no
// record read. Records that cannot be read are left out.
func (s *Store) Page(after *Cursor, limit int, see func(op string, uid uint32) bool) ([]*Record, *Cursor, error) {
	if limit < 1 || limit > MaxPage {
		return nil, nil, fmt.Errorf("limit %d: must be between 1 and %d", limit, MaxPage)
	}
	if err := s.loadIndex(); err != nil {
		var re *RecordError
		if !errors.As(err, &re) {
			return nil, nil, err
		}
	}
	var page []Cursor
	s.mu.Lock()
	for id, m := range s.index {
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

// pruneMeta is what Prune and Page read of a record.
type pruneMeta struct {
	done    bool
	created time.Time
	end     time.Time // FinishedAt, or CreatedAt when it is unset
	op      string
	uid     uint32 // CallerUID
}

// pruneMetaOf returns what Prune and Page read of r.
func pruneMetaOf(r *Record) pruneMeta {
	m := pruneMeta{done: doneState(r.State), created: r.CreatedAt, end: r.CreatedAt, op: r.Op, uid: r.CallerUID}
	if r.FinishedAt != nil {
		m.end = *r.FinishedAt
	}
	return m
}

// indexLocked records r in the index of the store's records that Prune
// reads, once Prune has made it.
func (s *Store) indexLocked(r *Record) {
	if s.index != nil {
		s.index[r.ID] = pruneMetaOf(r)
	}
}

// loadIndex makes the index of the store's records, reading each record
// once (List); Puts keep it up to date from then on. The error is List's.
func (s *Store) loadIndex() error {
	s.mu.Lock()
	if s.index != nil {
		s.mu.Unlock()
		return nil
	}
	// Puts from now on are indexed; List's versions of their records may
	// be older and do not replace them.
	s.index = make(map[string]pruneMeta)
	s.mu.Unlock()
	recs, err := s.List()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if _, ok := s.index[r.ID]; !ok {
			s.index[r.ID] = pruneMetaOf(r)
		}
	}
	return err
}

// staleTemp is the age after which Prune removes a temp directory left by
// a Put that did not finish.
const staleTemp = time.Hour

// Prune removes finished jobs (their whole directories): those beyond the
// keep newest finished ones, and those that finished (FinishedAt, or
// CreatedAt when it is unset) before now minus maxAge. A negative keep or a
// maxAge <= 0 sets no bound of that kind. A job that is not Done is never
// removed, nor is one whose record cannot be read: the first Prune of a
// Store reads every record, and reports those as List does; later ones
// read no record, but what the Store's Puts left in its index. The job
// directories are renamed away, durably, before they are emptied to be
// spares (recycle) or deleted, so a crash never leaves a job without its
// record. Prune also deletes what earlier crashed Puts and Prunes left
// behind. Prunes run one at a time.
func (s *Store) Prune(keep int, maxAge time.Duration, now time.Time) (removed []string, err error) {
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	errs := []error{s.removeLeftovers(now), s.loadIndex()}
	type job struct {
		id string
		pruneMeta
	}
	s.mu.Lock()
	jobs := make([]job, 0, len(s.index))
	for id, m := range s.index {
		if m.done {
			jobs = append(jobs, job{id, m})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int { return newestFirst(a.created, a.id, b.created, b.id) })
	kept := 0
	for _, j := range jobs {
		tooMany := keep >= 0 && kept >= keep
		tooOld := maxAge > 0 && j.end.Before(now.Add(-maxAge))
		if !tooMany && !tooOld {
			kept++
			continue
		}
		if err := os.Rename(filepath.Join(s.jobs, j.id), s.removal(j.id)); err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", j.id, err))
			continue
		}
		removed = append(removed, j.id)
	}
	if len(removed) == 0 {
		return nil, errors.Join(errs...)
	}
	s.mu.Lock()
	for _, id := range removed {
		delete(s.index, id)
	}
	s.mu.Unlock()
	// The renames are durable before any job's files are touched; the
	// directories are left for the next Prune to delete if they are not.
	if err := atomicfile.SyncDir(s.jobs); err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("jobs dir: %w", err))...)
	}
	for _, id := range removed {
		if !s.recycle(s.removal(id)) {
			if err := os.RemoveAll(s.removal(id)); err != nil {
				errs = append(errs, fmt.Errorf("job %s: %w", id, err))
			}
		}
	}
	return removed, errors.Join(errs...)
}

// removal is the name that Prune gives the directory of a job it removes
// before it makes it a spare or deletes it.
func (s *Store) removal(id string) string {
	return filepath.Join(s.jobs, tempPrefix+"rm-"+id)
}

// removeLeftovers deletes the directories of removals that did not finish
// and the temp directories of Puts that did not finish and are older than
// staleTemp.
func (s *Store) removeLeftovers(now time.Time) error {
	entries, err := os.ReadDir(s.jobs)
	if err != nil {
		return fmt.Errorf("jobs dir: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, tempPrefix+"rm-"):
		case strings.HasPrefix(name, tempPrefix+"new-"):
			info, err := e.Info()
			if err != nil || now.Sub(info.ModTime()) < staleTemp {
				continue
			}
		default:
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.jobs, name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
