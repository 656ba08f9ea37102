package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
)

// Log attribute keys of job events; the journal handler makes them the
// fields JOB_ID=, OP=, UNIT=, CALLER_UID=, STATE=, RESULT= and REASON=.
const (
	logJobID     = "job_id"
	logOp        = "op"
	logUnit      = "unit"
	logCallerUID = "caller_uid"
)

// jobAttrs are the attributes of every event of a job.
func jobAttrs(r *api.Record) []any {
	return []any{logJobID, r.ID, logOp, r.Op, logUnit, r.Unit, logCallerUID, r.CallerUID}
}

// jobQueued reports a job queued behind the running job of its op.
func (d *Scheduler) jobQueued(l *liveJob) {
	d.Log.Debug(fmt.Sprintf("job %s of op %s queued", l.rec.ID, l.rec.Op), jobAttrs(l.rec)...)
}

// jobStarted reports a job whose unit is being started: counted and logged.
func (d *Scheduler) jobStarted(l *liveJob) {
	d.metrics.jobStarted(l.rec)
	d.Log.Info(fmt.Sprintf("job %s of op %s started as %s for uid %d", l.rec.ID, l.rec.Op, l.rec.Unit, l.rec.CallerUID), jobAttrs(l.rec)...)
}

// jobFinished reports a job's final record: counted and logged, a failed
// job at level warn.
func (d *Scheduler) jobFinished(l *liveJob) {
	r := l.rec
	d.metrics.jobFinished(r)
	for _, fn := range d.onFinish {
		fn(copyRecord(r))
	}
	level := slog.LevelInfo
	if r.State == api.StateFailed {
		level = slog.LevelWarn
	}
	d.Log.Log(context.Background(), level, fmt.Sprintf("job %s of op %s %s: %s", r.ID, r.Op, r.State, r.Message),
		append(jobAttrs(r), "state", string(r.State), "result", r.Result)...)
}

// jobCanceling reports a caller's cancel of a queued or running job.
func (d *Scheduler) jobCanceling(l *liveJob) {
	d.Log.Info(fmt.Sprintf("job %s of op %s canceled while %s", l.rec.ID, l.rec.Op, l.rec.State), jobAttrs(l.rec)...)
}

// callRefused reports a refused call, if err is one: counted by its code
// and logged at level warn, at most a line a second for each code.
func (d *Scheduler) callRefused(c core.Caller, op string, err error) {
	if err == nil {
		return
	}
	code := api.CodeInternal
	var e *api.Error
	if errors.As(err, &e) {
		code = e.Code
	}
	d.metrics.callRefused(code)
	d.logLimit.Warn(d.Log, "call "+code, fmt.Sprintf("call of op %s by uid %d refused: %v", op, c.UID, err),
		logOp, op, logCallerUID, c.UID, "reason", code)
}
