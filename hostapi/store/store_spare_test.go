package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// spareNames returns the names of the spares in the store's jobs directory.
func spareNames(t *testing.T, s *Store) []string {
	t.Helper()
	entries, err := os.ReadDir(s.jobs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), sparePrefix) {
			names = append(names, e.Name())
		}
	}
	return names
}

// finishedJob stores a finished job with the given output and a started
// mark, and returns its record.
func finishedJob(t *testing.T, s *Store, output string) *Record {
	t.Helper()
	r := putRecord(t, s, StateRunning, time.Now())
	out, err := s.OpenOutput(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString(output)
	out.Close()
	if err := s.MarkStarted(r.ID); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	r.State, r.FinishedAt = StateSucceeded, &end
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSpares prunes a job and runs the next one in its emptied directory:
// the new job has its own record only, no output and no started mark, and
// its files are the pruned job's inodes; a Store opened later finds the
// spares left.
func TestSpares(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := finishedJob(t, s, "old job's secret\n")
	recordIno, err := os.Stat(filepath.Join(s.Dir(old.ID), recordFile))
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := s.Prune(0, 0, time.Now()); err != nil || len(removed) != 1 {
		t.Fatalf("Prune = %v, %v; want the finished job removed", removed, err)
	}
	if _, err := s.Get(old.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of the pruned job: err = %v, want ErrNotFound", err)
	}
	spares := spareNames(t, s)
	if len(spares) != 1 {
		t.Fatalf("spares %v, want the pruned job's directory", spares)
	}
	entries, _ := os.ReadDir(filepath.Join(s.jobs, spares[0]))
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(s.jobs, spares[0], e.Name()))
		switch {
		case e.Name() == recordFile && (len(data) != recordRoom || len(bytes.Trim(data, "\x00")) != 0):
			t.Errorf("spare's record file holds %q, want %d zeros", data, recordRoom)
		case e.Name() == outputFile && len(data) != 0:
			t.Errorf("spare's output log holds %q, want nothing", data)
		case e.Name() != recordFile && e.Name() != outputFile:
			t.Errorf("spare holds %s", e.Name())
		}
	}

	r := putRecord(t, s, StateRunning, time.Now())
	if got := spareNames(t, s); len(got) != 0 {
		t.Errorf("spares after a new job: %v, want it to have taken the one", got)
	}
	ri, err := os.Stat(filepath.Join(s.Dir(r.ID), recordFile))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(recordIno, ri) {
		t.Error("the new job's record file is a new inode, not the spare's")
	}
	if got, err := s.Get(r.ID); err != nil || got.ID != r.ID || got.State != StateRunning {
		t.Errorf("Get of the new job = %+v, %v", got, err)
	}
	if tail, err := s.Tail(r.ID, 100); err != nil || tail != "" {
		t.Errorf("new job's output = %q, %v; want none", tail, err)
	}
	if started, err := s.Started(r.ID); err != nil || started {
		t.Errorf("new job started = %v, %v; want false", started, err)
	}

	// Spares outlive the Store.
	finishedJob(t, s, "x")
	finishedJob(t, s, "y")
	s.Prune(0, 0, time.Now())
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.spares) != 2 {
		t.Fatalf("reopened store has spares %v, want 2", s2.spares)
	}
	putRecord(t, s2, StateRunning, time.Now())
	if got := spareNames(t, s2); len(got) != 1 {
		t.Errorf("spares after a job of the reopened store: %v, want 1", got)
	}
}

// TestSpareCrashUndone uses a spare whose emptying a crash of the host
// undid (its old record, output and started mark back): the new job sees
// none of them.
func TestSpareCrashUndone(t *testing.T) {
	s := openTestStore(t)
	old := finishedJob(t, s, "old output")
	s.Prune(0, 0, time.Now())
	spare := filepath.Join(s.jobs, spareNames(t, s)[0])
	// What the crash brought back.
	os.WriteFile(filepath.Join(spare, recordFile), []byte(`{"id":"`+old.ID+`","op":"rebase","state":"succeeded"}`+"\n"), 0o600)
	os.WriteFile(filepath.Join(spare, outputFile), []byte("old output"), 0o600)
	if err := os.Link(filepath.Join(s.dir, markFile), filepath.Join(spare, startedFile)); err != nil {
		t.Fatal(err)
	}
	r := putRecord(t, s, StateRunning, time.Now())
	data, err := os.ReadFile(filepath.Join(s.Dir(r.ID), recordFile))
	if err != nil || bytes.Contains(data, []byte(old.ID)) {
		t.Errorf("new job's record file = %q, %v; want its own record alone", data, err)
	}
	if tail, _ := s.Tail(r.ID, 100); tail != "" {
		t.Errorf("new job's output = %q, want none", tail)
	}
	if started, _ := s.Started(r.ID); started {
		t.Error("new job is marked started")
	}
}

