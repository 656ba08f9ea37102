package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
)

// Call runs the op name with args for caller and returns the job's record
// once the job is accepted: running (its unit started or starting), queued
// behind the running job of an exclusive op, or, for an exclusive op that
// runs with the same args, the running or queued job it joins.
//
// Nothing starts when the call is refused; the error is an *Error:
// CodeUnknownOp, CodeUnauthorized (checked before the args, so that an
// unauthorized caller learns nothing about them), CodeBadArgs,
// CodeNoCallerUnit for a bind_to_caller op whose caller is in no unit of
// the manager, CodeManagerUnavailable while the manager cannot be reached,
// CodeNoSpace when the state directory is too full to record the job,
// and CodeBusy when the op's on_busy or the limits refuse it.
func (d *Scheduler) Call(ctx context.Context, caller core.Caller, name string, args []string) (*api.Record, error) {
	return d.CallKeyed(ctx, caller, name, args, "")
}

// CallKeyed is Call with an idempotency key, unless key is "": when the
// caller's uid has called the op with the same key before, and that job's
// record is still kept, it returns that job's record (live or final) and
// starts nothing. The args must be the same as then, or the error has
// CodeKeyConflict. A key not of the form KeyPattern is CodeBadRequest.
// The key is stored in the job's record, so that it outlives the daemon.
func (d *Scheduler) CallKeyed(ctx context.Context, caller core.Caller, name string, args []string, key string) (_ *api.Record, err error) {
	defer func() { d.callRefused(caller, name, err) }()
	op, err := d.Op(name)
	if err != nil {
		return nil, err
	}
	if !op.Allowed(caller.UID, caller.GIDs) {
		return nil, errorf(api.CodeUnauthorized, fmt.Sprintf("op %q: uid %d is not in allow_uids and none of its gids is in allow_gids", op.Name, caller.UID))
	}
	if args == nil {
		args = []string{}
	}
	if err := op.CheckArgs(args); err != nil {
		return nil, errorf(api.CodeBadArgs, err.Error())
	}
	if key != "" && !api.ValidKey(key) {
		return nil, errorf(api.CodeBadRequest, fmt.Sprintf("key %q: must match %s", key, api.KeyPattern))
	}
	if key != "" {
		// A call made again with its key gets its job even when what the
		// checks below need is gone: the manager, or the caller's unit.
		// admitLocked looks again, for a call with the key made meanwhile.
		d.mu.Lock()
		rec, err := d.keyedLocked(op.Name, caller.UID, key, args)
		d.mu.Unlock()
		if rec != nil || err != nil {
			return d.durable(rec, err)
		}
	}
	if err := d.managerReachable(ctx); err != nil {
		return nil, err
	}
	var bind []unit.Property
	if op.BindToCaller {
		if bind, err = job.BindTo(ctx, d.mgr, uint32(caller.PID)); err != nil {
			return nil, errorf(api.CodeNoCallerUnit, fmt.Sprintf("op %q: bind_to_caller: no unit of the manager holds caller pid %d: %v", op.Name, caller.PID, err))
		}
	}

	d.mu.Lock()
	rec, started, err := d.admitLocked(op, caller, args, bind, key)
	d.mu.Unlock()
	if err != nil || started == nil {
		return d.durable(rec, err)
	}
	// The job's unit is being created meanwhile; the caller hears of the
	// job only once its record is durable.
	if err := d.store.Commit(started.rec.ID); err != nil {
		// The caller is told that nothing started, so a call made
		// again with the key must not get this job back.
		d.mu.Lock()
		d.dropKeyLocked(started)
		d.mu.Unlock()
		d.Cancel(context.WithoutCancel(ctx), started.rec.ID)
		return nil, commitRefusal(err)
	}
	return rec, nil
}

// durable returns rec and err, once rec, the record of a job that an
// earlier call started (found by its key, or joined), is durable: that
// call may be making it so still, and the caller hears of no job before
// its record is durable.
func (d *Scheduler) durable(rec *api.Record, err error) (*api.Record, error) {
	if rec == nil || err != nil {
		return rec, err
	}
	if err := d.store.Commit(rec.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, commitRefusal(err)
	}
	return rec, nil
}

