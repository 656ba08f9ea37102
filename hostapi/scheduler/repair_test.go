package scheduler

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/store"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestRepairNeverRerunsDamagedJob runs a job whose side effect is a line in
// a file, then damages, in the middle of records.log, its final record
// and its started mark (the first byte of each made '#'), as a disk may;
// the log then holds the job as running, never started, which a daemon
// used to run again. The store refuses to open, naming the log and the
// byte offset of the first damaged line; repaired, it records the job as
// failed, outcome unknown, keeps the intact job after the damage as it
// was, and a daemon that recovers from it never runs the job again.
func TestRepairNeverRerunsDamagedJob(t *testing.T) {
	d1, dir := newTestScheduler(t, systemdtest.Conn(t), `
[[op]]
name = "once"
exec = ['/bin/sh', '-c', 'echo ran >>"@DIR@/runs"']
`)
	done := call(t, d1, "once")
	after := call(t, d1, "echo", "after")
	if done.State != api.StateSucceeded || after.State != api.StateSucceeded {
		t.Fatalf("jobs before the damage: %+v, %+v", done, after)
	}
	d1.Close()
	d1.store.disk().Close()

	logPath := filepath.Join(d1.store.dir, "records.log")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	first := int64(-1)
	var off int64
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.Contains(line, []byte(`"started":"`+done.ID+`"`)) || bytes.Contains(line, []byte(done.ID)) && bytes.Contains(line, []byte(`"succeeded"`)) {
			data[off] = '#'
			if first < 0 {
				first = off
			}
		}
		off += int64(len(line))
	}
	if err := os.WriteFile(logPath, data, 0o600); err != nil {
		t.Fatal(err)
	}

	_, err = OpenStore(d1.store.dir)
	var de *store.DamageError
	if !errors.As(err, &de) || de.Offset != first || !strings.Contains(err.Error(), logPath+": damaged: the line at byte offset") {
		t.Fatalf("OpenStore of the damaged log: %v; want it refused, naming %s and offset %d", err, logPath, first)
	}
	s, repaired, err := RepairStore(d1.store.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(repaired, []string{done.ID}) {
		t.Errorf("repaired %v; want %s alone", repaired, done.ID)
	}
	d2 := New(d1.cfg, s, systemdtest.Conn(t))
	if err := d2.Recover(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := d2.Wait(ctx, done.ID); err != nil || r.State != api.StateFailed || !strings.Contains(r.Message, "outcome unknown") {
		t.Errorf("the damaged job after the repair: %+v, %v; want failed, outcome unknown", r, err)
	}
	if r, err := d2.Wait(ctx, after.ID); err != nil || r.State != api.StateSucceeded || r.OutputTail != after.OutputTail {
		t.Errorf("the intact job after the repair: %+v, %v; want it as it was", r, err)
	}
	d2.Close()
	if runs, err := os.ReadFile(filepath.Join(dir, "runs")); string(runs) != "ran\n" {
		t.Errorf("the job's side effect: %q, %v; want it once", runs, err)
	}
}