// TestSparesBounded prunes more jobs than maxSpares: the rest are deleted.
func TestSparesBounded(t *testing.T) {
	s := openTestStore(t)
	for range maxSpares + 3 {
		finishedJob(t, s, "")
	}
	removed, err := s.Prune(0, 0, time.Now())
	if err != nil || len(removed) != maxSpares+3 {
		t.Fatalf("Prune removed %d, %v", len(removed), err)
	}
	entries, _ := os.ReadDir(s.jobs)
	if got := len(spareNames(t, s)); got != maxSpares || len(entries) != maxSpares {
		t.Errorf("jobs dir holds %d entries, %d of them spares; want %d spares alone", len(entries), got, maxSpares)
	}
}

// TestOutputReadAcrossPrune reads a job's output log through a file opened
// before Prune removed the job and its directory became another job's:
// the reader gets ErrNotFound, never the other job's bytes.
func TestOutputReadAcrossPrune(t *testing.T) {
	s := openTestStore(t)
	old := finishedJob(t, s, "old output\n")
	f, err := s.openJobFile(old.ID, outputFile, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := s.CopyOutput(&b, old.ID, f, make([]byte, 4)); err != nil || b.String() != "old output\n" {
		t.Fatalf("copy before the prune = %q, %v", b.String(), err)
	}
	s.Prune(0, 0, time.Now())
	r := putRecord(t, s, StateRunning, time.Now())
	out, err := s.OpenOutput(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString("new job's secret, longer than the old output\n")
	out.Close()
	fi, _ := f.Stat()
	if ni, err := os.Stat(s.OutputPath(r.ID)); err != nil || !os.SameFile(fi, ni) {
		t.Fatalf("the new job did not take the pruned job's output log (%v): the test would prove nothing", err)
	}
	b.Reset()
	n, err := s.CopyOutput(&b, old.ID, f, make([]byte, 4))
	if !errors.Is(err, ErrNotFound) || n != 0 || b.Len() != 0 {
		t.Errorf("copy after the prune = %q, %v; want nothing and ErrNotFound", b.String(), err)
	}
}

// TestPruneFollowsPuts prunes jobs that finished, or were made, after the
// Store's first Prune: later Prunes decide from what Puts told the Store.
func TestPruneFollowsPuts(t *testing.T) {
	s := openTestStore(t)
	now := time.Now()
	a := putRecord(t, s, StateRunning, now.Add(-time.Hour))
	if removed, err := s.Prune(0, 0, now); err != nil || len(removed) != 0 {
		t.Fatalf("Prune of a running job = %v, %v; want nothing removed", removed, err)
	}
	a.State, a.FinishedAt = StateFailed, &now
	if err := s.Put(a); err != nil {
		t.Fatal(err)
	}
	b := putRecord(t, s, StateSucceeded, now)
	if removed, err := s.Prune(1, 0, now); err != nil || len(removed) != 1 || removed[0] != a.ID {
		t.Errorf("Prune keeping 1 = %v, %v; want %s, the older", removed, err, a.ID)
	}
	if removed, err := s.Prune(-1, time.Minute, now.Add(time.Hour)); err != nil || len(removed) != 1 || removed[0] != b.ID {
		t.Errorf("Prune by age = %v, %v; want %s", removed, err, b.ID)
	}
	if recs, err := s.List(); err != nil || len(recs) != 0 {
		t.Errorf("List after the prunes = %v, %v; want none", recs, err)
	}
}

// TestSpareRecordRoom stores a job's versions in a spare's zeroed room,
// one of them cut short by a crash and longer than the next: Get returns
// the last whole version, and the file keeps its size.
func TestSpareRecordRoom(t *testing.T) {
	s := openTestStore(t)
	finishedJob(t, s, "")
	s.Prune(0, 0, time.Now())
	r := putRecord(t, s, StateRunning, time.Now())
	path := filepath.Join(s.Dir(r.ID), recordFile)
	appendTorn(t, s, r.ID, `{"id":"`+r.ID+`","op":"rebase","state":"failed","message":"`+strings.Repeat("x", 900))
	if got, err := s.Get(r.ID); err != nil || got.State != StateRunning {
		t.Errorf("Get after a torn version = %+v, %v; want the running record", got, err)
	}
	r.State = StateSucceeded
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(r.ID); err != nil || got.State != StateSucceeded {
		t.Errorf("Get after the next version = %+v, %v; want it", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != recordRoom {
		t.Errorf("record file: %v, %v; want %d bytes, the room's", fi, err, recordRoom)
	}
	r.Message = "a version longer than the room: " + strings.Repeat("y", recordRoom)
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(r.ID); err != nil || got.Message != r.Message {
		t.Errorf("Get of a version past the room: %v", err)
	}
}
