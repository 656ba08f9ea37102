package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
	"github.com/unitrun/unitrun/unit/exit"
)

// outcome sets the final fields of a job's record.
type outcome func(*api.Record)

// execute runs the job to its end and returns how it ended. Canceling ctx
// stops the job's unit.
func (d *Scheduler) execute(ctx context.Context, l *liveJob) outcome {
	if l.op.Unit != "" {
		return d.startUnit(ctx, l)
	}
	return d.runExec(ctx, l, 0)
}

// runExec runs an exec op as the transient unit named in the record, its
// output appended to the job's output log, and the unit pinned
// (job.Cmd.Pin) so that systemd keeps its outcome, whoever stops it,
// until the daemon has recorded it: both outlive the daemon. done is the
// number of runs a retry policy already made (by a daemon that died
// since); the record counts each run before it starts. runExec records
// the outcome itself, before the unit is released, and returns nil.
func (d *Scheduler) runExec(ctx context.Context, l *liveJob, done int) outcome {
	id := l.rec.ID
	out, err := d.store.OpenOutput(id)
	if err != nil {
		return failed("output log: " + err.Error())
	}
	defer out.Close()
	argv := l.op.Argv(l.rec.Args)
	c := job.CommandContext(ctx, d.mgr, argv[0], argv[1:]...)
	c.Name = l.rec.Unit
	c.Description = fmt.Sprintf("unitrun op %s, job %s, caller %s", l.op.Name, id, l.caller.ID())
	c.Env = l.op.Environ(l.caller.ID(), d.LookupEnv)
	c.Stdout, c.Stderr = out, out
	c.Timeout = l.op.Timeout
	if p := retryPolicy(l.op); p != nil {
		p.Attempts -= done
		c.Retry = p
		c.Attempting = func(n int) { d.recordAttempt(l, done+n) }
	}
	c.Invoked = func(iid string) { d.recordInvocation(l, iid) }
	c.Properties = append(l.bind, unit.Property{Name: "SyslogIdentifier", Value: dbus.MakeVariant("unitrun-" + l.op.Name)})
	c.Pin = true
	// The outcome is recorded, and waiters answered, as soon as it is
	// known; the unit's release (its stop, and its pin's) follows. A
	// daemon that dies in between releases it in Recover. An outcome that
	// cannot be stored (the state dir is full) keeps the unit loaded,
	// pinned, until storeLater has stored it, or for the next daemon.
	released, kept := false, false
	c.Exited = func(st *job.Status, err error) {
		d.releasing.Add(1)
		released = true
		set := fromStatus(st, err)
		kept = d.finish(l, func(r *api.Record) {
			set(r)
			if st != nil {
				r.Attempts = done + st.Attempts
			}
		}, l.rec.Unit) != nil
	}
	c.Keep = func() bool { return kept }
	if c.Retry != nil {
		// An op with retry is declared safe to run again: with no mark,
		// a restarted daemon that finds no outcome runs it again.
		c.Run()
	} else {
		// A command that failed while starting ran too (it has a Status).
		err := c.Start()
		if err == nil || c.Status != nil {
			if err := d.store.MarkStarted(id); err != nil {
				d.Logf("hostapi: job %s: marking its unit created: %v", id, err)
			}
		}
		switch {
		case err == nil:
			c.Wait()
		case !released:
			// Exited reports a run that ended while starting; any other
			// failure to start is recorded here.
			d.finish(l, fromStatus(c.Status, err), "")
		}
	}
	if released {
		d.releasing.Done()
	}
	return nil
}

// recordAttempt stores the number of the run of a retried job about to
// start, so that a daemon that restarts knows how many runs are left.
func (d *Scheduler) recordAttempt(l *liveJob, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	l.rec.Attempts = n
	if err := d.store.Put(l.rec); err != nil {
		d.Logf("hostapi: job %s: storing attempt %d: %v", l.rec.ID, n, err)
	}
}

