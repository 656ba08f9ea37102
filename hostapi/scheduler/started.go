package scheduler

import (
	"context"
	"fmt"
)

// neverStarted returns the outcome of a job that a previous daemon
// accepted but stopped before the job's unit was created, which left no
// unit and no outcome: the job runs now, under its unit name, unless its
// op is gone or binds to a caller that may be gone too, or its record
// fails refusedOnRecovery.
func (d *Scheduler) neverStarted(ctx context.Context, l *liveJob) outcome {
	if l.op == nil || l.op.Exec == nil || l.op.BindToCaller {
		return failed(fmt.Sprintf("unit %s never started: the daemon stopped after accepting the job and before creating its unit", l.rec.Unit))
	}
	if why := d.refusedOnRecovery(l); why != "" {
		return failed(fmt.Sprintf("unit %s never started, and %s", l.rec.Unit, why))
	}
	d.Logf("hostapi: job %s: its unit %s was never created: starting it now", l.rec.ID, l.rec.Unit)
	return d.runExec(ctx, l, max(l.rec.Attempts-1, 0))
}
