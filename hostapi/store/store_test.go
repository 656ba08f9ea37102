package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// putRecord stores a record of the given state, created at the given time.
func putRecord(t *testing.T, s *Store, state State, created time.Time) *Record {
	t.Helper()
	r := &Record{ID: s.NewID(), Op: "rebase", Args: []string{"img"}, State: state, CreatedAt: created}
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOpenStore(t *testing.T) {
	base := t.TempDir()
	s, err := Open(filepath.Join(base, "a", "state"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{s.dir, s.output} {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a 0700 directory", d, fi.Mode(), err)
		}
	}
	// Reopening is fine.
	if _, err := Open(filepath.Join(base, "a", "state")); err != nil {
		t.Errorf("reopen: %v", err)
	}

	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "outlink"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "outlink", outputDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "open"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(base, "open"), 0o777)
	if err := os.MkdirAll(filepath.Join(base, "logdir", logFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "loglink"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "file"), filepath.Join(base, "loglink", logFile)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want string
	}{
		{filepath.Join(base, "link"), "is a symlink"},
		{filepath.Join(base, "outlink"), "output is a symlink"},
		{filepath.Join(base, "file"), "not a directory"},
		{filepath.Join(base, "open"), "writable by group or others (mode 0777)"},
		{filepath.Join(base, "logdir"), "records.log: is a directory"},
		{filepath.Join(base, "loglink"), "records.log: too many levels of symbolic links"},
	}
	for _, tt := range tests {
		_, err := Open(tt.dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%s): err = %v, want one containing %q", tt.dir, err, tt.want)
		}
	}
}

func TestNewID(t *testing.T) {
	s := openTestStore(t)
	seen := make(map[string]bool)
	before := time.Now().UTC().Truncate(time.Second)
	for range 1000 {
		id := s.NewID()
		if err := checkID(id); err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("NewID returned %s twice", id)
		}
		seen[id] = true
		ts, err := time.Parse(idLayout, id[:len(idLayout)])
		if err != nil || ts.Before(before) || ts.After(time.Now()) {
			t.Fatalf("id %s: time %v, %v; want between %v and now", id, ts, err, before)
		}
	}
}

func TestPutGet(t *testing.T) {
	s := openTestStore(t)
	code := 3
	start := time.Date(2026, 12, 2, 14, 25, 1, 0, time.UTC)
	r := &Record{
		ID: s.NewID(), Op: "rebase", Args: []string{"quay.io/x:1"}, State: StateFailed,
		Unit: "unitrun-op-rebase-1.service", InvocationID: "0123", JobResult: "done", Result: "exit-code",
		ExitCode: &code, CallerUID: 1000, CallerPID: 42, CreatedAt: start, StartedAt: &start, FinishedAt: &start,
		Attempts: 2, Message: "exited with status 3", OutputTail: "error: no space\n",
	}
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("Get = %+v, want %+v", got, r)
	}
	r.State = StateSucceeded
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(r.ID); err != nil || got.State != StateSucceeded {
		t.Errorf("after replace: %+v, %v", got, err)
	}
	if n := len(logLines(t, s)); n != 2 {
		t.Errorf("the log holds %d lines, want one per Put, 2", n)
	}
	entries, _ := os.ReadDir(s.dir)
	if len(entries) != 3 {
		t.Errorf("state dir holds %v, want the version file, the log and the output dir alone", entries)
	}
}

// logLines returns the lines of the store's log.
func logLines(t *testing.T, s *Store) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestPutRefuses(t *testing.T) {
	s := openTestStore(t)
	tests := []struct {
		r    Record
		want string
	}{
		{Record{ID: "../x", Op: "a", State: StateQueued}, "invalid job id"},
		{Record{ID: "a/b", Op: "a", State: StateQueued}, "invalid job id"},
		{Record{ID: "", Op: "a", State: StateQueued}, "invalid job id"},
		{Record{ID: "20261202T142501Z-0123ABCD", Op: "a", State: StateQueued}, "invalid job id"},
		{Record{ID: "20261202T142501Z-0123abcd/..", Op: "a", State: StateQueued}, "invalid job id"},
		{Record{ID: "20261202T142501Z-0123abcd", State: StateQueued}, "record has no op"},
		{Record{ID: "20261202T142501Z-0123abcd", Op: "a", State: "done"}, `record state "done" is not one of`},
	}
	for _, tt := range tests {
		err := s.Put(&tt.r)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Put(%+v): err = %v, want one containing %q", tt.r, err, tt.want)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.dir, logFile)); err != nil || fi.Size() != 0 {
		t.Errorf("refused Puts wrote to the log: %v, %v", fi.Size(), err)
	}
}

