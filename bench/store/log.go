package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/unitrun/unitrun/hostapi/store"
	"golang.org/x/sys/unix"
)

// logStore keeps every job's records in one append-only log, a JSON line
// per change ({"v":1,"rec":...}, {"v":1,"started":id}, {"v":1,"rm":id}),
// and in memory where each job's current record is in the log, with what
// Page and Prune choose by (a record's output tail may be 64 KiB, and
// records_keep a million: the records themselves stay on disk). A line
// goes just after the last complete one, so that a write a full disk cut
// short is overwritten by the next. A durable append waits for a sync of
// the log that covers it: the first waiter syncs for all that wrote
// before it (group commit). Prune appends its removals, syncs, then
// deletes the output logs; when the log holds four times as many lines
// as records it is rewritten (a temp file, synced, renamed, the directory
// synced). A torn last line is passed over when the log is read.
type logStore struct {
	dir string
	out outputs

	mu      sync.Mutex
	cond    *sync.Cond
	f       *os.File
	end     int64  // where the next line goes
	written uint64 // appends written
	synced  uint64 // appends made durable
	syncing bool
	lines   int
	recs    map[string]loc
	started map[string]bool
}

// loc is where a job's current record is in the log, and what Page and
// Prune read of it.
type loc struct {
	off     int64
	n       int
	created time.Time
	state   string
}

type logLine struct {
	V       int           `json:"v"`
	Rec     *store.Record `json:"rec,omitempty"`
	Started string        `json:"started,omitempty"`
	Rm      string        `json:"rm,omitempty"`
}

func openLog(dir string) (design, error) {
	out := outputs(filepath.Join(dir, "output"))
	if err := os.MkdirAll(string(out), 0o700); err != nil {
		return nil, err
	}
	l := &logStore{dir: dir, out: out, recs: map[string]loc{}, started: map[string]bool{}}
	l.cond = sync.NewCond(&l.mu)
	f, err := os.OpenFile(filepath.Join(dir, "records.log"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	l.f = f
	if err := l.load(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// load reads the log: each complete line that decodes, in order.
func (l *logStore) load() error {
	data, err := io.ReadAll(l.f)
	if err != nil {
		return err
	}
	var off int64
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		var ln logLine
		if json.Unmarshal(data[off:off+int64(i)], &ln) == nil {
			l.apply(&ln, off, i)
			l.lines++
		}
		off += int64(i) + 1
	}
	l.end = off
	return nil
}

func (l *logStore) apply(ln *logLine, off int64, n int) {
	switch {
	case ln.Rec != nil:
		l.recs[ln.Rec.ID] = loc{off: off, n: n, created: ln.Rec.CreatedAt, state: ln.Rec.State}
	case ln.Started != "":
		l.started[ln.Started] = true
	case ln.Rm != "":
		delete(l.recs, ln.Rm)
		delete(l.started, ln.Rm)
	}
}

// append writes lines to the log and, when durable, returns once a sync
// covers them.
func (l *logStore) append(lines []logLine, durable bool) error {
	var buf []byte
	offs := make([]int, len(lines)+1)
	for i := range lines {
		lines[i].V = 1
		data, err := json.Marshal(&lines[i])
		if err != nil {
			return err
		}
		buf = append(append(buf, data...), '\n')
		offs[i+1] = len(buf)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteAt(buf, l.end); err != nil {
		return err
	}
	for i := range lines {
		l.apply(&lines[i], l.end+int64(offs[i]), offs[i+1]-offs[i]-1)
	}
	l.end += int64(len(buf))
	l.written++
	l.lines += len(lines)
	mine := l.written
	for durable && l.synced < mine {
		if l.syncing {
			l.cond.Wait()
			continue
		}
		l.syncing = true
		upto := l.written
		l.mu.Unlock()
		err := unix.Fdatasync(int(l.f.Fd()))
		l.mu.Lock()
		l.syncing = false
		l.cond.Broadcast()
		if err != nil {
			return err
		}
		l.synced = max(l.synced, upto)
	}
	return nil
}

func (l *logStore) newID() string                          { return newID() }
func (l *logStore) openOutput(id string) (*os.File, error) { return l.out.open(id) }
func (l *logStore) tail(id string, n int) (string, error)  { return l.out.tail(id, n) }
func (l *logStore) close() error                           { return l.f.Close() }

func (l *logStore) create(r *store.Record) error { return l.put(r) }

func (l *logStore) put(r *store.Record) error {
	return l.append([]logLine{{Rec: r}}, true)
}

func (l *logStore) markStarted(id string) error {
	return l.append([]logLine{{Started: id}}, false)
}

func (l *logStore) get(id string) (*store.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.recs[id]
	if !ok {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return l.readLocked(at)
}

// readLocked reads the record at at from the log.
func (l *logStore) readLocked(at loc) (*store.Record, error) {
	buf := make([]byte, at.n)
	if _, err := l.f.ReadAt(buf, at.off); err != nil {
		return nil, err
	}
	var ln logLine
	if err := json.Unmarshal(buf, &ln); err != nil || ln.Rec == nil {
		return nil, fmt.Errorf("record at %d: %v", at.off, err)
	}
	return ln.Rec, nil
}

type idLoc struct {
	id string
	loc
}

// newestLocked returns where the records are, newest first.
func (l *logStore) newestLocked() []idLoc {
	all := make([]idLoc, 0, len(l.recs))
	for id, at := range l.recs {
		all = append(all, idLoc{id, at})
	}
	slices.SortFunc(all, func(a, b idLoc) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	return all
}

func (l *logStore) page(limit int) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := l.newestLocked()
	recs := make([]*store.Record, 0, limit)
	for _, at := range all[:min(limit, len(all))] {
		r, err := l.readLocked(at.loc)
		if err != nil {
			return 0, err
		}
		recs = append(recs, r)
	}
	return len(recs), nil
}

func (l *logStore) prune(keep int) error {
	l.mu.Lock()
	var gone []logLine
	kept := 0
	for _, at := range l.newestLocked() {
		if at.state != "succeeded" && at.state != "failed" && at.state != "canceled" {
			continue
		}
		if kept < keep {
			kept++
			continue
		}
		gone = append(gone, logLine{Rm: at.id})
	}
	l.mu.Unlock()
	if len(gone) == 0 {
		return nil
	}
	if err := l.append(gone, true); err != nil {
		return err
	}
	for _, g := range gone {
		if err := l.out.remove(g.Rm); err != nil {
			return err
		}
	}
	return l.compact()
}

// compact rewrites the log with the current records alone once it holds
// four times as many lines.
func (l *logStore) compact() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines < 4*len(l.recs)+64 {
		return nil
	}
	path := filepath.Join(l.dir, "records.log")
	tmp, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	var buf []byte
	recs := map[string]loc{}
	for id, at := range l.recs {
		line := make([]byte, at.n)
		if _, err := l.f.ReadAt(line, at.off); err != nil {
			tmp.Close()
			return err
		}
		recs[id] = loc{off: int64(len(buf)), n: at.n, created: at.created, state: at.state}
		buf = append(append(buf, line...), '\n')
		if l.started[id] {
			buf = fmt.Appendf(buf, "{\"v\":1,\"started\":%q}\n", id)
		}
	}
	_, err = tmp.Write(buf)
	if err == nil {
		err = unix.Fdatasync(int(tmp.Fd()))
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(l.dir); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		tmp.Close()
		return err
	}
	l.f.Close()
	l.f, l.end, l.recs = tmp, int64(len(buf)), recs
	l.lines = len(recs) + len(l.started)
	return nil
}