// recordInvocation stores the invocation ID of the job's run that systemd
// just announced, and counts the run if nothing counted it yet, so that
// the record of a running job shows them.
func (d *Scheduler) recordInvocation(l *liveJob, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || l.rec.State != api.StateRunning || l.rec.InvocationID == id {
		return
	}
	l.rec.InvocationID = id
	l.rec.Attempts = max(l.rec.Attempts, 1)
	if err := d.store.Put(l.rec); err != nil {
		d.Logf("hostapi: job %s: storing its invocation ID: %v", l.rec.ID, err)
	}
}

// startUnit writes the op's request file, when it has one, and starts its
// unit, waiting for the run as job.UnitCmd.Run does. A timeout stops the unit.
// What the run logged to the journal becomes the job's output log.
func (d *Scheduler) startUnit(ctx context.Context, l *liveJob) outcome {
	if l.op.RequestFile != "" {
		sep := "\n"
		if l.op.RequestFormat == "nul" {
			sep = "\x00"
		}
		var b strings.Builder
		for _, a := range l.rec.Args {
			b.WriteString(a + sep)
		}
		if err := atomicfile.Write(l.op.RequestFile, []byte(b.String()), 0o600); err != nil {
			return failed("request_file: " + err.Error())
		}
	}
	if l.op.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.op.Timeout)
		defer cancel()
	}
	u := job.Unit(d.mgr, l.op.Unit)
	u.Invoked = func(id string) { d.recordInvocation(l, id) }
	st, err := u.Run(ctx)
	if st != nil && st.InvocationID != "" {
		if err := d.copyJournal(context.WithoutCancel(ctx), l.rec.ID, st); err != nil {
			d.Logf("hostapi: job %s: copying the output of %s from the journal: %v", l.rec.ID, l.op.Unit, err)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		msg := fmt.Sprintf("timeout %v reached: unit %s stopped", l.op.Timeout, l.op.Unit)
		if errors.As(err, new(*job.GoesOnError)) {
			// The start joined a run in progress, not its own to stop.
			msg = fmt.Sprintf("timeout %v reached: stopped waiting for unit %s, whose run, in progress before the job's start, goes on", l.op.Timeout, l.op.Unit)
		}
		return func(r *api.Record) {
			fromStatus(st, err)(r)
			r.Result = "timeout"
			r.Message = msg
		}
	}
	return fromStatus(st, err)
}

// fromStatus returns the outcome of a run that job reported.
func fromStatus(st *job.Status, err error) outcome {
	return func(r *api.Record) {
		x := job.Ended(st, err)
		r.ExitCode, r.Signal = x.JSON()
		r.Result = x.Result
		ended := st != nil && st.Ran // the run's process exited or was killed
		if st != nil {
			r.InvocationID = st.InvocationID
			r.JobResult = st.JobResult
			r.Result = st.Result
			r.Attempts = st.Attempts
			if !st.FinishedAt.IsZero() {
				t := st.FinishedAt.UTC()
				r.FinishedAt = &t
			}
		}
		var je *job.JobError
		if errors.As(err, &je) {
			r.JobResult = je.Result
		}
		notExecuted := exit.NotExecuted(err)
		switch {
		case err == nil:
			r.State = api.StateSucceeded
			r.Message = "exit status 0"
			if ended {
				// A status that SuccessExitStatus= lists: "exit status 7".
				r.Message = st.How()
			}
		case errors.Is(err, job.ErrUnitExists):
			// A retry's next run could not take the unit's name: st
			// is the run before it, err says why no other followed.
			r.State = api.StateFailed
			r.Message = err.Error()
		case ended:
			r.State = api.StateFailed
			r.Message = st.String()
		case notExecuted != nil:
			r.State = api.StateFailed
			r.Message = notExecuted.Error()
		default:
			r.State = api.StateFailed
			r.Message = err.Error()
		}
	}
}

// failed returns the outcome of a job that could not run.
func failed(msg string) outcome {
	return func(r *api.Record) {
		r.State = api.StateFailed
		r.Message = msg
	}
}