func TestGetErrors(t *testing.T) {
	s := openTestStore(t)
	for _, id := range []string{"../x", "a/b", "..", ""} {
		if _, err := s.Get(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Get(%q): err = %v, want ErrInvalidID", id, err)
		}
		if p := s.OutputPath(id); p != "" {
			t.Errorf("OutputPath(%q) = %q, want \"\"", id, p)
		}
	}
	if _, err := s.Get("20261202T142501Z-0123abcd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a missing job: err = %v, want ErrNotFound", err)
	}
}

// TestPutCrash simulates a crash in the middle of Put: a version of the
// record written in part at the log's end. Get, List and a Store opened
// after pass over it, and the next Put goes over it.
func TestPutCrash(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	appendTorn(t, s, `{"rec": {"id": "`+r.ID+`", "state": "succ`)
	for i := range 2 {
		if i == 1 {
			s = reopen(t, s)
		}
		got, err := s.Get(r.ID)
		if err != nil || got.State != StateRunning {
			t.Errorf("Get after a torn write = %+v, %v; want the old record", got, err)
		}
		recs, err := s.List()
		if err != nil || len(recs) != 1 || recs[0].ID != r.ID {
			t.Errorf("List after torn writes = %v, %v; want the one record", recs, err)
		}
	}
}

