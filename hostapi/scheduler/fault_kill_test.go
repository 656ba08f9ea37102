package scheduler_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// killConfig has one quick op: it takes the caller's index (so that a
// caller can find its job), an exit status and a sleep.
const killConfig = `
[[op]]
name = "exit"
exec = ["/bin/sh", "-c", "sleep \"$3\"; exit \"$2\"", "sh"]
args = { min = 3, max = 3, pattern = "^[0-9.]+$" }
prefix = "unitrun-kill-"
`

// TestDaemonSIGKILLedDuringJobs runs 200 quick jobs with different exit
// statuses from 12 callers while the daemon binary is SIGKILLed at random
// moments and restarted each time. Callers retry a call that did not
// reach the daemon, look up (by their index) a call whose answer was lost,
// and wait with client.Wait, which reconnects. At the end every job has
// exactly one record, with its own exit status, every waiter got that
// status, and no unit of the op is left.
func TestDaemonSIGKILLedDuringJobs(t *testing.T) {
	const jobs, callers = 200, 12
	d := systemdtest.StartDaemon(t, killConfig)
	c := client.New(d.API)
	ctx := faultCtx(t, 3*time.Minute)
	sleeps := []string{"0", "0.05", "0.2", "0.5"}
	status := func(i int) int { return (i * 7) % 11 }

	var (
		next     atomic.Int64
		lost     atomic.Int64 // calls whose answer was lost
		mu       sync.Mutex
		ids      = make(map[string]int) // job id -> index
		finished sync.WaitGroup
	)
	for range callers {
		finished.Add(1)
		go func() {
			defer finished.Done()
			for i := int(next.Add(1) - 1); i < jobs && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				args := []string{strconv.Itoa(i), strconv.Itoa(status(i)), sleeps[i%len(sleeps)]}
				id, err := callOnce(ctx, c, "exit", args, &lost)
				if err != nil {
					t.Errorf("job %d: %v", i, err)
					return
				}
				mu.Lock()
				if prev, dup := ids[id]; dup {
					t.Errorf("jobs %d and %d got the same id %s", prev, i, id)
				}
				ids[id] = i
				mu.Unlock()
				rec, err := c.Wait(ctx, id)
				if err != nil || rec.ExitCode == nil || *rec.ExitCode != status(i) {
					t.Errorf("job %d (%s): waited %+v, %v: want exit status %d", i, id, rec, err, status(i))
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { finished.Wait(); close(done) }()
	kills := 0
	for killing := true; killing; {
		select {
		case <-done:
			killing = false
		case <-time.After(time.Duration(50+rand.IntN(400)) * time.Millisecond):
			d.Cmd.Process.Signal(syscall.SIGKILL)
			d.Cmd.Wait()
			kills++
			time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
			d.Start(t)
		}
	}
	t.Logf("%d jobs, %d SIGKILLs, %d calls whose answer was lost", jobs, kills, lost.Load())
	if kills < 5 {
		t.Errorf("only %d SIGKILLs: want several while the jobs ran", kills)
	}

	recs, err := c.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byIndex := make(map[int]*api.Record)
	for _, r := range recs {
		i, _ := strconv.Atoi(r.Args[0])
		if prev, dup := byIndex[i]; dup {
			t.Errorf("job %d has two records: %s and %s", i, prev.ID, r.ID)
		}
		byIndex[i] = r
		switch {
		case !r.Done():
			t.Errorf("job %d (%s) is %s after all waiters returned", i, r.ID, r.State)
		case r.ExitCode == nil || *r.ExitCode != status(i):
			t.Errorf("job %d (%s): %+v: want exit status %d", i, r.ID, r, status(i))
		case ids[r.ID] != i:
			t.Errorf("job %d: record %s was not the one its caller waited for", i, r.ID)
		}
	}
	if len(byIndex) != jobs || len(ids) != jobs {
		t.Errorf("%d records for %d jobs, %d ids handed out: want one each", len(byIndex), jobs, len(ids))
	}
	waitNoUnits(ctx, t, "unitrun-kill-")
}

// callOnce calls op until the daemon has accepted the call exactly once:
// it retries a call that never reached the daemon, and for one whose
// answer was lost looks up the job by its first arg, calling again only
// when the daemon has no such job.
func callOnce(ctx context.Context, c *client.Client, op string, args []string, lost *atomic.Int64) (string, error) {
	for ctx.Err() == nil {
		id, err := c.Call(ctx, op, args)
		var e *api.Error
		switch {
		case err == nil:
			return id, nil
		case errors.As(err, &e):
			return "", err
		case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT):
			time.Sleep(20 * time.Millisecond)
			continue
		}
		lost.Add(1)
		for ctx.Err() == nil {
			recs, err := c.Jobs(ctx)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for _, r := range recs {
				if r.Op == op && r.Args[0] == args[0] {
					return r.ID, nil
				}
			}
			break
		}
	}
	return "", ctx.Err()
}

// waitNoUnits waits until the test manager has no unit whose name starts
// with prefix, and fails the test if ctx ends first.
func waitNoUnits(ctx context.Context, t *testing.T, prefix string) {
	t.Helper()
	conn := systemdtest.Conn(t)
	var left []string
	for {
		names, err := conn.ListUnitNames(ctx, prefix)
		if err == nil && len(names) == 0 {
			return
		}
		if err == nil {
			left = names
		}
		if ctx.Err() != nil {
			t.Errorf("units left: %q (last listed), %v", left, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
