package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// A fixtureJob is a job of testdata/v1: what a store of version 1 held
// for it, written by the store's code of then.
type fixtureJob struct {
	rec     Record
	output  string // its output log; "" for none
	started bool   // marked started
}

// fixtureJobs are the jobs of testdata/v1, oldest first. The last two
// were stored first, in new directories; then four older finished jobs
// were pruned into spares, of which the first three jobs took theirs (a
// record file with zeroed room after its lines) and one is left. The
// record of the fourth was torn by a crash after its last version.
func fixtureJobs() []fixtureJob {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { t := t0.Add(time.Duration(s) * time.Second); return &t }
	code := func(c int) *int { return &c }
	return []fixtureJob{
		{rec: Record{ID: "20261204T120000Z-0000000a", Op: "rebase", Args: []string{"img", "--force"}, State: "succeeded",
			Unit: "unitrun-op-rebase-20261204t120000z-0000000a.service", InvocationID: "0123456789abcdef0123456789abcdef",
			JobResult: "done", Result: "success", ExitCode: code(0), CallerUID: 1000, CallerPID: 4242,
			CreatedAt: t0, StartedAt: at(1), FinishedAt: at(9), Attempts: 1, BootID: "fedcba9876543210fedcba9876543210",
			Key: "deploy-7", OutputTail: "line 2\n"},
			output: "line 1\nline 2\n", started: true},
		{rec: Record{ID: "20261204T120010Z-0000000b", Op: "sleep", Args: []string{"60"}, State: "running",
			Unit: "unitrun-op-sleep-20261204t120010z-0000000b.service", CallerUID: 0, CallerPID: 1,
			CreatedAt: *at(10), StartedAt: at(10), BootID: "fedcba9876543210fedcba9876543210"},
			output: "still going\n", started: true},
		{rec: Record{ID: "20261204T120020Z-0000000c", Op: "sleep", Args: []string{"5"}, State: "queued",
			CallerUID: 1000, CallerPID: 4343, CreatedAt: *at(20)}},
		{rec: Record{ID: "20261204T120030Z-0000000d", Op: "exit", Args: []string{"3"}, State: "failed",
			Unit: "unitrun-op-exit-20261204t120030z-0000000d.service", Result: "exit-code", ExitCode: code(3),
			CallerUID: 1000, CallerPID: 4444, CreatedAt: *at(30), StartedAt: at(31), FinishedAt: at(32), Attempts: 3,
			BootID: "fedcba9876543210fedcba9876543210", Message: "exit status 3\nsecond line, ü",
			OutputTail: "no\n"}, output: "no\nno\nno\n", started: false},
		{rec: Record{ID: "20261204T120040Z-0000000e", Op: "kill", State: "canceled",
			Unit: "unitrun-op-kill-20261204t120040z-0000000e.service", Result: "signal", Signal: "TERM", RebootRequired: true,
			CallerUID: 1000, CallerPID: 4545, CreatedAt: *at(40), StartedAt: at(40), FinishedAt: at(41),
			BootID: "fedcba9876543210fedcba9876543210", Message: "canceled by a caller: killed by SIGTERM"},
			output: "x\n", started: true},
	}
}

