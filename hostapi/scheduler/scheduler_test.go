package scheduler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// newTestScheduler returns a daemon with the test ops (and extra) on mgr, its
// state in a temp dir, and that dir (see daemontest.Open).
func newTestScheduler(t *testing.T, mgr *manager.Conn, extra string) (*Scheduler, string) {
	t.Helper()
	return daemontest.Open(t, mgr, extra, OpenStore, New)
}

// serveTest serves d's HTTP and SEQPACKET front ends (see daemontest.Serve).
func serveTest(t *testing.T, d *Scheduler) (apiSock, argv string) {
	t.Helper()
	return daemontest.Serve(t, d, front.NewServer(d, d.Log))
}

// errorCode is daemontest.ErrorCode.
func errorCode(t *testing.T, body string) string {
	t.Helper()
	return daemontest.ErrorCode(t, body)
}

// seqpacketRoundTrip is daemontest.SeqpacketRoundTrip.
func seqpacketRoundTrip(t *testing.T, sock string, pkt []byte) (bool, string, string) {
	t.Helper()
	return daemontest.SeqpacketRoundTrip(t, sock, pkt)
}

var root = core.Caller{UID: 0, PID: int32(os.Getpid())}

// call calls the op as root and waits for the job's final record.
func call(t *testing.T, d *Scheduler, op string, args ...string) *api.Record {
	t.Helper()
	r, err := d.Call(context.Background(), root, op, args)
	if err != nil {
		t.Fatalf("call %s %q: %v", op, args, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err = d.Wait(ctx, r.ID)
	if err != nil {
		t.Fatalf("wait %s: %v", op, err)
	}
	return r
}

func TestDaemonSuccess(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	r := call(t, d, "echo", "a$b;c")
	if r.State != api.StateSucceeded || daemontest.ExitCode(r) != 0 || r.Result != "success" || r.JobResult != "done" {
		t.Fatalf("record %+v: want succeeded with exit code 0", r)
	}
	if want := "out:a$b;c:uid:0\nerr\n"; r.OutputTail != want {
		t.Errorf("output tail %q, want %q", r.OutputTail, want)
	}
	stored, err := d.store.Get(r.ID)
	if err != nil || stored.State != api.StateSucceeded || stored.FinishedAt == nil || stored.StartedAt == nil {
		t.Errorf("stored record %+v, %v: want the final record", stored, err)
	}
}

func TestDaemonFailureExitCode(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	r := call(t, d, "echo", "x", "7")
	if r.State != api.StateFailed || daemontest.ExitCode(r) != 7 || r.Result != "exit-code" {
		t.Fatalf("record %+v: want failed with exit code 7", r)
	}
}

func TestDaemonTimeout(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	r := call(t, d, "sleep", "30")
	if r.State != api.StateFailed || r.Result != "timeout" {
		t.Fatalf("record %+v: want failed with result timeout", r)
	}
}

func TestDaemonCancel(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	r, err := d.Call(context.Background(), root, "sleep", []string{"30"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err = d.Cancel(ctx, r.ID)
	if err != nil || r.State != api.StateCanceled || r.FinishedAt == nil {
		t.Fatalf("cancel: %+v, %v: want a canceled record", r, err)
	}
}

func TestDaemonRefusals(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	tests := []struct {
		op     string
		caller core.Caller
		args   []string
		code   string
	}{
		{"nosuch", root, nil, api.CodeUnknownOp},
		{"sleep", root, nil, api.CodeBadArgs},
		{"sleep", root, []string{"1; rm -rf /"}, api.CodeBadArgs},
		{"echo", root, []string{"1", "2", "3"}, api.CodeBadArgs},
		{"echo", core.Caller{UID: 1000, GIDs: []uint32{1000}}, nil, api.CodeUnauthorized},
		{"nobody", root, nil, api.CodeUnauthorized},
	}
	for _, tt := range tests {
		_, err := d.Call(context.Background(), tt.caller, tt.op, tt.args)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != tt.code {
			t.Errorf("call %s %q as uid %d: %v, want code %s", tt.op, tt.args, tt.caller.UID, err, tt.code)
		}
	}
	if recs, _ := d.List(); len(recs) != 0 {
		t.Errorf("refused calls left %d records", len(recs))
	}
}

func TestDaemonExclusive(t *testing.T) {
	d, dir := newTestScheduler(t, systemdtest.Conn(t), "")
	var wg sync.WaitGroup
	ids := make([]string, 4)
	args := []string{"a", "a", "b", "b"}
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := d.Call(context.Background(), root, "excl", []string{args[i]})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = r.ID
		}()
	}
	wg.Wait()
	if ids[0] != ids[1] || ids[2] != ids[3] || ids[0] == ids[2] {
		t.Fatalf("job ids %q: want calls with the same args joined, others apart", ids)
	}
	for _, id := range []string{ids[0], ids[2]} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := d.Wait(ctx, id)
		cancel()
		if err != nil || r.State != api.StateSucceeded {
			t.Fatalf("job %s: %+v, %v", id, r, err)
		}
	}
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if got := strings.Fields(string(runs)); len(got) != 2 || got[0] == got[1] {
		t.Errorf("runs %q: want one run of each args", got)
	}

	first, err := d.Call(context.Background(), root, "refuse", []string{"30"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Call(context.Background(), root, "refuse", []string{"31"})
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeBusy {
		t.Errorf("second call with other args: %v, want code %s", err, api.CodeBusy)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := d.Cancel(ctx, first.ID); err != nil || r.State != api.StateCanceled {
		t.Errorf("cancel: %+v, %v", r, err)
	}
}

func TestDaemonRebootMarker(t *testing.T) {
	d, dir := newTestScheduler(t, systemdtest.Conn(t), "")
	r := call(t, d, "reboot")
	if r.State != api.StateSucceeded || !r.RebootRequired {
		t.Fatalf("record %+v: want succeeded with reboot_required", r)
	}
	if _, err := os.Lstat(filepath.Join(dir, "reboot-needed")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reboot marker not removed: %v", err)
	}
	if r := call(t, d, "echo"); r.RebootRequired {
		t.Errorf("op without marker reports reboot_required")
	}
}

func TestDaemonRequestFileUnit(t *testing.T) {
	conn := systemdtest.Conn(t)
	dir := t.TempDir()
	req := filepath.Join(dir, "request")
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), "unitrun-test-pivot.service"), `[Unit]
Description=unitrun test pivot
ConditionPathExists=`+req+`
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'cp `+req+` `+dir+`/seen; test "$(head -n1 `+req+`)" = good'
`)
	if err := conn.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.ResetFailedUnit(context.Background(), "unitrun-test-pivot.service") })
	d, _ := newTestScheduler(t, conn, `
[[op]]
name = "pivot"
unit = "unitrun-test-pivot.service"
request_file = "`+req+`"
args = { max = 2 }
`)
	r := call(t, d, "pivot", "good", "second")
	if r.State != api.StateSucceeded || r.Unit != "unitrun-test-pivot.service" {
		t.Fatalf("record %+v: want succeeded", r)
	}
	if seen, _ := os.ReadFile(filepath.Join(dir, "seen")); string(seen) != "good\nsecond\n" {
		t.Errorf("request file held %q", seen)
	}
	if r := call(t, d, "pivot", "bad"); r.State != api.StateFailed || daemontest.ExitCode(r) != 1 {
		t.Errorf("record %+v: want failed with exit code 1", r)
	}
}

