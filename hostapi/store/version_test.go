package store

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
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
// version 1, before the store had a version file (testdata/v1), and
// reads every record, output log and started mark as that store wrote
// them; the store then says it is of version 1, lists the jobs newest
// first, and stores new jobs, taking the spare left, and prunes.
func TestOpenVersion1(t *testing.T) {
	dir := copyFixture(t, "v1")
	if _, err := os.Stat(filepath.Join(dir, versionFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the fixture has a version file (%v): it must be as version 1 left it", err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := os.ReadFile(filepath.Join(dir, versionFile)); err != nil || string(v) != "1\n" {
		t.Errorf("version file after Open: %q, %v; want \"1\\n\"", v, err)
	}
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

	if n := len(spareNames(t, s)); n != 1 {
		t.Fatalf("%d spares, want the fixture's one", n)
	}
	r := putRecord(t, s, StateRunning, time.Now())
	if n := len(spareNames(t, s)); n != 0 {
		t.Errorf("a new job left %d spares, want it to take the fixture's", n)
	}
	if got, err := s.Get(r.ID); err != nil || got.State != StateRunning {
		t.Errorf("Get(new job) = %+v, %v", got, err)
	}
	removed, err := s.Prune(1, 0, time.Now())
	if err != nil || len(removed) != 2 {
		t.Errorf("Prune(keep 1) removed %v, %v; want the two older of the three finished jobs", removed, err)
	}
}

// TestOpenNewerVersion refuses a store of a version newer than schemaVersion,
// and a version file that holds no version, saying so.
func TestOpenNewerVersion(t *testing.T) {
	for content, want := range map[string]string{
		"2\n":   "is of version 2, newer than this unitrun reads (1)",
		"x\n":   "not a store version",
		"0\n":   "not a store version",
		"":      "not a store version",
		"1\n\n": "not a store version",
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
// too full for the version file: the store opens all the same and reads
// its records, and writes the file once there is space.
func TestOpenVersion1Full(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "unitrun-test-store", mnt).CombinedOutput(); err != nil {
		t.Skipf("this test needs to mount a tmpfs (root): mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	dir := filepath.Join(mnt, "state")
	if err := os.CopyFS(dir, os.DirFS(copyFixture(t, "v1"))); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, markFile), 0o600)
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

	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open of a version 1 store on a full file system: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, versionFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("version file on a full file system: %v, want none", err)
	}
	for _, j := range fixtureJobs() {
		if got, err := s.Get(j.rec.ID); err != nil || !reflect.DeepEqual(got, &j.rec) {
			t.Errorf("Get(%s) = %+v, %v\nwant %+v", j.rec.ID, got, err, &j.rec)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if v, err := os.ReadFile(filepath.Join(dir, versionFile)); err != nil || string(v) != "1\n" {
		t.Errorf("version file once there is space: %q, %v; want \"1\\n\"", v, err)
	}
}
