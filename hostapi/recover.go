package hostapi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// Recover takes over the jobs that an earlier daemon on the same store left
// unfinished, oldest first, after releasing the units of finished jobs that
// it recorded but did not live to release. A running job whose unit is still loaded is
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
	d.releaseFinished(recs)
	d.mu.Lock()
	defer d.mu.Unlock()
	var queued []*liveJob
	for _, r := range recs {
		d.indexKeyLocked(r)
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
		if err := d.startLocked(l, true); err != nil {
			d.finishLocked(l, failed("start: "+err.Error()))
		}
	}
	for name := range d.queues {
		d.startNextLocked(name)
	}
	return err
}

// reattach waits for the outcome of a job a previous daemon started. A
// run of a retried exec op that failed with runs left is followed by the
// rest of its runs, after the policy's back-off, as if the daemon had not
// restarted.
func (d *Daemon) reattach(ctx context.Context, l *liveJob) outcome {
	set, retry := d.lastRun(ctx, l)
	runs := max(l.rec.Attempts, 1)
	if set == nil {
		return nil // it ran now, and recorded its outcome itself
	}
	if !retry || runs >= l.op.Retry.Attempts || l.rec.Unit != l.op.Prefix+strings.ToLower(l.rec.ID)+".service" {
		return func(r *Record) {
			set(r)
			r.Attempts = runs
		}
	}
	if !sleepCtx(ctx, l.op.retryPolicy().Backoff(runs)) {
		return func(r *Record) {
			set(r)
			r.Attempts = runs
			r.Message = fmt.Sprintf("canceled before attempt %d: %s", runs+1, r.Message)
		}
	}
	return d.runExec(ctx, l, runs)
}

// lastRun returns the outcome of the last run that a previous daemon
// started for the job, and whether it is a failure a retry policy reruns.
//
// ExecStopPost= writes the outcome file before the unit is failed or
// inactive, while the unit's state may still change under us by what the
// previous daemon sent before it died (a reset-failed, which clears
// Result): an outcome file wins over the unit's state. A loaded unit that
// is inactive, with no outcome yet, tells nothing (its start job may be
// pending): it is looked at again.
func (d *Daemon) lastRun(ctx context.Context, l *liveJob) (outcome, bool) {
	p := l.op.retryPolicy()
	for {
		if o, ok, err := d.store.ReadOutcome(l.rec.ID); err != nil || ok {
			if err != nil {
				return failed(err.Error()), false
			}
			d.release(ctx, l.rec.Unit)
			return fromOutcome(o), p != nil && o.ServiceResult != "success"
		}
		props, err := d.mgr.Properties(ctx, l.rec.Unit, manager.UnitIface)
		if err != nil {
			return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, err)), false
		}
		switch {
		case props["LoadState"].Value() == "not-found":
			return d.collected(ctx, l), false
		case props["ActiveState"].Value() != "inactive":
			st, err := job.Attach(ctx, d.mgr, l.rec.Unit)
			return fromStatus(st, err), p != nil && st != nil && p.Retries(err)
		}
		if !sleepCtx(ctx, followPoll) {
			return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, ctx.Err())), false
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
	if err == nil && !ok && l.rec.BootID != "" && d.bootID != "" && l.rec.BootID != d.bootID {
		// The host went down before the unit's outcome writer ran (a
		// crash), or before the unit was even created: it is not run
		// again, since the started mark may not have outlived the crash.
		return failed(fmt.Sprintf("unit %s is gone and left no outcome: the host restarted while the job ran (boot %s, now %s)", l.rec.Unit, l.rec.BootID, d.bootID))
	}
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

// releaseFinished lets systemd collect the units of finished exec jobs that
// are still loaded: the daemon records an outcome before it releases the
// unit, and may die in between. A unit left active is stopped (its
// outcome writer runs, to no effect) and a failed one is reset. Units of
// unit ops are the host's own and are left alone.
func (d *Daemon) releaseFinished(recs []*Record) {
	finished := make(map[string]bool)
	for _, r := range recs {
		if r.Done() && strings.HasSuffix(r.Unit, strings.ToLower(r.ID)+".service") {
			finished[r.Unit] = true
		}
	}
	if len(finished) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	loaded, err := d.mgr.ListUnitNames(ctx, "")
	if err != nil {
		d.Logf("hostapi: listing units to release finished jobs' units: %v", err)
		return
	}
	for _, name := range loaded {
		if !finished[name] {
			continue
		}
		props, err := d.mgr.Properties(ctx, name, manager.UnitIface)
		if err != nil {
			continue
		}
		if props["ActiveState"].Value() == "failed" {
			err = d.mgr.ResetFailedUnit(ctx, name)
		} else {
			_, err = d.mgr.StopUnit(ctx, name, "replace")
		}
		if err != nil {
			d.Logf("hostapi: releasing %s, the unit of a finished job: %v", name, err)
		}
	}
}