// reopen closes s and opens its state directory again.
func reopen(t *testing.T, s *Store) *Store {
	t.Helper()
	s.Close()
	s, err := Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPutConcurrent(t *testing.T) {
	s := openTestStore(t)
	id := s.NewID()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Put(&Record{ID: id, Op: fmt.Sprint("op", i), State: StateQueued})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if r, err := s.Get(id); err != nil || !strings.HasPrefix(r.Op, "op") {
		t.Errorf("Get = %+v, %v", r, err)
	}
	if r, err := reopen(t, s).Get(id); err != nil || !strings.HasPrefix(r.Op, "op") {
		t.Errorf("Get after reopening = %+v, %v", r, err)
	}
}

func TestListCorrupt(t *testing.T) {
	s := openTestStore(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := putRecord(t, s, StateSucceeded, t0)
	mid := putRecord(t, s, StateRunning, t0.Add(time.Hour))
	bad := putRecord(t, s, StateFailed, t0.Add(2*time.Hour))
	other := putRecord(t, s, StateFailed, t0.Add(3*time.Hour))
	newest := putRecord(t, s, StateQueued, t0.Add(4*time.Hour))
	// The disk changes the bytes of bad's line; other's holds the id of
	// another job.
	corruptLine(t, s, bad.ID, func(line []byte) { copy(line, "{not json") })
	corruptLine(t, s, other.ID, func(line []byte) { copy(line[bytes.Index(line, []byte(other.ID)):], old.ID) })

	recs, err := s.List()
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	if want := []string{newest.ID, mid.ID, old.ID}; !reflect.DeepEqual(ids, want) {
		t.Errorf("List = %v, want %v (newest first, corrupt left out)", ids, want)
	}
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatalf("List err = %v, want *RecordErrors", err)
	}
	msg := err.Error()
	for _, id := range []string{bad.ID, other.ID} {
		if !strings.Contains(msg, "job "+id+": corrupt record") {
			t.Errorf("List err %q does not report %s", msg, id)
		}
	}
	if _, err := s.Get(bad.ID); !errors.As(err, &re) || re.ID != bad.ID {
		t.Errorf("Get of a corrupt record: err = %v, want a *RecordError", err)
	}
}

// corruptLine changes in place the bytes of the job's current line in the
// log, as a disk may.
func corruptLine(t *testing.T, s *Store, id string, change func(line []byte)) {
	t.Helper()
	e := s.recs[id]
	line := make([]byte, e.n)
	if _, err := s.log.ReadAt(line, e.off); err != nil {
		t.Fatal(err)
	}
	change(line)
	if _, err := s.log.WriteAt(line, e.off); err != nil {
		t.Fatal(err)
	}
}

func TestPrune(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name   string
		keep   int
		maxAge time.Duration
		want   []int // indexes of the records removed
	}{
		{"by count", 2, 0, []int{3, 5}},
		{"by age", -1, 3 * day, []int{5}},
		{"both", 1, 3 * day, []int{2, 3, 5}},
		{"none", -1, 0, nil},
		{"keep zero", 0, 0, []int{0, 2, 3, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTestStore(t)
			// Newest first: 0 done, 1 running, 2 done, 3 canceled, 4 queued
			// (ancient, never removed), 5 failed and finished 10 days ago.
			finished := now.Add(-10 * day)
			recs := []*Record{
				putRecord(t, s, StateSucceeded, now.Add(-1*day)),
				putRecord(t, s, StateRunning, now.Add(-2*day)),
				putRecord(t, s, StateFailed, now.Add(-2*day-time.Hour)),
				putRecord(t, s, StateCanceled, now.Add(-2*day-2*time.Hour)),
				putRecord(t, s, StateQueued, now.Add(-400*day)),
				putRecord(t, s, StateFailed, now.Add(-3*day)),
			}
			recs[5].FinishedAt = &finished
			if err := s.Put(recs[5]); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				f, err := s.OpenOutput(r.ID)
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			removed, err := s.Prune(tt.keep, tt.maxAge, now)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, i := range tt.want {
				want = append(want, recs[i].ID)
			}
			if !reflect.DeepEqual(removed, want) {
				t.Errorf("removed %v, want %v", removed, want)
			}
			for i, r := range recs {
				_, err := s.Get(r.ID)
				gone := errors.Is(err, ErrNotFound)
				wantGone := false
				for _, j := range tt.want {
					wantGone = wantGone || i == j
				}
				if gone != wantGone {
					t.Errorf("record %d (%s): gone = %v, want %v (err %v)", i, r.State, gone, wantGone, err)
				}
			}
			for i, r := range recs {
				_, err := os.Stat(s.OutputPath(r.ID))
				if gone := errors.Is(err, os.ErrNotExist); gone != slices.Contains(tt.want, i) {
					t.Errorf("output log of record %d: %v; want it gone only when the job is", i, err)
				}
			}
			// The removals are in the log.
			s = reopen(t, s)
			for _, id := range want {
				if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
					t.Errorf("after reopening, Get(%s) of a pruned job: %v, want ErrNotFound", id, err)
				}
			}
		})
	}
}

