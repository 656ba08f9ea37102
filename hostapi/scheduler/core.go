package scheduler

import (
	"net/http"

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

// StopsOnDisconnect reports whether the job is queued or running and its
// op, as the job was called with it (a reload changes it for new calls
// only), has on_disconnect "stop": a front end then cancels the job when
// the caller that waits for it goes away.
func (d *Scheduler) StopsOnDisconnect(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.live[id]
	return ok && l.op != nil && l.op.OnDisconnect == "stop"
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
