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
// unit is gone gets the outcome its ExecStopPost= wrote, or fails with a
// message saying the outcome is lost. Queued jobs are queued again, and run
// in turn. A job whose op is no longer configured is re-attached the same
// way; one still queued fails. Each outcome is recorded exactly once.
//
// The error joins those of records that could not be read, which are left
// as they are.
func (d *Daemon) Recover() error {
	recs, err := d.store.List()
	slices.Reverse(recs)
	d.releaseFinished(recs)
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

// reattach waits for the outcome of a job a previous daemon started. A
// run of a retried exec op that failed with runs left is followed by the
// rest of its runs, after the policy's back-off, as if the daemon had not
// restarted.
func (d *Daemon) reattach(ctx context.Context, l *liveJob) outcome {
	props, err := d.mgr.Properties(ctx, l.rec.Unit, manager.UnitIface)
	if err != nil {
		return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, err))
	}
	var retry bool
	var set outcome
	if props["LoadState"].Value() != "not-found" {
		st, err := job.Attach(ctx, d.mgr, l.rec.Unit)
		p := l.op.retryPolicy()
		retry = p != nil && st != nil && p.Retries(err)
		set = fromStatus(st, err)
	} else {
		o, ok, err := d.store.ReadOutcome(l.rec.ID)
		switch {
		case err != nil:
			return failed(err.Error())
		case !ok:
			return failed(fmt.Sprintf("unit %s is gone and left no outcome: the daemon stopped before the unit started, or the unit's ExecStopPost= did not run", l.rec.Unit))
		}
		retry = l.op.retryPolicy() != nil && o.ServiceResult != "success"
		set = fromOutcome(o)
	}
	runs := max(l.rec.Attempts, 1)
	if !retry || runs >= l.op.Retry.Attempts || l.rec.Unit != l.op.Prefix+strings.ToLower(l.rec.ID)+".service" {
		return func(r *Record) {
			set(r)
			r.Attempts = runs
		}
	}
	select {
	case <-time.After(l.op.retryPolicy().Backoff(runs)):
	case <-ctx.Done():
		return func(r *Record) {
			set(r)
			r.Attempts = runs
			r.Message = fmt.Sprintf("canceled before attempt %d: %s", runs+1, r.Message)
		}
	}
	return d.runExec(ctx, l, runs)
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
