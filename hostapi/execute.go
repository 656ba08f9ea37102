package hostapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
)

// outcome sets the final fields of a job's record.
type outcome func(*Record)

// execute runs the job to its end and returns how it ended. Canceling ctx
// stops the job's unit.
func (d *Daemon) execute(ctx context.Context, l *liveJob) outcome {
	if l.op.Unit != "" {
		return d.startUnit(ctx, l)
	}
	return d.runExec(ctx, l)
}

// execCommand is an ExecStart=/ExecStopPost= entry as systemd's D-Bus API
// takes it (signature (sasb)).
type execCommand struct {
	Path             string
	Args             []string
	UncleanIsFailure bool
}

// runExec runs an exec op as the transient unit named in the record, its
// output appended to the job's output log and its outcome written by
// ExecStopPost= to the job's outcome file, so that both outlive the daemon.
func (d *Daemon) runExec(ctx context.Context, l *liveJob) outcome {
	id := l.rec.ID
	out, err := d.store.OpenOutput(id)
	if err != nil {
		return failed("output log: " + err.Error())
	}
	defer out.Close()
	post, err := d.outcomeArgv(d.store.OutcomePath(id))
	if err != nil {
		return failed(err.Error())
	}
	argv := l.op.Argv(l.rec.Args)
	c := job.CommandContext(ctx, d.mgr, argv[0], argv[1:]...)
	c.Name = l.rec.Unit
	c.Description = fmt.Sprintf("unitrun op %s, job %s", l.op.Name, id)
	c.Env = l.op.Environ(l.caller.ID(), d.LookupEnv)
	c.Stdout, c.Stderr = out, out
	c.Timeout = l.op.Timeout
	if l.op.Retry.Attempts > 1 {
		c.Retry = &job.RetryPolicy{Attempts: l.op.Retry.Attempts, Delay: l.op.Retry.Delay, MaxDelay: l.op.Retry.MaxDelay}
	}
	c.Properties = append(l.bind, unit.Property{
		Name: "ExecStopPost", Value: dbus.MakeVariant([]execCommand{{Path: post[0], Args: post}}),
	})
	if c.Retry != nil {
		// An op with retry is declared safe to run again: with no mark,
		// a restarted daemon that finds no outcome runs it again.
		err = c.Run()
	} else {
		// A command that failed while starting ran too (it has a Status).
		err = c.Start()
		if err == nil || c.Status != nil {
			if err := d.store.markStarted(id); err != nil {
				d.Logf("hostapi: job %s: marking its unit created: %v", id, err)
			}
		}
		if err == nil {
			err = c.Wait()
		}
	}
	return fromStatus(c.Status, err)
}

// startUnit writes the op's request file, when it has one, and starts its
// unit, waiting for the run as job.Start does. A timeout stops the unit.
func (d *Daemon) startUnit(ctx context.Context, l *liveJob) outcome {
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
	st, err := job.Start(ctx, d.mgr, l.op.Unit)
	if errors.Is(err, context.DeadlineExceeded) {
		return func(r *Record) {
			fromStatus(st, err)(r)
			r.Result = "timeout"
			r.Message = fmt.Sprintf("timeout %v reached: unit %s stopped", l.op.Timeout, l.op.Unit)
		}
	}
	return fromStatus(st, err)
}

// fromStatus returns the outcome of a run that job reported.
func fromStatus(st *job.Status, err error) outcome {
	return func(r *Record) {
		if st != nil {
			r.InvocationID = st.InvocationID
			r.JobResult = st.JobResult
			r.Result = st.Result
			r.Attempts = st.Attempts
			switch {
			case st.Signal != 0:
				r.Signal = strings.TrimPrefix(job.SignalName(st.Signal), "SIG")
			case st.JobResult == "done" || st.Result != "":
				code := st.ExitCode
				r.ExitCode = &code
			}
			if !st.FinishedAt.IsZero() {
				t := st.FinishedAt.UTC()
				r.FinishedAt = &t
			}
		}
		var je *job.JobError
		if errors.As(err, &je) {
			r.JobResult = je.Result
		}
		switch {
		case err == nil:
			r.State = StateSucceeded
			r.Message = "exit status 0"
		case st != nil:
			r.State = StateFailed
			r.Message = st.String()
		default:
			r.State = StateFailed
			r.Message = err.Error()
		}
	}
}

// fromOutcome returns the outcome that the unit's ExecStopPost= recorded.
func fromOutcome(o Outcome) outcome {
	return func(r *Record) {
		r.JobResult = "done"
		r.Result = o.ServiceResult
		r.State = StateFailed
		switch o.ExitCode {
		case "exited":
			var code int
			fmt.Sscan(o.ExitStatus, &code)
			r.ExitCode = &code
			r.Message = "exit status " + o.ExitStatus
			if code == 0 && o.ServiceResult == "success" {
				r.State = StateSucceeded
			}
		case "killed", "dumped":
			r.Signal = o.ExitStatus
			r.Message = "signal: SIG" + o.ExitStatus
		default:
			r.Message = "no main process ran"
		}
		if o.ServiceResult != "success" && o.ServiceResult != "exit-code" && o.ServiceResult != "signal" {
			r.Message += " (result " + o.ServiceResult + ")"
		}
	}
}

// failed returns the outcome of a job that could not run.
func failed(msg string) outcome {
	return func(r *Record) {
		r.State = StateFailed
		r.Message = msg
	}
}

// finish records the job's outcome, unless the daemon is closed.
func (d *Daemon) finish(l *liveJob, set outcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.finishLocked(l, set)
}

// finishLocked applies set to the job's record, marks it canceled if a
// caller canceled it, adds the output tail and reboot_required, stores the
// record, then removes the reboot marker, so that a crash in between
// reports the reboot twice rather than never. Then it wakes the job's
// waiters and starts the next queued job of its op.
func (d *Daemon) finishLocked(l *liveJob, set outcome) {
	set(l.rec)
	if l.canceled && l.rec.State != StateCanceled {
		l.rec.State = StateCanceled
		l.rec.Message = "canceled by a caller: " + l.rec.Message
	}
	if l.rec.FinishedAt == nil {
		now := time.Now().UTC()
		l.rec.FinishedAt = &now
	}
	if tail, err := d.store.Tail(l.rec.ID, d.cfg.Limits.OutputTailBytes); err == nil {
		l.rec.OutputTail = tail
	}
	marker := ""
	if l.op != nil && l.op.RebootMarker != "" {
		if _, err := os.Lstat(l.op.RebootMarker); err == nil {
			marker = l.op.RebootMarker
			l.rec.RebootRequired = true
		}
	}
	if err := d.store.Put(l.rec); err != nil {
		d.Logf("hostapi: job %s: storing its outcome: %v", l.rec.ID, err)
	} else if marker != "" {
		if err := os.Remove(marker); err != nil {
			d.Logf("hostapi: job %s: removing reboot marker: %v", l.rec.ID, err)
		}
	}
	d.pruneLocked()
	delete(d.live, l.rec.ID)
	close(l.done)
	if d.running[l.rec.Op] == l {
		delete(d.running, l.rec.Op)
		d.startNextLocked(l.rec.Op)
	}
}
