package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// Recover takes over the jobs that an earlier daemon on the same store left
// unfinished, oldest first, after releasing the units of finished jobs that
// it recorded but did not live to release. A running job whose unit is
// still loaded (its pin keeps it so, however it ended) is re-attached
// (job.Attach) and its outcome recorded when it ends; one whose unit was
// never created (the earlier daemon stopped first) runs now; others fail
// with a message saying the outcome is lost. Queued jobs are queued again,
// and run in turn. A job whose op is no longer configured is re-attached
// the same way. Before it starts anything, Recover checks the record as a
// call is checked (refusedOnRecovery): a job that fails the check is
// recorded failed, saying why, and never run. Each outcome is recorded
// exactly once.
//
// The error joins those of records that could not be read, which are left
// as they are.
func (d *Scheduler) Recover() error {
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
		l := &liveJob{rec: r, op: d.ops.Load().byName[r.Op], caller: core.Caller{UID: r.CallerUID, PID: r.CallerPID}, done: make(chan struct{})}
		d.live[r.ID] = l
		switch {
		case r.State == api.StateQueued:
			if why := d.refusedOnRecovery(l); why != "" {
				d.finishLocked(l, failed(why))
				continue
			}
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
// restarted; the failed run's unit stays loaded through the back-off, so
// that a daemon that dies then leaves it for the next one to find.
func (d *Scheduler) reattach(ctx context.Context, l *liveJob) outcome {
	runs := max(l.rec.Attempts, 1)
	set, release := d.lastRun(ctx, l, runs)
	switch {
	case set == nil:
		return nil // recorded already: by lastRun, or by the run it made now
	case release == nil:
		return withAttempts(set, runs)
	}
	waited := sleepCtx(ctx, retryPolicy(l.op).Backoff(runs))
	release()
	if !waited {
		return func(r *api.Record) {
			withAttempts(set, runs)(r)
			r.Message = fmt.Sprintf("canceled before attempt %d: %s", runs+1, r.Message)
		}
	}
	if why := d.refusedOnRecovery(l); why != "" {
		return func(r *api.Record) {
			withAttempts(set, runs)(r)
			r.Message = fmt.Sprintf("not retried: %s; run %d: %s", why, runs, r.Message)
		}
	}
	return d.runExec(ctx, l, runs)
}

// refusedOnRecovery returns why the job, as its record in the state
// directory says, may not start now, or "". The record is checked for
// what a call is checked for (Call): the op is configured, the recorded
// caller may call it (its uid, or one of the groups the user database
// gives that uid now, since the record keeps no gids), and the args keep
// to the op's rules; and the unit named is the one the daemon gives a job
// of the op. So a record that a call could not have made is never run.
func (d *Scheduler) refusedOnRecovery(l *liveJob) string {
	r, op := l.rec, l.op
	switch {
	case op == nil:
		return fmt.Sprintf("op %q is no longer configured", r.Op)
	case !op.Allowed(r.CallerUID, nil) && !op.Allowed(r.CallerUID, groupsOf(r.CallerUID)):
		return fmt.Sprintf("not run again: op %q: uid %d is not in allow_uids and none of its gids is in allow_gids", op.Name, r.CallerUID)
	}
	if err := op.CheckArgs(r.Args); err != nil {
		return "not run again: " + err.Error()
	}
	if want := unitOf(op, r.ID); r.Unit != "" && r.Unit != want {
		return fmt.Sprintf("not run again: the record names unit %s, not %s, the unit of op %q", r.Unit, want, op.Name)
	}
	return ""
}

// groupsOf returns the gids of the groups that the user database gives
// uid, or nil.
func groupsOf(uid uint32) []uint32 {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil
	}
	names, _ := u.GroupIds()
	var gids []uint32
	for _, n := range names {
		if g, err := strconv.ParseUint(n, 10, 32); err == nil {
			gids = append(gids, uint32(g))
		}
	}
	return gids
}

// withAttempts is set followed by setting the record's count of runs.
func withAttempts(set outcome, runs int) outcome {
	return func(r *api.Record) {
		set(r)
		r.Attempts = runs
	}
}

// retries reports whether the job's runs-th run, which ended as st and
// err say, is a failure that its op's retry policy reruns, with runs left.
func (l *liveJob) retries(runs int, st *job.Status, err error) bool {
	p := retryPolicy(l.op)
	return p != nil && st != nil && p.Retries(err) && runs < p.Attempts &&
		l.op.Unit == "" && l.rec.Unit == unitOf(l.op, l.rec.ID)
}

// lastRun returns the outcome of the last run, the runs-th, that a
// previous daemon started for the job and, when it is a failure that a
// retry policy reruns, the release of its unit, which it leaves loaded.
// The unit's pin keeps it loaded, with its outcome, after any stop; a
// loaded unit that is inactive with a job pending has not started yet,
// and is looked at again. A final outcome is recorded here, before the
// unit is released, so that a daemon that dies in between finds the unit
// still loaded; lastRun then returns nil.
func (d *Scheduler) lastRun(ctx context.Context, l *liveJob, runs int) (outcome, func()) {
	for {
		props, err := d.mgr.Properties(ctx, l.rec.Unit, manager.UnitIface)
		if err != nil {
			return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, err)), nil
		}
		if props["LoadState"].Value() == "not-found" {
			return d.collected(ctx, l), nil
		}
		if props["ActiveState"].Value() != "inactive" || !manager.JobPending(props) {
			recorded, kept, retry := false, false, false
			st, release, err := job.AttachHeld(ctx, d.mgr, l.rec.Unit, func(st *job.Status, err error) {
				if retry = l.retries(runs, st, err); !retry {
					d.releasing.Add(1)
					recorded = true
					pinned := execUnit(l.rec)
					kept = d.finish(l, withAttempts(fromStatus(st, err), runs), pinned) != nil && pinned != ""
				}
			}, func(error) bool { return retry || kept })
			switch {
			case kept:
				// storeLater records it and releases the unit; release
				// is not called, as it would release the unit now (the
				// run's watch of the unit stays open meanwhile).
				d.releasing.Done()
				return nil, nil
			case recorded:
				d.releasing.Done()
				return nil, nil
			case errors.Is(err, job.ErrCollected) || errors.Is(err, job.ErrNeverRan):
				return d.collected(ctx, l), nil
			}
			return fromStatus(st, err), release
		}
		if !sleepCtx(ctx, followPoll) {
			return failed(fmt.Sprintf("re-attach to %s: %v", l.rec.Unit, ctx.Err())), nil
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

// collected returns the outcome of a job whose unit is no longer loaded,
// or never ran.
func (d *Scheduler) collected(ctx context.Context, l *liveJob) outcome {
	if l.rec.BootID != "" && d.bootID != "" && l.rec.BootID != d.bootID {
		// The host went down while the job ran, or before its unit was
		// even created: it is not run again, since the started mark may
		// not have outlived the crash.
		return failed(fmt.Sprintf("unit %s is gone and left no outcome: the host restarted while the job ran (boot %s, now %s)", l.rec.Unit, l.rec.BootID, d.bootID))
	}
	started, err := d.store.Started(l.rec.ID)
	switch {
	case err != nil:
		return failed(err.Error())
	case !started:
		return d.neverStarted(ctx, l)
	}
	return failed(fmt.Sprintf("unit %s is gone and left no outcome: its pin was stopped, or its manager restarted, while no daemon ran", l.rec.Unit))
}

// releaseFinished lets systemd collect the units of finished exec jobs that
// are still loaded: the daemon records an outcome before it releases the
// unit, and may die in between. A unit left active is stopped, a failed
// one is reset, and its pin is stopped. Units of unit ops are the host's
// own and are left alone.
func (d *Scheduler) releaseFinished(recs []*api.Record) {
	finished := make(map[string]bool)
	for _, r := range recs {
		if u := execUnit(r); r.Done() && u != "" {
			finished[u] = true
			finished[job.PinName(u)] = true
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
		if finished[name] {
			d.releaseUnit(ctx, name)
		}
	}
}

// execUnit returns the unit of the job's record when it is a transient
// unit of the job's own (an exec op's, pinned), or "" for a unit op's
// unit, which is the host's.
func execUnit(r *api.Record) string {
	if strings.HasSuffix(r.Unit, strings.ToLower(r.ID)+".service") {
		return r.Unit
	}
	return ""
}

// releaseUnit lets systemd collect the loaded unit (or pin) of a finished
// job: it is stopped if active, reset if failed.
func (d *Scheduler) releaseUnit(ctx context.Context, name string) {
	props, err := d.mgr.Properties(ctx, name, manager.UnitIface)
	if err != nil {
		return
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
