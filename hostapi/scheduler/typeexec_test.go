package scheduler

import (
	"sync"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestRecordTypeExecParallel is systemd's TEST-07-PID1 type-exec-parallel
// through the daemon: 25 parallel jobs of an op that runs false each
// record that the job ran (job_result "done") and exit code 1, although
// systemd 252 fails the start job of some of them.
func TestRecordTypeExecParallel(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), `
[[op]]
name = "false"
exec = ["/bin/false"]
`)
	const n = 25
	recs := make([]*api.Record, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { recs[i] = call(t, d, "false") })
	}
	wg.Wait()
	for i, r := range recs {
		if r.State != api.StateFailed || r.JobResult != "done" || daemontest.ExitCode(r) != 1 || r.Result != "exit-code" {
			t.Errorf("job %d: state %s, job_result %q, exit code %d, result %q; want failed, done, 1, exit-code", i, r.State, r.JobResult, daemontest.ExitCode(r), r.Result)
		}
	}
}
