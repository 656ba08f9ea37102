package job_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
)

// A start that makes no run reports no run: never the exit status of the
// unit's earlier run, which the unit still shows. systemd's start limit
// refuses the second start of this oneshot (its start job fails), and a
// condition not met makes the start job of the other one done without a
// run; before, Start reported the earlier run's exit 4 as this start's.
func TestStartMakesNoRun(t *testing.T) {
	ctx := context.Background()
	conn := systemdtest.Conn(t)
	dir := systemdtest.RuntimeUnitDir(t)
	limited := unit.RandomName("unitrun-test-limited-", "service")
	gate := filepath.Join(t.TempDir(), "gate")
	conditioned := unit.RandomName("unitrun-test-conditioned-", "service")
	systemdtest.WriteUnit(t, filepath.Join(dir, limited), "[Unit]\nStartLimitIntervalSec=1h\nStartLimitBurst=1\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'exit 4'\n")
	systemdtest.WriteUnit(t, filepath.Join(dir, conditioned), "[Unit]\nConditionPathExists=!"+gate+"\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'exit 4'\n")
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range []string{limited, conditioned} {
			conn.ResetFailedUnit(ctx, n)
		}
	}()
	for _, name := range []string{limited, conditioned} {
		first, err := job.Unit(conn, name).Run(ctx)
		var ee *job.ExitError
		if !errors.As(err, &ee) || ee.ExitCode != 4 {
			t.Fatalf("first Start(%s): %v, want exit status 4", name, err)
		}
		if name == conditioned {
			systemdtest.WriteUnit(t, gate, "")
		}
		st, err := job.Unit(conn, name).Run(ctx)
		if errors.As(err, &ee) {
			t.Errorf("second Start(%s) reported a run: %v (invocation %s; the first run's was %s)", name, err, ee.InvocationID, first.InvocationID)
			continue
		}
		if st != nil && (st.InvocationID != "" || st.ExitCode != 0) {
			t.Errorf("second Start(%s): status %+v, want none of the first run's", name, st)
		}
		var je *job.JobError
		if name == limited && !errors.As(err, &je) {
			t.Errorf("second Start(%s): %v, want a *JobError (the start limit refused it)", name, err)
		}
		if name == conditioned && err != nil {
			t.Errorf("second Start(%s): %v, want no error (the start job is done; the condition made no run)", name, err)
		}
	}
}
