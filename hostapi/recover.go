package hostapi

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// Recover takes over the jobs that an earlier daemon on the same store left
// unfinished, oldest first. A running job whose unit is still loaded is
// re-attached (job.Attach) and its outcome recorded when it ends; one whose
// unit is gone gets the outcome its ExecStopPost= wrote; one whose unit
// was never created (the earlier daemon stopped first) runs now; others
// fail with a message saying the outcome is lost. Queued jobs are queued again, and run
// in turn. A job whose op is no longer configured is re-attached the same
// way; one still queued fails. Each outcome is recorded exactly once.
//
// The error joins those of records that could not be read, which are left
// as they are.
func (d *Daemon) Recover() error {
	recs, err := d.store.List()
	slices.Reverse(recs)
	d.mu.Lock()
	defer d.mu.Unlock()
	var queued []*liveJob
	for _, r := range recs {
		if r.Done() {
			continue
		}
		l := &liveJob{rec: r, op: d.ops[r.Op], caller: Caller{UID: r.CallerUID, PID: r.CallerPID}, done: make(chan struct{})}
		d.live[r.ID] = l
		switch {
		case r.State == StateQueued && l.op == nil:
			d.finishLocked(l, failed(fmt.Sprintf("op %q is no longer configured", r.Op)))
		case r.State == StateQueued:
			queued = append(queued, l)
		default:
			d.goLocked(l, d.reattach)
		}
	}
	for _, l := range queued {
		if l.op.Exclusive {
			d.queues[l.op.Name] = append(d.queues[l.op.Name], l)
			continue
		}
		if err := d.startLocked(l); err != nil {
			d.finishLocked(l, failed("start: "+err.Error()))
		}
	}
	for name := range d.queues {
		d.startNextLocked(name)
	}
	return err
}

// reattach waits for the outcome of a job a previous daemon started.
//
// A loaded unit that is inactive tells nothing: its start job may still be
// pending (the previous daemon stopped right after creating it), or its
// run ended and was reset, which clears its Result. Its outcome file is
// read then, or, while there is none, the unit is looked at again.
func (d *Daemon) reattach(ctx context.Context, l *liveJob) outcome {
	for {
		props, err := d.mgr.Properties(ctx, l.rec.Unit, manager.UnitIface)
		if err != nil {
			return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, err))
		}
		switch {
		case props["LoadState"].Value() == "not-found":
			return d.collected(ctx, l)
		case props["ActiveState"].Value() != "inactive":
			return fromStatus(job.Attach(ctx, d.mgr, l.rec.Unit))
		}
		if o, ok, err := d.store.ReadOutcome(l.rec.ID); err != nil || ok {
			if err != nil {
				return failed(err.Error())
			}
			return fromOutcome(o)
		}
		select {
		case <-ctx.Done():
			return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, ctx.Err()))
		case <-time.After(followPoll):
		}
	}
}

// collected returns the outcome of a job whose unit is no longer loaded.
func (d *Daemon) collected(ctx context.Context, l *liveJob) outcome {
	o, ok, err := d.store.ReadOutcome(l.rec.ID)
	if err == nil && !ok {
		if started, serr := d.store.started(l.rec.ID); serr == nil && !started {
			return d.neverStarted(ctx, l)
		}
	}
	switch {
	case err != nil:
		return failed(err.Error())
	case !ok:
		return failed(fmt.Sprintf("unit %s is gone and left no outcome: the daemon stopped before the unit started, or the unit's ExecStopPost= did not run", l.rec.Unit))
	}
	return fromOutcome(o)
}
