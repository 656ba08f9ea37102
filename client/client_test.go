package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/hostapi/scheduler"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

const testConfig = `
[[op]]
name = "echo"
exec = ["/bin/sh", "-c", "echo \"$@\"; exit \"${EXIT:-0}\"", "sh"]
args = { max = 3 }

[[op]]
name = "slow"
exec = ["/bin/sh", "-c", "echo started; sleep \"$1\"; echo ended; exit \"$2\"", "sh"]
args = { min = 2, max = 2, pattern = "^[0-9.]+$" }
`

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestClient(t *testing.T) {
	d := systemdtest.NewDaemon(t, testConfig)
	d.Start(t)
	c := client.New(d.API)
	ctx := timeout(t)
	ops, err := c.Ops(ctx)
	if err != nil || len(ops) != 2 || ops[0].Name != "echo" || !ops[0].Allowed {
		t.Fatalf("ops: %+v, %v", ops, err)
	}
	id, err := c.Call(ctx, "echo", []string{"a b", "$c"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := c.Wait(ctx, id)
	if err != nil || rec.State != api.StateSucceeded || *rec.ExitCode != 0 {
		t.Fatalf("wait: %+v, %v", rec, err)
	}
	var logs strings.Builder
	if err := c.Logs(ctx, id, false, &logs); err != nil || logs.String() != "a b $c\n" {
		t.Errorf("logs: %q, %v", logs.String(), err)
	}
	if got, err := c.Job(ctx, id); err != nil || got.ID != id || got.State != api.StateSucceeded {
		t.Errorf("job: %+v, %v", got, err)
	}
	slow, err := c.Call(ctx, "slow", []string{"30", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := c.Cancel(ctx, slow); err != nil || rec.State != api.StateCanceled {
		t.Errorf("cancel: %+v, %v", rec, err)
	}
	if recs, err := c.Jobs(ctx); err != nil || len(recs) != 2 || recs[0].ID != slow {
		t.Errorf("jobs: %d records, %v: want 2, newest first", len(recs), err)
	}
	_, err = c.Call(ctx, "nosuch", nil)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeUnknownOp {
		t.Errorf("unknown op: %v", err)
	}
	_, err = c.Wait(ctx, "20261202T142501Z-0123abcd")
	if !errors.As(err, &e) || e.Code != api.CodeNotFound {
		t.Errorf("wait for no job: %v", err)
	}
}

// TestCallKeyedWhileDaemonDown calls with a key while no daemon runs: the
// call is made again until a daemon answers, and a repeated call gets the
// same job, whose op ran once.
func TestCallKeyedWhileDaemonDown(t *testing.T) {
	d := systemdtest.NewDaemon(t, testConfig)
	c := client.New(d.API)
	ctx := timeout(t)
	got := make(chan string, 1)
	go func() {
		id, err := c.CallKeyed(ctx, "echo", []string{"once"}, "agent-7:pivot")
		if err != nil {
			t.Error(err)
		}
		got <- id
	}()
	time.Sleep(300 * time.Millisecond) // a few refused connections
	d.Start(t)
	id := <-got
	again, err := c.CallKeyed(ctx, "echo", []string{"once"}, "agent-7:pivot")
	if err != nil || again != id {
		t.Fatalf("repeated call: %q, %v; want job %s", again, err, id)
	}
	rec, err := c.Wait(ctx, id)
	if err != nil || rec.State != api.StateSucceeded || rec.OutputTail != "once\n" {
		t.Fatalf("keyed job: %+v, %v", rec, err)
	}
	if recs, err := c.Jobs(ctx); err != nil || len(recs) != 1 {
		t.Errorf("jobs: %d records, %v; want 1", len(recs), err)
	}
	_, err = c.CallKeyed(ctx, "echo", []string{"twice"}, "agent-7:pivot")
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeKeyConflict {
		t.Errorf("same key, other args: %v; want %s", err, api.CodeKeyConflict)
	}
}

// TestDaemonKilledMidJob SIGKILLs the daemon, then stops it with SIGTERM,
// while a client waits for a job and while another job ends with no daemon
// running; a restarted daemon records both real outcomes and the waiting
// client gets its own.
func TestDaemonKilledMidJob(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { testDaemonStoppedMidJob(t, sig) })
	}
}

func testDaemonStoppedMidJob(t *testing.T, sig syscall.Signal) {
	d := systemdtest.NewDaemon(t, testConfig)
	d.Start(t)
	daemon := d.Cmd
	c := client.New(d.API)
	ctx := timeout(t)
	long, err := c.Call(ctx, "slow", []string{"2", "5"})
	if err != nil {
		t.Fatal(err)
	}
	short, err := c.Call(ctx, "slow", []string{"0.2", "6"})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan *api.Record, 1)
	go func() {
		rec, err := c.Wait(ctx, long)
		if err != nil {
			t.Error(err)
		}
		waited <- rec
	}()
	rec, err := c.Job(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	systemdtest.WaitActiveState(t, systemdtest.Conn(t), rec.Unit, "active")
	daemon.Process.Signal(sig)
	if err := daemon.Wait(); sig == syscall.SIGTERM && err != nil {
		t.Errorf("daemon after SIGTERM: %v, want exit 0", err)
	}
	time.Sleep(500 * time.Millisecond) // the short job ends meanwhile
	d.Start(t)
	got := <-waited
	if got == nil || got.State != api.StateFailed || got.ExitCode == nil || *got.ExitCode != 5 || got.OutputTail != "started\nended\n" {
		t.Errorf("waiting client got %+v: want exit code 5 and the whole output", got)
	}
	rec, err = c.Wait(ctx, short)
	if err != nil || rec.ExitCode == nil || *rec.ExitCode != 6 {
		t.Errorf("job that ended while no daemon ran: %+v, %v: want exit code 6", rec, err)
	}
}

// TestSocketActivation starts the daemon from a socket unit of the test
// manager, with sockets named as the shipped unitrun.socket names them.
func TestSocketActivation(t *testing.T) {
	d := systemdtest.NewDaemon(t, testConfig)
	conn := systemdtest.Conn(t)
	units := systemdtest.RuntimeUnitDir(t)
	systemdtest.WriteUnit(t, filepath.Join(units, "unitrun-test-api.socket"), `[Socket]
ListenStream=`+d.API+`
FileDescriptorName=api
SocketMode=0600
`)
	systemdtest.WriteUnit(t, filepath.Join(units, "unitrun-test-api-argv.socket"), `[Socket]
ListenSequentialPacket=`+d.Argv+`
FileDescriptorName=argv
SocketMode=0600
Service=unitrun-test-api.service
`)
	args := d.Args() // socket activation gives the sockets
	systemdtest.WriteUnit(t, filepath.Join(units, "unitrun-test-api.service"), `[Service]
Type=notify
ExecStart=`+systemdtest.Binary(t)+" "+strings.Join(args, " ")+`
Environment=`+manager.EnvManager+"="+os.Getenv(manager.EnvManager)+`
StandardError=file:`+filepath.Join(d.Dir, "daemon.log")+`
`)
	ctx := timeout(t)
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"unitrun-test-api.socket", "unitrun-test-api-argv.socket"} {
		if _, err := job.Unit(conn, u).Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, u := range []string{"unitrun-test-api.socket", "unitrun-test-api-argv.socket", "unitrun-test-api.service"} {
			conn.StopUnit(context.Background(), u, "replace")
		}
		for _, u := range []string{"unitrun-test-api.socket", "unitrun-test-api-argv.socket", "unitrun-test-api.service"} {
			waitGone(t, conn, u)
			conn.ResetFailedUnit(context.Background(), u)
		}
	})
	c := client.New(d.API)
	id, err := c.Call(ctx, "echo", []string{"activated"})
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(d.Dir, "daemon.log"))
		t.Fatalf("%v; the daemon logged:\n%s", err, log)
	}
	if rec, err := c.Wait(ctx, id); err != nil || rec.State != api.StateSucceeded || rec.OutputTail != "activated\n" {
		t.Errorf("call through the activated daemon: %+v, %v", rec, err)
	}
	props, err := conn.Properties(ctx, "unitrun-test-api.service", manager.UnitIface)
	if err != nil || props["ActiveState"].Value() != "active" {
		t.Errorf("daemon unit: %v, %v: want active (READY=1 sent)", props["ActiveState"], err)
	}
}