// TestPruneLeftovers simulates a crash of Prune between its removals and
// the deletion of the output logs, and a host crash that took a staged
// record away after its unit wrote output: Open deletes output logs of
// jobs without a record, and keeps the others.
func TestPruneLeftovers(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	for _, id := range []string{r.ID, "20261202T142501Z-0123abcd"} {
		if err := os.WriteFile(filepath.Join(s.output, id+".log"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s = reopen(t, s)
	if _, err := os.Stat(filepath.Join(s.output, "20261202T142501Z-0123abcd.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the output log of no job was kept: %v", err)
	}
	if tail, err := s.Tail(r.ID, 10); err != nil || tail != "x" {
		t.Errorf("the running job's output: %q, %v", tail, err)
	}
}

func TestOutput(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	if got, err := s.Tail(r.ID, 10); err != nil || got != "" {
		t.Errorf("Tail before any output = %q, %v", got, err)
	}
	f, err := s.OpenOutput(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("output mode %v, want 0600", fi.Mode().Perm())
	}
	// A big log, written in pieces, as a unit appends it.
	var want strings.Builder
	for i := range 100000 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	// A second open appends.
	f, err = s.OpenOutput(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("end\n")
	f.Close()
	want.WriteString("end\n")
	all := want.String()
	for _, n := range []int{0, 1, 4, 100, 65536, len(all), len(all) + 1000} {
		got, err := s.Tail(r.ID, n)
		if err != nil {
			t.Fatal(err)
		}
		wantTail := all[len(all)-min(n, len(all)):]
		if got != wantTail {
			t.Errorf("Tail(%d): got %d bytes ending %q, want %d bytes", n, len(got), got[max(len(got)-10, 0):], len(wantTail))
		}
	}
	if s.OutputPath(r.ID) != filepath.Join(s.dir, "output", r.ID+".log") {
		t.Errorf("OutputPath = %s", s.OutputPath(r.ID))
	}
	if _, err := s.Tail("20261202T142501Z-0123abcd", 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("Tail of a missing job: err = %v, want ErrNotFound", err)
	}
	if _, err := s.OpenOutput("20261202T142501Z-0123abcd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("OpenOutput of a missing job: err = %v, want ErrNotFound", err)
	}
	if _, err := s.OpenOutput("../x"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("OpenOutput(../x): err = %v, want ErrInvalidID", err)
	}
}

func TestOutputSymlink(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, s.OutputPath(r.ID)); err != nil {
		t.Fatal(err)
	}
	if f, err := s.OpenOutput(r.ID); err == nil {
		f.Close()
		t.Error("OpenOutput followed a symlink")
	}
	if got, err := s.Tail(r.ID, 10); err == nil {
		t.Errorf("Tail followed a symlink: %q", got)
	}
}

// TestMarkStarted marks a job started, twice, which is no error; the
// mark is in the log for a Store opened after, and needs a job.
func TestMarkStarted(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	other := putRecord(t, s, StateRunning, time.Now())
	for range 2 {
		if err := s.MarkStarted(r.ID); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if i == 1 {
			s = reopen(t, s)
		}
		if ok, err := s.Started(r.ID); !ok || err != nil {
			t.Errorf("started = %v, %v; want true", ok, err)
		}
		if ok, err := s.Started(other.ID); ok || err != nil {
			t.Errorf("started of a job not marked = %v, %v; want false", ok, err)
		}
	}
	if n := len(logLines(t, s)); n != 3 {
		t.Errorf("the log holds %d lines, want 3: two records and one mark", n)
	}
	if err := s.MarkStarted("../x"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("mark of a bad id: %v, want ErrInvalidID", err)
	}
	if err := s.MarkStarted("20261202T142501Z-0123abcd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("mark of no job: %v, want ErrNotFound", err)
	}
}

// Once a sync of the log fails, the Store makes nothing durable again: a
// record staged before it is not committed by a later sync that succeeds
// (the kernel may have dropped its pages), and a new job whose Put failed
// is not there to read or to recover. The log is swapped for /dev/null,
// whose sync fails.
func TestSyncFailureSticks(t *testing.T) {
	s := openTestStore(t)
	newRecord := func() *Record {
		return &Record{ID: s.NewID(), Op: "op", State: StateQueued, CreatedAt: time.Now().UTC()}
	}
	synced := newRecord()
	if err := s.Put(synced); err != nil {
		t.Fatal(err)
	}
	staged := newRecord()
	if err := s.Stage(staged); err != nil {
		t.Fatal(err)
	}
	null, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	log, end := s.log, s.end
	s.log = null
	s.mu.Unlock()
	refused := newRecord()
	if err := s.Put(refused); err == nil {
		t.Fatal("Put succeeded though the log's sync failed")
	}
	s.mu.Lock()
	s.log, s.end = log, end // what went to /dev/null is not in the log
	s.mu.Unlock()
	null.Close()
	if _, err := s.Get(refused.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of the job whose Put failed: %v; want not found", err)
	}
	if err := s.Commit(staged.ID); err == nil {
		t.Error("Commit of a record staged before the failed sync succeeded")
	}
	if err := s.Put(newRecord()); err == nil {
		t.Error("Put after a failed sync succeeded")
	}
	if err := s.Commit(synced.ID); err != nil {
		t.Errorf("Commit of a record synced before the failure: %v", err)
	}
	s.Close()
	s, err = Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(refused.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("after a restart, Get of the job whose Put failed: %v; want not found", err)
	}
	if err := s.Put(newRecord()); err != nil {
		t.Errorf("Put in the store opened again: %v", err)
	}
}
