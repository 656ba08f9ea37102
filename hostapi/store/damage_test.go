package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// damageLine replaces the first byte of the line at off in the log with
// '#', as a disk may change a byte.
func damageLine(t *testing.T, s *Store, off int64) {
	t.Helper()
	if _, err := s.log.WriteAt([]byte("#"), off); err != nil {
		t.Fatal(err)
	}
}

// TestLogTornTail tears the log's last write in the ways a crash or a full
// disk leaves it: a final line without its newline, and a final line whose
// checksum does not match (its start never written). Open takes the log,
// every record before the tail reads back, and the next Put goes over the
// tail and reads back after another Open.
func TestLogTornTail(t *testing.T) {
	for _, tail := range []func(line []byte) []byte{
		func(line []byte) []byte { return line[:len(line)/2] },
		func(line []byte) []byte { return append([]byte("\x00\x00\x00\x00"), line[4:]...) },
	} {
		s := openTestStore(t)
		kept := putRecord(t, s, StateSucceeded, time.Now())
		r := putRecord(t, s, StateRunning, time.Now())
		r.State = StateSucceeded
		line, err := encodeLine(&logLine{Rec: r})
		if err != nil {
			t.Fatal(err)
		}
		torn := tail(line)
		appendTorn(t, s, string(torn))
		s = reopen(t, s)
		for _, want := range []*Record{kept, {ID: r.ID, State: StateRunning}} {
			if got, err := s.Get(want.ID); err != nil || got.State != want.State {
				t.Errorf("torn tail %q: Get(%s) = %+v, %v; want %s", torn, want.ID, got, err, want.State)
			}
		}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
		if got, err := reopen(t, s).Get(r.ID); err != nil || got.State != StateSucceeded {
			t.Errorf("torn tail %q: the Put after it read back as %+v, %v", torn, got, err)
		}
	}
}

// TestLogDamageRefused damages a line in the middle of the log: a job's
// final record, followed by intact lines. Open refuses the store, naming
// the log and the damaged line's byte offset, so that nothing the damage
// may have hidden is run; a line whose JSON decodes but whose checksum
// does not (an id changed into another) is damage too.
func TestLogDamageRefused(t *testing.T) {
	for _, damage := range []func(t *testing.T, s *Store, e entry){
		func(t *testing.T, s *Store, e entry) { damageLine(t, s, e.off) },
		func(t *testing.T, s *Store, e entry) {
			line := make([]byte, e.n)
			s.log.ReadAt(line, e.off)
			i := strings.Index(string(line), `"succeeded"`)
			copy(line[i:], `"succeedeD"`)
			s.log.WriteAt(line, e.off)
		},
	} {
		s := openTestStore(t)
		r := putRecord(t, s, StateSucceeded, time.Now())
		e := s.recs[r.ID]
		putRecord(t, s, StateQueued, time.Now())
		damage(t, s, e)
		s.Close()
		_, err := Open(s.dir)
		var de *DamageError
		want := fmt.Sprintf("%s: damaged: the line at byte offset %d ", filepath.Join(s.dir, logFile), e.off)
		if !errors.As(err, &de) || de.Offset != e.off || !strings.Contains(err.Error(), want) {
			t.Errorf("Open of a log damaged in the middle: %v; want a *DamageError saying %q", err, want)
		}
	}
}