// copyFixture copies testdata/<name>/state to a new directory with the
// modes the store gives its files, which git does not keep, and returns
// its path.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name, "state"))); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(path, 0o700)
		}
		return os.Chmod(path, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenVersion1 opens a state directory written by the store of
// version 1, before the store had a version file (testdata/v1): Open
// migrates it to version 2, and the store then reads every record, output
// log and started mark as version 1 wrote them, lists the jobs newest
// first, stores new jobs and prunes. Output a unit appends to its log of
// version 1, opened before the migration, is in the job's log after.
func TestOpenVersion1(t *testing.T) {
	dir := copyFixture(t, "v1")
	if _, err := os.Stat(filepath.Join(dir, versionFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the fixture has a version file (%v): it must be as version 1 left it", err)
	}
	unit, err := os.OpenFile(filepath.Join(dir, v1Jobs, "20261204T120010Z-0000000b", v1Output), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unit.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := os.ReadFile(filepath.Join(dir, versionFile)); err != nil || string(v) != "3\n" {
		t.Errorf("version file after Open: %q, %v; want \"3\\n\"", v, err)
	}
	for _, name := range []string{v1Jobs, v1Mark} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s of version 1 left after the migration: %v", name, err)
		}
	}
	checkFixture(t, s)
	if _, err := unit.WriteString("and on\n"); err != nil {
		t.Fatal(err)
	}
	if tail, err := s.Tail("20261204T120010Z-0000000b", 100); err != nil || tail != "still going\nand on\n" {
		t.Errorf("output the unit wrote after the migration: %q, %v", tail, err)
	}
	r := putRecord(t, s, StateRunning, time.Now())
	if got, err := s.Get(r.ID); err != nil || got.State != StateRunning {
		t.Errorf("Get(new job) = %+v, %v", got, err)
	}
	removed, err := s.Prune(1, 0, time.Now())
	if err != nil || len(removed) != 2 {
		t.Errorf("Prune(keep 1) removed %v, %v; want the two older of the three finished jobs", removed, err)
	}
}

// checkFixture checks that s holds the jobs of testdata/v1 as version 1
// wrote them: records, started marks and output logs, and lists them
// newest first.
func checkFixture(t *testing.T, s *Store) {
	t.Helper()
	jobs := fixtureJobs()
	for _, j := range jobs {
		got, err := s.Get(j.rec.ID)
		if err != nil {
			t.Errorf("Get(%s): %v", j.rec.ID, err)
			continue
		}
		if !reflect.DeepEqual(got, &j.rec) {
			t.Errorf("Get(%s) = %+v\nwant %+v", j.rec.ID, got, &j.rec)
		}
		if started, err := s.Started(j.rec.ID); err != nil || started != j.started {
			t.Errorf("Started(%s) = %v, %v; want %v", j.rec.ID, started, err, j.started)
		}
		output := ""
		if f, err := s.ReadOutput(j.rec.ID); err == nil {
			var b strings.Builder
			_, err = s.CopyOutput(&b, j.rec.ID, f, make([]byte, 5))
			f.Close()
			if err != nil {
				t.Errorf("CopyOutput(%s): %v", j.rec.ID, err)
			}
			output = b.String()
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadOutput(%s): %v", j.rec.ID, err)
		}
		if output != j.output {
			t.Errorf("output of %s = %q, want %q", j.rec.ID, output, j.output)
		}
		if tail, err := s.Tail(j.rec.ID, 7); err != nil || tail != j.output[max(len(j.output)-7, 0):] {
			t.Errorf("Tail(%s, 7) = %q, %v", j.rec.ID, tail, err)
		}
	}
	recs, err := s.List()
	if err != nil || len(recs) != len(jobs) {
		t.Fatalf("List: %d records, %v; want %d", len(recs), err, len(jobs))
	}
	for i, r := range recs {
		if want := jobs[len(jobs)-1-i].rec.ID; r.ID != want {
			t.Errorf("List[%d] = %s, want %s", i, r.ID, want)
		}
	}
}

// TestMigrateCrash stops the migration of testdata/v1 at each of its
// steps, as a crash would, and opens the store again: Open then finds
// version 1 whole (which it migrates) or version 2 whole, and every job.
func TestMigrateCrash(t *testing.T) {
	steps := []string{"migrate: log written", "migrate: outputs linked", "migrate: built", "migrate: committed"}
	for _, at := range steps {
		t.Run(at, func(t *testing.T) {
			dir := copyFixture(t, "v1")
			openCrashing(t, dir, at)
			committed := at == "migrate: committed"
			if _, err := os.Stat(filepath.Join(dir, v1Jobs)); err != nil {
				t.Fatalf("version 1's jobs after the crash: %v; want them whole", err)
			}
			if got := isVersion(dir, schemaVersion); got != committed {
				t.Errorf("version file says %d after a crash at %q: %v, want %v", schemaVersion, at, got, committed)
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkFixture(t, s)
		})
	}
}

// TestOpenNewerVersion refuses a store of a version newer than schemaVersion,
// and a version file that holds no version, saying so.
func TestOpenNewerVersion(t *testing.T) {
	for content, want := range map[string]string{
		"4\n":   "is of version 4, newer than this unitrun reads (3)",
		"x\n":   "not a store version",
		"0\n":   "not a store version",
		"":      "not a store version",
		"2\n\n": "not a store version",
	} {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, versionFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open of a store whose version file holds %q: %v, want an error containing %q", content, err, want)
		}
	}
}

// TestOpenVersion1Full opens a state dir of version 1 on a file system
// too full to migrate it: Open fails, saying that version 1 is left
// whole, and it is; once there is space, Open migrates it.
func TestOpenVersion1Full(t *testing.T) {
	mnt := systemdtest.MountTmpfs(t, "256k")
	dir := filepath.Join(mnt, "state")
	if err := os.CopyFS(dir, os.DirFS(copyFixture(t, "v1"))); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the file system: %v", err)
	}

	_, err = Open(dir)
	if err == nil || !strings.Contains(err.Error(), "too full to migrate") || !strings.Contains(err.Error(), "version 1 is left whole") {
		t.Fatalf("Open of a version 1 store on a full file system: %v, want it refused, saying version 1 is left whole", err)
	}
	if _, err := os.Stat(filepath.Join(dir, versionFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("version file on a full file system: %v, want none", err)
	}
	jobs, err := readV1(filepath.Join(dir, v1Jobs))
	if err != nil || len(jobs) != len(fixtureJobs()) {
		t.Fatalf("version 1 after the failed migration: %d jobs, %v; want the fixture's %d", len(jobs), err, len(fixtureJobs()))
	}
	for i, j := range fixtureJobs() {
		if !reflect.DeepEqual(jobs[i].rec, &j.rec) || jobs[i].started != j.started {
			t.Errorf("version 1's job %s after the failed migration: %+v, want %+v", j.rec.ID, jobs[i], j)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkFixture(t, s)
}

// TestPutFull stores a new job on a file system too full for it: Put
// refuses it with ENOSPC, though its record would fit in the log's last
// block, and stores it once there is space. A version of a known job that
// the full file system cuts short is overwritten by the next.
func TestPutFull(t *testing.T) {
	mnt := systemdtest.MountTmpfs(t, "1m")
	s, err := Open(filepath.Join(mnt, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	r := putRecord(t, s, StateRunning, time.Now().UTC().Round(0))
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 1<<20), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the file system: %v", err)
	}
	if err := s.Put(&Record{ID: s.NewID(), Op: "rebase", State: StateQueued}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Put of a new job on a full file system: %v, want ENOSPC", err)
	}
	// A version of the known job too long for what is left: the write is
	// cut short, the version before it stays, and the next Put, once
	// there is space, goes over what it wrote.
	long := *r
	long.State, long.OutputTail = StateSucceeded, strings.Repeat("x", 64<<10)
	if err := s.Put(&long); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Put of a long version on a full file system: %v, want ENOSPC", err)
	}
	if got, err := s.Get(r.ID); err != nil || got.State != StateRunning {
		t.Errorf("Get of the job stored before: %+v, %v", got, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	r.State = StateFailed
	if err := s.Put(r); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if got, err := s.Get(r.ID); err != nil || got.State != StateFailed {
		t.Errorf("Get after the next Put, reopened: %+v, %v; want it failed", got, err)
	}
	putRecord(t, s, StateQueued, time.Now())
}

// openCrashing opens the store in dir with a crash at the step at (see
// crashAt), and checks that Open stopped there.
func openCrashing(t *testing.T, dir, at string) {
	t.Helper()
	crash := errors.New("crash")
	crashAt = func(step string) error {
		if step == at {
			return crash
		}
		return nil
	}
	_, err := Open(dir)
	crashAt = nil
	if !errors.Is(err, crash) {
		t.Fatalf("Open with a crash at %q: %v", at, err)
	}
}
