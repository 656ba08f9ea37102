package hostapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	sort.Slice(recs, func(i, j int) bool {
		if !recs[i].CreatedAt.Equal(recs[j].CreatedAt) {
			return recs[i].CreatedAt.After(recs[j].CreatedAt)
		}
		return recs[i].ID > recs[j].ID
	})
	return recs, errors.Join(errs...)
}

// staleTemp is the age after which Prune removes a temp directory left by
// a Put that did not finish.
const staleTemp = time.Hour

// Prune removes finished jobs (their whole directories): those beyond the
// keep newest finished ones, and those that finished (FinishedAt, or
// CreatedAt when it is unset) before now minus maxAge. A negative keep or a
// maxAge <= 0 sets no bound of that kind. A job that is not Done is never
// removed, nor is one whose record cannot be read; those are reported as
// List reports them. Each job directory is renamed away before it is
// deleted, so a crash never leaves a job without its record. Prune also
// deletes what earlier crashed Puts and Prunes left behind.
func (s *Store) Prune(keep int, maxAge time.Duration, now time.Time) (removed []string, err error) {
	errs := []error{s.removeLeftovers(now)}
	recs, err := s.List()
	errs = append(errs, err)
	kept := 0
	for _, r := range recs {
		if !r.Done() {
			continue
		}
		end := r.CreatedAt
		if r.FinishedAt != nil {
			end = *r.FinishedAt
		}
		tooMany := keep >= 0 && kept >= keep
		tooOld := maxAge > 0 && end.Before(now.Add(-maxAge))
		if !tooMany && !tooOld {
			kept++
			continue
		}
		if err := s.remove(r.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, r.ID)
	}
	return removed, errors.Join(errs...)
}

// remove deletes a job's directory: renamed first, then deleted.
func (s *Store) remove(id string) error {
	gone := filepath.Join(s.jobs, tempPrefix+"rm-"+id)
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if err := os.Rename(filepath.Join(s.jobs, id), gone); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if err := atomicfile.SyncDir(s.jobs); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	return nil
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