// TestDaemonRecover stops one daemon mid-job, without recording and with
// its manager connection gone, as a SIGKILL would, and checks that a new
// daemon on the same store records the real outcome, both of a job whose
// unit still runs and of one whose unit someone else stopped meanwhile
// (its pin kept it loaded, with its outcome), and that the second daemon
// leaves neither unit nor pin behind.
func TestDaemonRecover(t *testing.T) {
	conn := systemdtest.Dial(t)
	d1, _ := newTestScheduler(t, conn, "")
	var jobs []*api.Record
	for _, op := range []string{"slowfail", "linger"} {
		r, err := d1.Call(context.Background(), root, op, nil)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, r)
	}
	running, stopped := jobs[0], jobs[1]
	for _, r := range jobs {
		systemdtest.WaitActiveState(t, conn, r.Unit, "active")
	}
	d1.Close()
	conn.Close()
	// Someone stops the second job's unit while no daemon runs.
	other := systemdtest.Conn(t)
	if _, err := other.StopUnit(context.Background(), stopped.Unit, "replace"); err != nil {
		t.Fatal(err)
	}
	systemdtest.WaitActiveState(t, other, stopped.Unit, "inactive")
	d2 := New(d1.cfg, d1.store, other)
	if err := d2.Recover(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := d2.Wait(ctx, running.ID)
	if err != nil || r.State != api.StateFailed || daemontest.ExitCode(r) != 3 || r.OutputTail != "started\n" {
		t.Errorf("re-attached job: %+v, %v: want failed with exit code 3 and its output", r, err)
	}
	r, err = d2.Wait(ctx, stopped.ID)
	if err != nil || r.State != api.StateFailed || r.Signal != "TERM" {
		t.Errorf("job stopped while no daemon ran: %+v, %v: want failed by signal TERM", r, err)
	}
	d2.Close()
	for _, r := range jobs {
		for _, name := range []string{r.Unit, job.PinName(r.Unit)} {
			if !systemdtest.Unloaded(t, other, name) {
				t.Errorf("%s still loaded after the recovery", name)
			}
		}
	}
}

