package hostapi

import (
	"context"
	"io"
	"net/http"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
)

// Core is all that the front ends (HTTP, SEQPACKET, D-Bus) use of the
// daemon; *Daemon implements it. A front end is an adapter: it reads its
// caller's credentials, decodes a request, asks Core and encodes the
// answer. What a caller may do and see is Core's to decide (CallKeyed,
// MaySee, ListPage), so every front end applies the same rules.
type Core interface {
	// Config is the config the daemon started with: the front ends keep
	// to its [limits].
	Config() *config.Config
	// Ops are the ops that new calls get, in config order.
	Ops() []*config.Op
	CallKeyed(ctx context.Context, c Caller, op string, args []string, key string) (*api.Record, error)
	Get(id string) (*api.Record, error)
	MaySee(c Caller, r *api.Record) bool
	Wait(ctx context.Context, id string) (*api.Record, error)
	StopsOnDisconnect(id string) bool
	Done(id string) <-chan struct{}
	Cancel(ctx context.Context, id string) (*api.Record, error)
	ListPage(ctx context.Context, c Caller, after string, limit int) ([]*api.Record, string, error)
	CopyOutput(ctx context.Context, w io.Writer, id string, offset int64, follow bool, flush func()) error
	// OnFinish has fn called with a copy of each job's final record.
	OnFinish(fn func(*api.Record))
	// Metrics serves the daemon's metrics (GET /metrics).
	Metrics() http.Handler
}

var _ Core = (*Daemon)(nil)

// Ops returns the ops that new calls get, in config order.
func (d *Daemon) Ops() []*config.Op { return d.ops.Load().list }

// OnFinish has fn called, under the daemon's lock, with a copy of each
// job's final record as it is stored; fn must not block.
func (d *Daemon) OnFinish(fn func(*api.Record)) {
	d.mu.Lock()
	d.onFinish = append(d.onFinish, fn)
	d.mu.Unlock()
}

// StopsOnDisconnect reports whether the job is queued or running and its
// op, as the job was called with it (a reload changes it for new calls
// only), has on_disconnect "stop": a front end then cancels the job when
// the caller that waits for it goes away.
func (d *Daemon) StopsOnDisconnect(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.live[id]
	return ok && l.op != nil && l.op.OnDisconnect == "stop"
}

// Metrics serves the daemon's Prometheus metrics (see metrics.go).
func (d *Daemon) Metrics() http.Handler { return d.metrics.handler() }

// MaySee reports whether the caller may see the job: root, the caller
// that started it, and callers allowed to call its op may.
func (d *Daemon) MaySee(c Caller, rec *api.Record) bool {
	return d.maySeeJob(c, rec.Op, rec.CallerUID)
}

// maySeeJob is MaySee for a job of op called by uid.
func (d *Daemon) maySeeJob(c Caller, op string, uid uint32) bool {
	if c.UID == 0 || c.UID == uid {
		return true
	}
	o, ok := d.lookupOp(op)
	return ok && o.Allowed(c.UID, c.GIDs)
}