// finish records the job's outcome, unless the daemon is closed, and
// returns the store's error when the record could not be stored: the job
// then stays live, its record as it was, and storeLater stores it and
// releases pinned (the job's unit, kept loaded for its outcome), if set.
func (d *Scheduler) finish(l *liveJob, set outcome, pinned string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	err := d.storeOutcomeLocked(l, set)
	if err != nil {
		d.storeLaterLocked(l, set, pinned, err)
	}
	return err
}

// finishLocked records the job's outcome (storeOutcomeLocked), or has
// storeLater record it when it cannot be stored now.
func (d *Scheduler) finishLocked(l *liveJob, set outcome) {
	if err := d.storeOutcomeLocked(l, set); err != nil {
		d.storeLaterLocked(l, set, "", err)
	}
}

// storeRetry is how often storeLater tries again to store an outcome.
var storeRetry = time.Second

// storeLaterLocked tries every storeRetry to store the outcome set of the
// job, whose store failed with err, until it is stored or the daemon is
// closed; once it is stored, it releases pinned, if set, as Recover
// releases the units of finished jobs. A state dir that was full takes
// the outcome once there is room. After a failed sync of the log nothing
// is stored again until the daemon is restarted (see store.Store): the
// unit then stays pinned, with its outcome, for the next daemon's
// Recover. Meanwhile the job is live and running to callers, who are
// never told an outcome its record does not hold.
func (d *Scheduler) storeLaterLocked(l *liveJob, set outcome, pinned string, err error) {
	d.Logf("hostapi: job %s: storing its outcome: %v; its unit %s is kept and the outcome stored once it can be", l.rec.ID, err, l.rec.Unit)
	go func() {
		for {
			time.Sleep(storeRetry)
			d.mu.Lock()
			if d.closed {
				d.mu.Unlock()
				return
			}
			err := d.storeOutcomeLocked(l, set)
			if err == nil && pinned != "" {
				d.releasing.Add(1)
			}
			d.mu.Unlock()
			if err != nil {
				continue
			}
			d.Log.Info(fmt.Sprintf("job %s: its outcome is stored at last", l.rec.ID), "job_id", l.rec.ID)
			if pinned != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				d.releaseUnit(ctx, pinned)
				d.releaseUnit(ctx, job.PinName(pinned))
				cancel()
				d.releasing.Done()
			}
			return
		}
	}()
}

// storeOutcomeLocked applies set to a copy of the job's record, marks it
// canceled, saying why, if it was canceled, adds the output tail and
// reboot_required, and stores it; if that fails it returns the error and
// leaves the job as it was. Once stored, the record is the job's, and the
// reboot marker is removed, so that a crash in between reports the reboot
// twice rather than never. Then it wakes the job's waiters and starts the
// next queued job of its op.
func (d *Scheduler) storeOutcomeLocked(l *liveJob, set outcome) error {
	r := copyRecord(l.rec)
	set(r)
	if l.canceled != "" && r.State != api.StateCanceled {
		r.State = api.StateCanceled
		r.Message = l.canceled + ": " + r.Message
	}
	if r.FinishedAt == nil {
		now := time.Now().UTC()
		r.FinishedAt = &now
	}
	if tail, err := d.store.Tail(r.ID, d.cfg.Limits.OutputTailBytes); err == nil {
		r.OutputTail = tail
	}
	marker := ""
	if l.op != nil && l.op.RebootMarker != "" {
		if _, err := os.Lstat(l.op.RebootMarker); err == nil {
			marker = l.op.RebootMarker
			r.RebootRequired = true
		}
	}
	if err := d.store.Put(r); err != nil {
		return err
	}
	l.rec = r
	if marker != "" {
		if err := os.Remove(marker); err != nil {
			d.Logf("hostapi: job %s: removing reboot marker: %v", r.ID, err)
		}
	}
	d.jobFinished(l)
	d.pruneLocked()
	delete(d.live, r.ID)
	d.idleLocked()
	close(l.done)
	if d.running[r.Op] == l {
		delete(d.running, r.Op)
		d.startNextLocked(r.Op)
	}
	return nil
}
