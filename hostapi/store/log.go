package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/unitrun/unitrun/internal/lazyregexp"
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

// A line of the log is the CRC-32C (Castagnoli) of a logLine's JSON, as
// 8 lowercase hex digits, a space, the JSON and a newline. The checksum
// tells a line that a crash tore or a disk damaged from one written whole:
// JSON alone can decode from damaged bytes (an id changed into another).
const lineHead = 9 // the checksum and the space

// castagnoli is CRC-32C's table, made at its first use: every unitrun
// process links this package, and most never read or write a log.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// encodeLine returns ln as a line of the log, with its newline. JSON
// escapes the newlines of strings, so it is one line.
func encodeLine(ln *logLine) ([]byte, error) {
	data, err := json.Marshal(ln)
	if err != nil {
		return nil, err
	}
	return appendLine(make([]byte, 0, lineHead+len(data)+1), data), nil
}

// appendLine appends to buf the line of the log that holds data, a
// logLine's JSON.
func appendLine(buf, data []byte) []byte {
	buf = fmt.Appendf(buf, "%08x ", crc32.Checksum(data, castagnoli()))
	return append(append(buf, data...), '\n')
}

// decodeLine returns the logLine of a line of the log, without its
// newline, once its checksum matches.
func decodeLine(line []byte) (logLine, error) {
	var ln logLine
	if len(line) < lineHead || line[lineHead-1] != ' ' {
		return ln, errors.New("not a line of the log (no checksum)")
	}
	sum, err := strconv.ParseUint(string(line[:lineHead-1]), 16, 32)
	if err != nil {
		return ln, errors.New("not a line of the log (no checksum)")
	}
	if data := line[lineHead:]; crc32.Checksum(data, castagnoli()) != uint32(sum) {
		return ln, errors.New("its checksum does not match")
	}
	if err := json.Unmarshal(line[lineHead:], &ln); err != nil {
		return ln, err
	}
	return ln, nil
}

// A scanner reads the lines of the log into an index, in order, and tells
// the tail that a crash or a full disk leaves (lines that do not decode,
// or bytes without a newline, after the last line that does) from damage
// in the middle (lines that do not decode followed by one that does).
type scanner struct {
	x       *index
	end     int64     // after the last line that decodes: where the next line goes
	tail    []badLine // lines that do not decode after end
	damaged []badLine // lines that do not decode before one that does
}

// A badLine is a line of the log that does not decode: where it begins,
// and the job ids that can be read in it still.
type badLine struct {
	off int64
	ids []string
}

// idInLine finds job ids in the bytes of a damaged line.
var idInLine = lazyregexp.New(idPattern)

// scan applies each complete line of data, read from the log at base, and
// returns the offset after the last complete line, where the scan goes on.
func (sc *scanner) scan(data []byte, base int64) int64 {
	var off int
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return base + int64(off)
		}
		at := base + int64(off)
		if ln, err := decodeLine(data[off : off+i]); err == nil {
			sc.x.apply(&ln, at, i, 0)
			sc.damaged = append(sc.damaged, sc.tail...)
			sc.tail = nil
			sc.end = at + int64(i) + 1
		} else {
			sc.tail = append(sc.tail, badLine{off: at, ids: idInLine.FindAllString(string(data[off:off+i]), -1)})
		}
		off += i + 1
	}
}

// A DamageError reports lines of the log that do not decode (their
// checksum does not match) with intact lines after them: not the tail
// that a crash or a full disk leaves, but damage, which may have taken
// the lines that say a job ended or started.
type DamageError struct {
	Offset int64 // the first damaged line's offset in the log
	Lines  int   // the damaged lines
}

func (e *DamageError) Error() string {
	lines := "does not match its checksum"
	if e.Lines > 1 {
		lines = fmt.Sprintf("and %d more do not match their checksums", e.Lines-1)
	}
	return fmt.Sprintf("damaged: the line at byte offset %d %s, with intact lines after, so a job may have ended or started without the log saying so; "+
		"no job is started or recorded from a damaged log (repairing it keeps every intact record and records each unfinished job the damage may have touched as failed, outcome unknown, never run again)", e.Offset, lines)
}

// load reads the log into the Store's index, a MiB at a time, or a line
// at a time for longer lines, and cuts off its torn tail. It returns the
// damaged lines, for repair; and, unless repair, a *DamageError when
// there are any.
func (s *Store) load(repair bool) ([]badLine, error) {
	sc := scanner{x: &s.index}
	buf := make([]byte, 0, 1<<20)
	var base int64 // where buf begins in the log
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf)) // a line longer than buf
		}
		n, err := s.log.ReadAt(buf[len(buf):cap(buf)], base+int64(len(buf)))
		buf = buf[:len(buf)+n]
		end := sc.scan(buf, base)
		buf = buf[:copy(buf, buf[end-base:])]
		base = end
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(sc.damaged) > 0 && !repair {
		return nil, &DamageError{Offset: sc.damaged[0].off, Lines: len(sc.damaged)}
	}
	s.end = sc.end
	// The torn tail: the next line would go over it, but one shorter
	// than it would leave its end to be read as damage.
	if base+int64(len(buf)) > s.end {
		if err := s.log.Truncate(s.end); err != nil {
			return nil, fmt.Errorf("cutting off the torn line at byte offset %d: %w", s.end, err)
		}
	}
	return sc.damaged, nil
}

// append writes lines to the log and, when durable, returns once a sync
// covers them (waitSyncedLocked).
func (s *Store) append(lines []logLine, durable bool) error {
	var buf []byte
	ends := make([]int, len(lines))
	for i := range lines {
		line, err := encodeLine(&lines[i])
		if err != nil {
			return err
		}
		buf = append(buf, line...)
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