// TestRepair damages, in the middle of the log, the final record and the
// started mark of a succeeded job, and the line of another job that has
// intact lines after the damage. Repair keeps every intact record, records
// the succeeded job (whose intact record says running) as failed, outcome
// unknown, leaves the jobs whose current records are intact and after the
// damage alone, and rewrites the log so that Open takes it.
func TestRepair(t *testing.T) {
	s := openTestStore(t)
	done := putRecord(t, s, StateRunning, time.Now())
	if err := s.MarkStarted(done.ID); err != nil {
		t.Fatal(err)
	}
	marked := s.end - int64(len(mustLine(t, &logLine{Started: done.ID})))
	done.State = StateSucceeded
	if err := s.Put(done); err != nil {
		t.Fatal(err)
	}
	final := s.recs[done.ID].off
	finished := putRecord(t, s, StateFailed, time.Now())
	queued := putRecord(t, s, StateQueued, time.Now())
	damageLine(t, s, marked)
	damageLine(t, s, final)
	s.Close()

	if _, err := Open(s.dir); err == nil {
		t.Fatal("Open took the damaged log")
	}
	s, repaired, err := Repair(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(repaired, []string{done.ID}) {
		t.Errorf("Repair recorded %v as unknown; want only %s", repaired, done.ID)
	}
	r, err := s.Get(done.ID)
	if err != nil || r.State != StateFailed || !strings.Contains(r.Message, "outcome unknown") || r.FinishedAt == nil {
		t.Errorf("the damaged job after Repair: %+v, %v; want failed, outcome unknown", r, err)
	}
	for _, want := range []*Record{finished, queued} {
		if got, err := s.Get(want.ID); err != nil || got.State != want.State || got.Message != "" {
			t.Errorf("an intact job after Repair: %+v, %v; want it as it was", got, err)
		}
	}
	s = reopen(t, s)
	if r, err := s.Get(done.ID); err != nil || !strings.Contains(r.Message, "outcome unknown") {
		t.Errorf("the damaged job after Repair and Open: %+v, %v", r, err)
	}
	data, _ := os.ReadFile(filepath.Join(s.dir, logFile))
	if strings.Contains(string(data), "#") {
		t.Errorf("the repaired log still holds the damaged lines:\n%s", data)
	}
}

// mustLine is encodeLine, failing the test on an error.
func mustLine(t *testing.T, ln *logLine) []byte {
	t.Helper()
	line, err := encodeLine(ln)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TestOpenVersion2 opens a store of version 2, whose log lines have no
// checksums, with a torn last line: Open migrates it, every record and
// started mark reads back, the log's lines have their checksums and the
// version file says 3. A crash at each step of the migration leaves a
// store that the next Open migrates or takes.
func TestOpenVersion2(t *testing.T) {
	rec := &Record{ID: "20261204T120000Z-0000000a", Op: "rebase", Args: []string{"a b"}, State: StateSucceeded, CreatedAt: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}
	run := &Record{ID: "20261204T120001Z-0000000b", Op: "rebase", State: StateRunning, CreatedAt: time.Date(2026, 12, 4, 12, 0, 1, 0, time.UTC)}
	v2 := ""
	for _, ln := range []logLine{{Rec: run}, {Started: run.ID}, {Rec: rec}} {
		line := mustLine(t, &ln)
		v2 += string(line[lineHead:])
	}
	v2 += `{"rec": {"id": "20261204T120001Z-0000000b", "state": "succ`
	for _, at := range []string{"", "migrate v2: written", "migrate v2: committed"} {
		dir := filepath.Join(t.TempDir(), "state")
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		os.WriteFile(filepath.Join(dir, versionFile), []byte("2\n"), 0o600)
		os.WriteFile(filepath.Join(dir, logFile), []byte(v2), 0o600)
		if at != "" {
			openCrashing(t, dir, at)
		}
		s, err = Open(dir)
		if err != nil {
			t.Fatalf("crash at %q: %v", at, err)
		}
		for _, want := range []*Record{rec, run} {
			if got, err := s.Get(want.ID); err != nil || got.State != want.State || !slices.Equal(got.Args, want.Args) {
				t.Errorf("crash at %q: Get(%s) = %+v, %v; want %+v", at, want.ID, got, err, want)
			}
		}
		if ok, _ := s.Started(run.ID); !ok {
			t.Errorf("crash at %q: the started mark was lost", at)
		}
		for _, line := range logLines(t, s) {
			if _, err := decodeLine([]byte(line)); err != nil {
				t.Errorf("crash at %q: line %q of the migrated log: %v", at, line, err)
			}
		}
		if !isVersion(dir, schemaVersion) {
			t.Errorf("crash at %q: the version file does not say %d", at, schemaVersion)
		}
		s.Close()
	}
}
