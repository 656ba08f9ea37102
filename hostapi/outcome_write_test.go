package hostapi

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

func TestWriteOutcome(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := s.NewID()
	if err := s.Put(&Record{ID: id, Op: "x", State: StateRunning}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SERVICE_RESULT": "signal", "EXIT_CODE": "killed", "EXIT_STATUS": "KILL"}
	if err := WriteOutcome(s.OutcomePath(id), func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	o, ok, err := s.ReadOutcome(id)
	if want := (Outcome{"signal", "killed", "KILL"}); !ok || err != nil || o != want {
		t.Errorf("read back %+v, %v, %v: want %+v", o, ok, err, want)
	}
	if err := WriteOutcome("relative/outcome", func(string) string { return "" }); err == nil {
		t.Error("relative path accepted")
	}
	env["EXIT_STATUS"] = "1\nEXTRA=1"
	if err := WriteOutcome(s.OutcomePath(id), func(k string) string { return env[k] }); err == nil {
		t.Error("value with a newline accepted")
	}
}

// TestOutcomeWriterSystemd runs a job whose outcome file is written by the
// unitrun binary ("unitrun daemon write-outcome") as its ExecStopPost=.
func TestOutcomeWriterSystemd(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	d.OutcomeWriter = []string{systemdtest.Binary(t), "daemon", "write-outcome"}
	r, err := d.Call(context.Background(), root, "echo", []string{"x", "3"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err = d.Wait(ctx, r.ID); err != nil || exitCode(r) != 3 {
		t.Fatalf("record %+v, %v: want exit code 3", r, err)
	}
	o, ok, err := d.store.ReadOutcome(r.ID)
	if want := (Outcome{"exit-code", "exited", "3"}); !ok || err != nil || o != want {
		t.Errorf("outcome %+v, %v, %v: want %+v", o, ok, err, want)
	}
}

// TestOutcomeWriterSkipsRecorded runs a job that succeeds: the daemon
// records it, marks it recorded, then releases its unit, whose stop runs
// the outcome writer, which then writes nothing.
func TestOutcomeWriterSkipsRecorded(t *testing.T) {
	mgr := systemdtest.Conn(t)
	d, _ := newTestDaemon(t, mgr, "")
	d.OutcomeWriter = []string{systemdtest.Binary(t), "daemon", "write-outcome"}
	r, err := d.Call(context.Background(), root, "echo", []string{"x", "0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err = d.Wait(ctx, r.ID); err != nil || r.State != StateSucceeded {
		t.Fatalf("record %+v, %v: want succeeded", r, err)
	}
	d.Close() // waits for the release, and so for the writer
	if _, err := os.Lstat(d.store.jobPath(r.ID, recordedFile)); err != nil {
		t.Errorf("recorded mark: %v", err)
	}
	if _, ok, err := d.store.ReadOutcome(r.ID); ok || err != nil {
		t.Errorf("outcome file written (%v, %v): want none, the job was recorded", ok, err)
	}
	if st, err := mgr.Properties(ctx, r.Unit, manager.UnitIface); err == nil && st["LoadState"].Value() != "not-found" {
		t.Errorf("unit %s left %v/%v", r.Unit, st["LoadState"].Value(), st["ActiveState"].Value())
	}
}
