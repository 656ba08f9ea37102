package main

import (
	"sync"
	"testing"
)

// TestRunJSONTypeExecParallel is systemd's TEST-07-PID1 type-exec-parallel
// through the CLI: 25 parallel "unitrun run --json -- false" all report
// that the job ran and that false exited with status 1, as the README's
// example promises, although systemd 252 fails the start job of some of
// them.
func TestRunJSONTypeExecParallel(t *testing.T) {
	const n = 25
	type run struct {
		out, errs string
		code      int
	}
	runs := make([]run, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, errs, code := unitrun(t, "run", "--json", "--", "false")
			runs[i] = run{out, errs, code}
		})
	}
	wg.Wait()
	for i, r := range runs {
		var res result
		decode(t, "run --json", r.out, &res)
		if r.code != 1 || res.JobResult != "done" || res.ExitCode == nil || *res.ExitCode != 1 || res.Result != "exit-code" || res.Error != "" {
			t.Errorf("run %d: exit %d, %s (stderr %q); want exit 1 and job_result done, exit_code 1", i, r.code, r.out, r.errs)
		}
	}
}