// TestRecoverReleasesFinishedUnits checks that a unit whose job's outcome
// was recorded, by a daemon that died before releasing it, is collected by
// the next daemon, and that a unit op's unit is not touched.
func TestRecoverReleasesFinishedUnits(t *testing.T) {
	conn := systemdtest.Conn(t)
	d1, _ := newTestScheduler(t, conn, "")
	store := d1.store
	d1.Close()
	// start runs a oneshot to its end, as a finished job's unit is: one
	// stopped while its start job runs would fail and stay loaded.
	start := func(name string) {
		t.Helper()
		props := []unit.Property{
			{Name: "Type", Value: dbus.MakeVariant("oneshot")},
			{Name: "RemainAfterExit", Value: dbus.MakeVariant(true)},
			unit.Exec("ExecStart", "/bin/true", []string{"/bin/true"}),
		}
		w := conn.WatchProps(name)
		defer w.Close()
		job, err := conn.StartTransientUnit(context.Background(), name, "fail", props)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.StopUnit(context.Background(), name, "replace") })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == manager.EventJobRemoved && ev.Job == job {
				if ev.Result != "done" {
					t.Fatalf("start of %s: %s", name, ev.Result)
				}
				return
			}
		}
	}
	finished := &api.Record{ID: store.NewID(), Op: "true", State: api.StateSucceeded, CreatedAt: time.Now()}
	finished.Unit = "unitrun-test-" + strings.ToLower(finished.ID) + ".service"
	host := &api.Record{ID: store.NewID(), Op: "pivot", State: api.StateSucceeded, Unit: "unitrun-test-host-unit.service", CreatedAt: time.Now()}
	for _, r := range []*api.Record{finished, host} {
		start(r.Unit)
		if err := store.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	d2 := New(d1.cfg, store, conn)
	if err := d2.Recover(); err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if !systemdtest.Unloaded(t, conn, finished.Unit) {
		t.Errorf("unit of the finished job %s still loaded, want it gone", finished.Unit)
	}
	if props, err := conn.Properties(context.Background(), host.Unit, manager.UnitIface); err != nil || props["ActiveState"].Value() != "active" {
		t.Errorf("unit op's unit: %v, %v; want left active", props["ActiveState"], err)
	}
}

// TestDaemonLiveJobsPerUID checks max_live_jobs_per_uid: a caller at its
// bound is refused, naming the limit, while another uid still gets a job
// under max_live_jobs.
func TestDaemonLiveJobsPerUID(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), `
[[op]]
name = "shared"
exec = ["/bin/sleep", "30"]
allow_uids = [0, 65534]

[limits]
max_live_jobs = 4
max_live_jobs_per_uid = 2
`)
	ctx := context.Background()
	other := core.Caller{UID: 65534, PID: int32(os.Getpid())}
	var ids []string
	for range 2 {
		r, err := d.Call(ctx, root, "shared", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	_, err := d.Call(ctx, root, "shared", nil)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeBusy || !strings.Contains(e.Message, "max_live_jobs_per_uid") {
		t.Errorf("third job of uid 0: %v, want %s naming max_live_jobs_per_uid", err, api.CodeBusy)
	}
	r, err := d.Call(ctx, other, "shared", nil)
	if err != nil {
		t.Errorf("first job of uid 65534: %v, want it accepted", err)
	} else {
		ids = append(ids, r.ID)
	}
	for _, id := range ids {
		if _, err := d.Cancel(ctx, id); err != nil {
			t.Error(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		d.Wait(wctx, id)
		cancel()
	}
}
