package scheduler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/unit"
)

// TestCallKeyed calls ops with idempotency keys: a repeated call gets the
// first call's job and starts nothing, before and after the job ended and
// after the daemon restarted; other args with the same key are refused;
// the same key of another uid, or of another op, is another job.
func TestCallKeyed(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), `
[[op]]
name = "both"
exec = ["/bin/sh", "-c", "echo ran"]
allow_uids = [0, 65534]
`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := d.CallKeyed(ctx, root, "echo", []string{"k", "4"}, "upgrade-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.CallKeyed(ctx, root, "echo", []string{"k", "4"}, "upgrade-1")
	if err != nil || again.ID != first.ID {
		t.Fatalf("repeated call while the job runs: %+v, %v; want job %s", again, err, first.ID)
	}
	done, err := d.Wait(ctx, first.ID)
	if err != nil || daemontest.ExitCode(done) != 4 || done.Key != "upgrade-1" {
		t.Fatalf("keyed job: %+v, %v; want exit code 4 and its key", done, err)
	}
	after, err := d.CallKeyed(ctx, root, "echo", []string{"k", "4"}, "upgrade-1")
	if err != nil || after.ID != first.ID || after.State != api.StateFailed {
		t.Errorf("repeated call after the job ended: %+v, %v; want its final record", after, err)
	}
	var e *api.Error
	if _, err := d.CallKeyed(ctx, root, "echo", []string{"other"}, "upgrade-1"); !errors.As(err, &e) || e.Code != api.CodeKeyConflict {
		t.Errorf("same key, other args: %v; want %s", err, api.CodeKeyConflict)
	}
	if _, err := d.CallKeyed(ctx, root, "echo", nil, "bad key"); !errors.As(err, &e) || e.Code != api.CodeBadRequest {
		t.Errorf("key with a space: %v; want %s", err, api.CodeBadRequest)
	}
	mine, err := d.CallKeyed(ctx, root, "both", nil, "upgrade-1")
	if err != nil || mine.ID == first.ID {
		t.Fatalf("same key, other op: %+v, %v; want a job of its own", mine, err)
	}
	theirs, err := d.CallKeyed(ctx, core.Caller{UID: 65534, PID: root.PID}, "both", nil, "upgrade-1")
	if err != nil || theirs.ID == mine.ID {
		t.Fatalf("same key, other uid: %+v, %v; want a job of its own", theirs, err)
	}
	for _, id := range []string{mine.ID, theirs.ID} {
		if r, err := d.Wait(ctx, id); err != nil || r.State != api.StateSucceeded {
			t.Fatalf("job %s: %+v, %v", id, r, err)
		}
	}
	recs, err := d.store.List()
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v; want 3: one per job", len(recs), err)
	}
	d.Close()
	d2 := New(d.cfg, d.store, systemdtest.Conn(t))
	if err := d2.Recover(); err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	restarted, err := d2.CallKeyed(ctx, root, "echo", []string{"k", "4"}, "upgrade-1")
	if err != nil || restarted.ID != first.ID || daemontest.ExitCode(restarted) != 4 {
		t.Errorf("repeated call to a restarted daemon: %+v, %v; want job %s", restarted, err, first.ID)
	}
	if recs, _ := d2.store.List(); len(recs) != 3 {
		t.Errorf("%d records after the restarted daemon's answer, want 3", len(recs))
	}
}

// TestKeyedCallAfterJobNeverRan calls an op whose unit's start job fails
// on a dependency, so that its command never runs, then calls it again
// with the same key once the dependency is fixed: the second call gets a
// new job, which runs, and a third call gets that job. A keyed job that
// ran and failed keeps its key (TestCallKeyed).
func TestKeyedCallAfterJobNeverRan(t *testing.T) {
	unitDir, dir := systemdtest.RuntimeUnitDir(t), t.TempDir()
	dep := unit.RandomName("unitrun-test-dep-", "service")
	main := unit.RandomName("unitrun-test-keyed-", "service")
	systemdtest.WriteUnit(t, filepath.Join(unitDir, dep), "[Service]\nType=oneshot\nExecStart=/bin/test -e "+dir+"/ready\n")
	systemdtest.WriteUnit(t, filepath.Join(unitDir, main), "[Unit]\nRequires="+dep+"\nAfter="+dep+"\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo ran >> "+dir+"/runs'\n")
	mgr := systemdtest.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := mgr.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.ResetFailedUnit(context.Background(), dep) })
	d, _ := newTestScheduler(t, mgr, "\n[[op]]\nname = \"keyed\"\nunit = \""+main+"\"\n")
	call := func() *api.Record {
		t.Helper()
		rec, err := d.CallKeyed(ctx, root, "keyed", nil, "once")
		if err != nil {
			t.Fatal(err)
		}
		if rec, err = d.Wait(ctx, rec.ID); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	first := call()
	if first.State != api.StateFailed || first.JobResult != "dependency" {
		t.Fatalf("first call: %+v; want failed with job result dependency", first)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	second := call()
	if second.ID == first.ID || second.State != api.StateSucceeded || second.Key != "once" {
		t.Fatalf("second call with the key: %+v; want a new job that succeeded, with the key", second)
	}
	if third := call(); third.ID != second.ID {
		t.Errorf("third call with the key: job %s, want %s", third.ID, second.ID)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "runs")); string(b) != "ran\n" {
		t.Errorf("the unit ran %q times (%v), want once", b, err)
	}
	if old, err := d.store.Get(first.ID); err != nil || old.Key != "" || old.State != api.StateFailed {
		t.Errorf("the first job's record: %+v, %v; want it kept, failed, without the key", old, err)
	}
}
