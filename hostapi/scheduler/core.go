package scheduler

import (
	"context"
	"net/http"
	"sync"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/core"
)

// Scheduler implements core.Core, what the front ends see of it.
var _ core.Core = (*Scheduler)(nil)

// Ops returns the ops that new calls get, in config order.
func (d *Scheduler) Ops() []*config.Op { return d.ops.Load().list }

// OnFinish has fn called, under the daemon's lock, with a copy of each
// job's final record as it is stored; fn must not block.
func (d *Scheduler) OnFinish(fn func(*api.Record)) {
	d.mu.Lock()
	d.onFinish = append(d.onFinish, fn)
	d.mu.Unlock()
}

// Hold counts a caller of the job, queued or running, as one that the job
// belongs to until it calls release, once: a caller that waits for it (a
// front end's waiting call), or one whose connection stays. release(gone)
// says whether that caller went away before the job ended. When the last
// caller that holds a job whose op, as the job was called with it (a
// reload changes it for new calls only), has on_disconnect "stop" goes
// away, the job is canceled, its message saying so: callers that joined
// one job keep it for each other. A job that has ended holds no one.
// A caller whose connection the daemon closes itself, as it stops (after
// Close), has not gone away: its job goes on, for the next daemon.
func (d *Scheduler) Hold(id string) (release func(gone bool)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.live[id]
	if !ok {
		return func(bool) {}
	}
	l.held++
	var once sync.Once
	return func(gone bool) {
		once.Do(func() {
			d.mu.Lock()
			l.held--
			last := gone && !d.closed && l.held == 0 && d.live[id] == l && l.op != nil && l.op.OnDisconnect == "stop"
			d.mu.Unlock()
			if last {
				d.cancel(context.Background(), id, canceledOnDisconnect)
			}
		})
	}
}

// Metrics serves the daemon's Prometheus metrics (see metrics.go).
func (d *Scheduler) Metrics() http.Handler { return d.metrics.handler() }

// MaySee reports whether the caller may see the job: root, the caller
// that started it, and callers allowed to call its op may.
func (d *Scheduler) MaySee(c core.Caller, rec *api.Record) bool {
	return d.maySeeJob(c, rec.Op, rec.CallerUID)
}

// maySeeJob is MaySee for a job of op called by uid.
func (d *Scheduler) maySeeJob(c core.Caller, op string, uid uint32) bool {
	if c.UID == 0 || c.UID == uid {
		return true
	}
	o, ok := d.lookupOp(op)
	return ok && o.Allowed(c.UID, c.GIDs)
}