// waitGone waits until the unit is stopped and unloaded or inactive.
func waitGone(t *testing.T, conn *manager.Conn, name string) {
	for range 500 {
		props, err := conn.Properties(context.Background(), name, manager.UnitIface)
		if err != nil || props["ActiveState"].Value() == "inactive" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A followed log survives a daemon killed mid-stream: the client resumes
// where it stopped, and every byte arrives once.
func TestLogsFollowResumesAcrossRestart(t *testing.T) {
	d := systemdtest.NewDaemon(t, testConfig)
	d.Start(t)
	c := client.New(d.API)
	ctx := timeout(t)
	id, err := c.Call(ctx, "slow", []string{"1.5", "0"})
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- c.Logs(ctx, id, true, &out) }()
	for !strings.Contains(out.String(), "started") {
		time.Sleep(10 * time.Millisecond)
	}
	d.Cmd.Process.Kill()
	d.Cmd.Wait()
	d.Start(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "started\nended\n" {
		t.Errorf("followed log %q, want each line once", got)
	}
}

// TestJobsPages lists a daemon that keeps 230 records, more than a page
// holds: Jobs follows the pages and returns each record once, newest
// first, as "unitrun op jobs" prints them.
func TestJobsPages(t *testing.T) {
	d := systemdtest.NewDaemon(t, testConfig)
	s, err := scheduler.OpenStore(filepath.Join(d.Dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	for i := range 230 {
		r := &api.Record{ID: s.NewID(), Op: "echo", State: api.StateSucceeded, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	d.Start(t)
	recs, err := client.New(d.API).Jobs(timeout(t))
	if err != nil || len(recs) != 230 {
		t.Fatalf("Jobs: %d records, %v: want 230", len(recs), err)
	}
	seen := make(map[string]bool)
	for i, r := range recs {
		if seen[r.ID] || i > 0 && !r.CreatedAt.Before(recs[i-1].CreatedAt) {
			t.Fatalf("record %d (%s): listed twice or out of order", i, r.ID)
		}
		seen[r.ID] = true
	}
}
