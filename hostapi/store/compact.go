package store

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/unitrun/unitrun/internal/atomicfile"
)

// compactTemp, in the state directory, is the log being rewritten by
// compact; Open deletes one that a crash left.
const compactTemp = tempPrefix + logFile + ".compact"

// compactSlack is the lines a log holds beyond four per line it needs
// before compact rewrites it, so that a small log is not rewritten at
// each Prune.
const compactSlack = 64

// crashAt, when set (by tests), is called at each step of compact and of
// migrate that a crash may follow; an error stops the work there, as a
// crash would, leaving what the steps before left.
var crashAt func(step string) error

// step calls crashAt, when set, for the step named.
func step(name string) error {
	if crashAt == nil {
		return nil
	}
	return crashAt(name)
}

// compact rewrites the log with the lines it needs (each job's current
// record and started mark) once it holds four times as many, without
// holding mu while it copies them: it copies the lines it needs as they
// were when it began to a temp file and syncs it; then, under mu, it
// copies the lines appended meanwhile, syncs again, renames the temp file
// over the log and syncs the directory. A crash at any step leaves the
// old log or the new one, whole. With force, it rewrites the log whatever
// it holds (Repair). Its caller holds pruneMu.
func (s *Store) compact(force bool) error {
	s.mu.Lock()
	needed := len(s.recs) + len(s.started)
	if !force && s.lines < 4*needed+compactSlack {
		s.mu.Unlock()
		return nil
	}
	old, from := s.log, s.end
	recs := make(map[string]entry, len(s.recs))
	for id, e := range s.recs {
		recs[id] = e
	}
	started := make([]string, 0, len(s.started))
	for id := range s.started {
		started = append(started, id)
	}
	s.mu.Unlock()

	path := filepath.Join(s.dir, compactTemp)
	tmp, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	swapped := false
	defer func() {
		if !swapped {
			tmp.Close()
			os.Remove(path)
		}
	}()
	x, end, err := copyLive(tmp, old, recs, started)
	if err == nil {
		err = fdatasync(tmp)
	}
	if err == nil {
		err = step("compact: copied")
	}
	if err != nil {
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for s.syncing {
		s.cond.Wait()
	}
	end, err = replay(tmp, &x, end, old, from, s.end)
	if err == nil {
		err = fdatasync(tmp)
	}
	if err == nil {
		err = step("compact: synced")
	}
	if err == nil {
		err = os.Rename(path, filepath.Join(s.dir, logFile))
	}
	if err != nil {
		return err
	}
	swapped = true
	old.Close()
	s.log, s.index, s.end = tmp, x, end
	if err := step("compact: renamed"); err != nil {
		return err
	}
	// The log's lines are durable in tmp; tmp is the log once its name
	// is.
	if err := atomicfile.SyncDir(s.dir); err != nil {
		s.failLocked(err)
		return err
	}
	s.synced = s.written
	return nil
}

// copyLive writes to tmp the lines of recs, read from the log old, and a
// started mark for each id of started, and returns the index of tmp and
// its length.
func copyLive(tmp, old *os.File, recs map[string]entry, started []string) (index, int64, error) {
	x := newIndex()
	w := bufio.NewWriter(tmp)
	var end int64
	for id, e := range recs {
		buf := make([]byte, e.n+1)
		if _, err := old.ReadAt(buf[:e.n], e.off); err != nil {
			return x, 0, err
		}
		buf[e.n] = '\n'
		w.Write(buf)
		x.recs[id] = entry{off: end, n: e.n, pruneMeta: e.pruneMeta}
		x.lines++
		end += int64(len(buf))
	}
	for _, id := range started {
		line, err := encodeLine(&logLine{Started: id})
		if err != nil {
			return x, 0, err
		}
		w.Write(line)
		x.started[id] = true
		x.lines++
		end += int64(len(line))
	}
	return x, end, w.Flush()
}

// replay appends to tmp, which holds size bytes, the lines of old from
// from to to (those appended while copyLive copied), adds them to x, the
// index of tmp, and returns tmp's new length.
func replay(tmp *os.File, x *index, size int64, old *os.File, from, to int64) (int64, error) {
	tail := make([]byte, to-from)
	if _, err := old.ReadAt(tail, from); err != nil && err != io.EOF {
		return 0, err
	}
	if _, err := tmp.WriteAt(tail, size); err != nil {
		return 0, fmt.Errorf("%s: %w", tmp.Name(), err)
	}
	sc := scanner{x: x, end: size}
	sc.scan(tail, size)
	return sc.end, nil
}
