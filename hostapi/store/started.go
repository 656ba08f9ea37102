package store

import "fmt"

// MarkStarted records that the job's unit was created and its command
// executed: a line in the log, not waited for. It needs no sync: a daemon
// started after this one died finds it, and after a crash of the host the
// record's boot ID tells the job apart from one that never started (see
// scheduler's Scheduler.collected). A running record without the mark, whose
// unit is gone and left no outcome, is a job the daemon accepted and then
// stopped before creating its unit: the job never ran. Jobs of ops with
// retry get no mark, so that such a job is run again (see scheduler's
// runExec).
func (s *Store) MarkStarted(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	s.mu.Lock()
	_, ok := s.recs[id]
	marked := s.started[id]
	s.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("job %s: %w", id, ErrNotFound)
	case marked:
		return nil
	}
	return s.append([]logLine{{Started: id}}, false)
}

// Started reports whether MarkStarted was called for the job.
func (s *Store) Started(id string) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started[id], nil
}
