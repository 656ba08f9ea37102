package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// A logLine is a line of the log: a version of a job's record, the job's
// started mark, or its removal by Prune.
type logLine struct {
	Rec     *Record `json:"rec,omitempty"`
	Started string  `json:"started,omitempty"`
	Rm      string  `json:"rm,omitempty"`
}

// index is what the log holds, in memory: where each job's current record
// is, with what Prune and Page choose by, and the jobs marked started.
type index struct {
	lines   int // lines in the log that decode
	recs    map[string]entry
	started map[string]bool
}

func newIndex() index {
	return index{recs: make(map[string]entry), started: make(map[string]bool)}
}

// An entry is where a job's current record is in the log, and what Prune
// and Page read of it.
type entry struct {
	off int64  // the line's offset
	n   int    // its length, without the newline
	seq uint64 // the append that wrote it (Store.written)
	pruneMeta
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

// apply adds to x the line ln, read or written at off, n bytes long
// without its newline, by the append seq.
func (x *index) apply(ln *logLine, off int64, n int, seq uint64) {
	x.lines++
	switch {
	case ln.Rec != nil:
		if checkID(ln.Rec.ID) == nil {
			x.recs[ln.Rec.ID] = entry{off: off, n: n, seq: seq, pruneMeta: pruneMetaOf(ln.Rec)}
		}
	case ln.Started != "":
		x.started[ln.Started] = true
	case ln.Rm != "":
		delete(x.recs, ln.Rm)
		delete(x.started, ln.Rm)
	}
}

// scanLog applies to x each complete line of data, read from the log at
// base, that decodes, in order, and returns the offset after the last
// complete line: where the next line goes. A line that does not decode
// (torn by a crash, or cut short by a full disk and not yet overwritten)
// is passed over, as are the bytes after the last newline.
func scanLog(x *index, data []byte, base int64) int64 {
	var off int
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return base + int64(off)
		}
		var ln logLine
		if i > 0 && json.Unmarshal(data[off:off+i], &ln) == nil {
			x.apply(&ln, base+int64(off), i, 0)
		}
		off += i + 1
	}
}

// load reads the log into the Store's index, a MiB at a time, or a line
// at a time for longer lines.
func (s *Store) load() error {
	buf := make([]byte, 0, 1<<20)
	var base int64 // where buf begins in the log
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf)) // a line longer than buf
		}
		n, err := s.log.ReadAt(buf[len(buf):cap(buf)], base+int64(len(buf)))
		buf = buf[:len(buf)+n]
		end := scanLog(&s.index, buf, base)
		buf = buf[:copy(buf, buf[end-base:])]
		base = end
		if errors.Is(err, io.EOF) {
			s.end = end
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// append writes lines to the log and, when durable, returns once a sync
// covers them (waitSyncedLocked).
func (s *Store) append(lines []logLine, durable bool) error {
	var buf []byte
	ends := make([]int, len(lines))
	for i := range lines {
		// One line: JSON escapes the newlines of strings.
		data, err := json.Marshal(&lines[i])
		if err != nil {
			return err
		}
		buf = append(append(buf, data...), '\n')
		ends[i] = len(buf)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A write cut short leaves end where it was: the next line goes over
	// what it wrote, which is cut off meanwhile if it can be (a removal
	// written whole after a torn line would count).
	if _, err := s.log.WriteAt(buf, s.end); err != nil {
		s.log.Truncate(s.end)
		return err
	}
	s.written++
	start := 0
	for i := range lines {
		s.apply(&lines[i], s.end+int64(start), ends[i]-start-1, s.written)
		if r := lines[i].Rec; r != nil {
			delete(s.issued, r.ID)
		}
		start = ends[i]
	}
	s.end += int64(len(buf))
	if !durable {
		return nil
	}
	return s.waitSyncedLocked(s.written)
}

// waitSyncedLocked returns once the appends up to seq are durable: it
// syncs the log, outside mu, for every append written so far unless
// another writer does so already, and then waits for it (group commit).
// Once a sync has failed, it returns that error for every append not
// synced before: the kernel may have dropped the pages the failed sync
// left behind, so a later sync that succeeds says nothing of them
// (fsync(2)); the Store makes nothing durable again until it is opened
// again.
func (s *Store) waitSyncedLocked(seq uint64) error {
	for s.synced < seq {
		if s.syncErr != nil {
			return s.syncErr
		}
		if s.syncing {
			s.cond.Wait()
			continue
		}
		s.syncing = true
		upto, f := s.written, s.log
		s.mu.Unlock()
		err := fdatasync(f)
		s.mu.Lock()
		s.syncing = false
		if err != nil {
			s.failLocked(err)
		} else {
			s.synced = max(s.synced, upto)
		}
		s.cond.Broadcast()
	}
	return nil
}

// failLocked records that a sync of the log failed with err: every
// durable write fails from then on.
func (s *Store) failLocked(err error) {
	s.syncErr = fmt.Errorf("%w (no record is made durable until the store is opened again)", err)
}

// readLocked returns the line of the record at e, without its newline.
func (s *Store) readLocked(e entry) ([]byte, error) {
	buf := make([]byte, e.n)
	if _, err := s.log.ReadAt(buf, e.off); err != nil {
		return nil, err
	}
	return buf, nil
}