// admitLocked finds the job of the caller's key, or joins, queues or
// starts a job of op for the caller, or refuses it, and returns a copy of
// its record. When it started a job, it returns it too: its running record
// is staged, not yet durable.
func (d *Scheduler) admitLocked(op *config.Op, caller core.Caller, args []string, bind []unit.Property, key string) (_ *api.Record, started *liveJob, _ error) {
	if d.closed {
		return nil, nil, errorf(api.CodeInternal, "the daemon is shutting down")
	}
	if key != "" {
		if r, err := d.keyedLocked(op.Name, caller.UID, key, args); r != nil || err != nil {
			return r, nil, err
		}
	}
	if op.Exclusive {
		if l := d.joinLocked(op, args); l != nil {
			if key != "" {
				// Remembered while this daemon runs; the record keeps
				// the key of the call that started the job.
				d.keys[keyOf(op.Name, caller.UID, key)] = l.rec.ID
			}
			return copyRecord(l.rec), nil, nil
		}
	}
	if len(d.live) >= d.cfg.Limits.MaxLiveJobs {
		return nil, nil, errorf(api.CodeBusy, fmt.Sprintf("op %q: %d jobs are queued or running, the limit max_live_jobs", op.Name, len(d.live)))
	}
	if n, limit := d.liveOfLocked(caller.UID), d.cfg.Limits.MaxLiveJobsPerUID; limit > 0 && n >= limit {
		return nil, nil, errorf(api.CodeBusy, fmt.Sprintf("op %q: uid %d has %d jobs queued or running, the limit max_live_jobs_per_uid", op.Name, caller.UID, n))
	}
	l := &liveJob{
		rec: &api.Record{
			ID: d.store.NewID(), Op: op.Name, Args: slices.Clone(args), State: api.StateQueued,
			CallerUID: caller.UID, CallerPID: caller.PID, CreatedAt: time.Now().UTC(), Key: key,
		},
		op: op, caller: caller, bind: bind, done: make(chan struct{}),
	}
	if r := d.running[op.Name]; op.Exclusive && r != nil {
		switch {
		case op.OnBusy == "join-or-refuse":
			return nil, nil, errorf(api.CodeBusy, fmt.Sprintf("op %q: job %s runs with other args and on_busy is %q", op.Name, r.rec.ID, op.OnBusy))
		case len(d.queues[op.Name]) >= d.cfg.Limits.MaxQueue:
			return nil, nil, errorf(api.CodeBusy, fmt.Sprintf("op %q: job %s runs and %d calls wait, the limit max_queue", op.Name, r.rec.ID, len(d.queues[op.Name])))
		}
		if err := d.store.Put(l.rec); err != nil {
			return nil, nil, storeRefusal(err)
		}
		d.live[l.rec.ID] = l
		d.indexKeyLocked(l.rec)
		d.queues[op.Name] = append(d.queues[op.Name], l)
		d.jobQueued(l)
		return copyRecord(l.rec), nil, nil
	}
	d.live[l.rec.ID] = l
	if err := d.startLocked(l, false); err != nil {
		delete(d.live, l.rec.ID)
		return nil, nil, storeRefusal(err)
	}
	d.indexKeyLocked(l.rec)
	return copyRecord(l.rec), l, nil
}

// joinLocked returns the running or queued job of the exclusive op that
// has the same args, or nil.
func (d *Scheduler) joinLocked(op *config.Op, args []string) *liveJob {
	if r := d.running[op.Name]; r != nil && slices.Equal(r.rec.Args, args) && r.canceled == "" {
		return r
	}
	for _, q := range d.queues[op.Name] {
		if slices.Equal(q.rec.Args, args) {
			return q
		}
	}
	return nil
}

// startLocked records the job as running, with the name of its unit and
// the host's boot, and starts it in a goroutine. The record is stored
// before the unit is created, so that a daemon that dies in between finds
// the job; durably if durable is set, else only staged (see Store.stage),
// for the caller to commit while the unit is created.
func (d *Scheduler) startLocked(l *liveJob, durable bool) error {
	now := time.Now().UTC()
	l.rec.State = api.StateRunning
	l.rec.StartedAt = &now
	l.rec.Unit = unitOf(l.op, l.rec.ID)
	l.rec.BootID = d.bootID
	put := d.store.stage
	if durable {
		put = d.store.Put
	}
	if err := put(l.rec); err != nil {
		return err
	}
	d.jobStarted(l)
	d.goLocked(l, d.execute)
	return nil
}

// unitOf returns the unit that a job of op with the given id runs as: the
// op's unit, or a transient one named after the job.
func unitOf(op *config.Op, id string) string {
	if op.Unit != "" {
		return op.Unit
	}
	return op.Prefix + strings.ToLower(id) + ".service"
}

// goLocked runs fn for the job in a goroutine, with a context that Cancel
// ends, and records the outcome it returns, unless nil (fn recorded it).
// The job is its op's running job until its outcome is recorded.
func (d *Scheduler) goLocked(l *liveJob, fn func(context.Context, *liveJob) outcome) {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	if l.op != nil && l.op.Exclusive {
		d.running[l.rec.Op] = l
	}
	go func() {
		defer cancel()
		if set := fn(ctx, l); set != nil {
			d.finish(l, set, "")
		}
	}()
}

// dequeueLocked removes a queued job from its op's queue.
func (d *Scheduler) dequeueLocked(l *liveJob) {
	q := d.queues[l.rec.Op]
	if i := slices.Index(q, l); i >= 0 {
		d.queues[l.rec.Op] = slices.Delete(q, i, i+1)
	}
}

// startNextLocked starts the first queued job of the exclusive op, if it
// has no running job.
func (d *Scheduler) startNextLocked(opName string) {
	for d.running[opName] == nil && len(d.queues[opName]) > 0 {
		l := d.queues[opName][0]
		d.queues[opName] = d.queues[opName][1:]
		if err := d.startLocked(l, true); err != nil {
			d.finishLocked(l, func(r *api.Record) {
				r.State = api.StateFailed
				r.Message = "start: " + err.Error()
			})
		}
	}
}

// liveOfLocked returns the number of jobs queued or running that uid
// started.
func (d *Scheduler) liveOfLocked(uid uint32) int {
	n := 0
	for _, l := range d.live {
		if l.rec.CallerUID == uid {
			n++
		}
	}
	return n
}
