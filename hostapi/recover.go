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
	d.followManager()
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
// ExecStopPost= writes the outcome file before the unit is failed or
// inactive, while the unit's state may still change under us by what the
// previous daemon sent before it died (a reset-failed, which clears
// Result): an outcome file wins over the unit's state. A loaded unit that
// is inactive, with no outcome yet, tells nothing (its start job may be
// pending): it is looked at again.
func (d *Daemon) reattach(ctx context.Context, l *liveJob) outcome {
	for {
		if o, ok, err := d.store.ReadOutcome(l.rec.ID); err != nil || ok {
			if err != nil {
				return failed(err.Error())
			}
			d.release(ctx, l.rec.Unit)
			return fromOutcome(o)
		}
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
		if !sleepCtx(ctx, followPoll) {
			return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, ctx.Err()))
		}
	}
}

// release lets systemd collect a unit whose run has ended, once it has
// finished deactivating: a failed one is reset; an inactive or unloaded
// one is collected anyway.
func (d *Daemon) release(ctx context.Context, name string) {
	for {
		props, err := d.mgr.Properties(ctx, name, manager.UnitIface)
		if err != nil {
			return
		}
		switch props["ActiveState"].Value() {
		case "failed":
			d.mgr.ResetFailedUnit(ctx, name)
			return
		case "inactive":
			return
		}
		if !sleepCtx(ctx, followPoll) {
			return
		}
	}
}

// sleepCtx waits for d, or until ctx ends, and reports whether it waited.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
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
