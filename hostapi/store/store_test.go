package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	for _, d := range []string{s.dir, s.jobs} {
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
	if err := os.Mkdir(filepath.Join(base, "jobslink"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "jobslink", "jobs")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "open"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(base, "open"), 0o777)
	if err := os.MkdirAll(filepath.Join(base, "markdir", markFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "markmode"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "markmode", markFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir  string
		want string
	}{
		{filepath.Join(base, "link"), "is a symlink"},
		{filepath.Join(base, "jobslink"), "jobs is a symlink"},
		{filepath.Join(base, "file"), "not a directory"},
		{filepath.Join(base, "open"), "writable by group or others"},
		{filepath.Join(base, "markdir"), "mark: is a directory"},
		{filepath.Join(base, "markmode"), "mark has mode -rw-r--r--, want 0600"},
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
	entries, _ := os.ReadDir(s.jobs)
	if len(entries) != 1 {
		t.Errorf("jobs dir holds %d entries, want 1 (no temp left)", len(entries))
	}
	entries, _ = os.ReadDir(s.Dir(r.ID))
	if len(entries) != 1 || entries[0].Name() != recordFile {
		t.Errorf("job dir holds %v, want only %s", entries, recordFile)
	}
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
	entries, _ := os.ReadDir(s.jobs)
	if len(entries) != 0 {
		t.Errorf("refused Puts left %d entries", len(entries))
	}
}

func TestGetErrors(t *testing.T) {
	s := openTestStore(t)
	for _, id := range []string{"../x", "a/b", "..", ""} {
		if _, err := s.Get(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Get(%q): err = %v, want ErrInvalidID", id, err)
		}
		if d := s.Dir(id); d != "" {
			t.Errorf("Dir(%q) = %q, want \"\"", id, d)
		}
	}
	if _, err := s.Get("20261202T142501Z-0123abcd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a missing job: err = %v, want ErrNotFound", err)
	}
	// A symlinked job directory is not followed.
	r := putRecord(t, s, StateRunning, time.Now())
	link := "20261202T142501Z-0000beef"
	if err := os.Symlink(s.Dir(r.ID), filepath.Join(s.jobs, link)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(link); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Get through a symlinked job dir: err = %v, want a refusal", err)
	}
}

// TestPutCrash simulates a crash in the middle of Put: a version of the
// record appended in part, and a temp directory of a first Put in jobs/.
func TestPutCrash(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	appendTorn(t, s, r.ID, "\n"+`{"id": "`+r.ID+`", "state": "succ`)
	newTmp := filepath.Join(s.jobs, ".new-20261202T142501Z-0123abcd-99")
	if err := os.Mkdir(newTmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(newTmp, recordFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(r.ID)
	if err != nil || got.State != StateRunning {
		t.Errorf("Get after a torn write = %+v, %v; want the old record", got, err)
	}
	recs, err := s.List()
	if err != nil || len(recs) != 1 || recs[0].ID != r.ID {
		t.Errorf("List after torn writes = %v, %v; want the one record", recs, err)
	}
	// Prune removes the temp directory once it is stale, not before.
	if _, err := s.Prune(-1, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(newTmp); err != nil {
		t.Errorf("a fresh temp dir was pruned: %v", err)
	}
	if _, err := s.Prune(-1, 0, time.Now().Add(2*staleTemp)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(newTmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale temp dir was kept: %v", err)
	}
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
	entries, _ := os.ReadDir(s.jobs)
	if len(entries) != 1 {
		t.Errorf("jobs dir holds %d entries, want 1", len(entries))
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
	if err := os.WriteFile(filepath.Join(s.Dir(bad.ID), recordFile), []byte("{not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A record under the wrong directory is corrupt too.
	data, _ := os.ReadFile(filepath.Join(s.Dir(old.ID), recordFile))
	if err := os.WriteFile(filepath.Join(s.Dir(other.ID), recordFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// Entries not of the id form are ignored.
	os.Mkdir(filepath.Join(s.jobs, "lost+found"), 0o700)

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
			entries, _ := os.ReadDir(s.jobs)
			spares := 0
			for _, e := range entries {
				switch {
				case strings.HasPrefix(e.Name(), sparePrefix):
					spares++
				case strings.HasPrefix(e.Name(), "."):
					t.Errorf("Prune left %s", e.Name())
				}
			}
			if spares != len(want) {
				t.Errorf("Prune left %d spares, want one per job removed, %d", spares, len(want))
			}
		})
	}
}

func TestPruneLeftovers(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	// A crash between the rename and the delete of a removal.
	gone := filepath.Join(s.jobs, ".rm-20261202T142501Z-0123abcd")
	if err := os.MkdirAll(filepath.Join(gone, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(0, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unfinished removal was kept: %v", err)
	}
	if _, err := s.Get(r.ID); err != nil {
		t.Errorf("the running job was pruned: %v", err)
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
	if s.OutputPath(r.ID) != filepath.Join(s.Dir(r.ID), "output.log") {
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

// TestMarksAreLinks checks that a job's mark is a name of the store's
// mark file, so that marking a job allocates no inode, that marking twice
// is no error, and that a mark is still made, as a file of its own, when
// there is no mark file to link.
func TestMarksAreLinks(t *testing.T) {
	s := openTestStore(t)
	mark, err := os.Stat(filepath.Join(s.dir, markFile))
	if err != nil {
		t.Fatal(err)
	}
	r := putRecord(t, s, StateRunning, time.Now())
	for range 2 {
		if err := s.MarkStarted(r.ID); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(s.jobPath(r.ID, startedFile)); err != nil || !os.SameFile(fi, mark) {
		t.Errorf("%s: %v; want a link to the store's mark file", startedFile, err)
	}
	if ok, err := s.Started(r.ID); !ok || err != nil {
		t.Errorf("started = %v, %v; want true", ok, err)
	}

	if err := os.Remove(filepath.Join(s.dir, markFile)); err != nil {
		t.Fatal(err)
	}
	other := putRecord(t, s, StateRunning, time.Now())
	if err := s.MarkStarted(other.ID); err != nil {
		t.Fatalf("mark with no mark file: %v", err)
	}
	if fi, err := os.Lstat(s.jobPath(other.ID, startedFile)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("mark with no mark file: %v, %v; want a 0600 file", fi, err)
	}
	if err := s.MarkStarted("../x"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("mark of a bad id: %v, want ErrInvalidID", err)
	}
}
