package scheduler_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// reloadConfig has an op that takes an index, an exit status and a sleep.
const reloadConfig = `
[[op]]
name = "exit"
exec = ["/bin/sh", "-c", "sleep \"$3\"; echo \"job $1\"; exit \"$2\"", "sh"]
args = { min = 3, max = 3, pattern = "^[0-9.]+$" }
prefix = "unitrun-reload-"
`

// TestManagerReloadReexecWhileJobsRun runs 40 jobs, over HTTP and
// SEQPACKET, while the manager is daemon-reloaded and then
// daemon-reexecuted: each job ends with its own exit status and output,
// and no unit is left.
func TestManagerReloadReexecWhileJobsRun(t *testing.T) {
	d := systemdtest.StartDaemon(t, reloadConfig)
	c := client.New(d.API)
	ctx := faultCtx(t, 2*time.Minute)
	mgr := systemdtest.Dial(t)
	status := func(i int) int { return (i * 5) % 13 }
	sleep := func(i int) string { return []string{"0.3", "0.8", "1.5", "2.5"}[i%4] }

	var wg sync.WaitGroup
	started := make(chan struct{}, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{strconv.Itoa(i), strconv.Itoa(status(i)), sleep(i)}
			if i%2 == 1 {
				started <- struct{}{}
				ok, _, msg, err := seqCall(ctx, d.Argv, seqRequest(t, "exit", args...))
				if want := "exit status " + strconv.Itoa(status(i)); err != nil || ok != (status(i) == 0) || msg != want {
					t.Errorf("SEQPACKET job %d: %v %q, %v: want %q", i, ok, msg, err, want)
				}
				return
			}
			id, err := c.Call(ctx, "exit", args)
			started <- struct{}{}
			if err != nil {
				t.Errorf("job %d: %v", i, err)
				return
			}
			rec, err := c.Wait(ctx, id)
			if err != nil || rec.ExitCode == nil || *rec.ExitCode != status(i) || rec.OutputTail != "job "+strconv.Itoa(i)+"\n" {
				t.Errorf("job %d: %+v, %v: want exit status %d and its output", i, rec, err, status(i))
			}
		}()
	}
	for range 40 {
		<-started
	}
	time.Sleep(200 * time.Millisecond) // let the last calls reach the manager
	if err := mgr.Reload(ctx); err != nil {
		t.Fatalf("daemon-reload: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := mgr.Reexecute(ctx); err != nil {
		t.Fatalf("daemon-reexec: %v", err)
	}
	wg.Wait()
	healthy(ctx, t, d, "exit", "99", "0", "0")
	waitNoUnits(ctx, t, "unitrun-reload-")
}
