package job_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
)

// TestTypeExecParallel is systemd's TEST-07-PID1 type-exec-parallel
// ("seq 25 | xargs -n 1 -P 0 systemd-run -p Type=exec /bin/false") as a
// library test: under Type=exec, systemd 252 can fail the start job of a
// command that exits at once, although it ran. Each of 25 parallel runs
// of false must report that its job ran (job result "done") and that it
// exited with status 1.
func TestTypeExecParallel(t *testing.T) {
	conn := systemdtest.Conn(t)
	const n = 25
	var wg sync.WaitGroup
	errs := make([]error, n)
	cmds := make([]*job.Cmd, n)
	for i := range n {
		cmds[i] = job.Command(conn, "/bin/false")
		wg.Go(func() { errs[i] = cmds[i].Run() })
	}
	wg.Wait()
	for i, c := range cmds {
		var ee *job.ExitError
		if !errors.As(errs[i], &ee) {
			t.Errorf("run %d: %v (%T), want an *ExitError", i, errs[i], errs[i])
			continue
		}
		if st := c.Status; st.JobResult != "done" || st.ExitCode != 1 || st.Result != "exit-code" {
			t.Errorf("run %d: job result %q, exit code %d, result %q; want done, 1, exit-code", i, st.JobResult, st.ExitCode, st.Result)
		}
	}
}
