// Package core is what the daemon's front ends (package hostapi/front) see
// of it: the Core interface, which the scheduler (*scheduler.Scheduler)
// implements, and the Caller whose calls it authorizes. The front ends
// and the scheduler both import core and neither imports the other.
package core

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
)

// Caller is who calls an op, as the kernel reports the peer of a unix
// socket (SO_PEERCRED): its uid, its gids and its pid.
type Caller struct {
	UID  uint32
	GIDs []uint32
	PID  int32
}

// ID is the caller's identity as put in place of "{caller}" in an op's env:
// "uid:<uid>".
func (c Caller) ID() string { return fmt.Sprintf("uid:%d", c.UID) }

// Core is all that the front ends (HTTP, SEQPACKET, D-Bus) use of the
// daemon. A front end is an adapter: it reads its caller's credentials,
// decodes a request, asks Core and encodes the answer. What a caller may
// do and see is Core's to decide (CallKeyed, MaySee, ListPage), so every
// front end applies the same rules.
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
	// Hold counts a caller that waits for the job, or whose connection
	// stays, until release; the last one gone cancels a job whose op has
	// on_disconnect "stop".
	Hold(id string) (release func(gone bool))
	Done(id string) <-chan struct{}
	Cancel(ctx context.Context, id string) (*api.Record, error)
	ListPage(ctx context.Context, c Caller, after string, limit int) ([]*api.Record, string, error)
	CopyOutput(ctx context.Context, w io.Writer, id string, offset int64, follow bool, flush func()) error
	// OnFinish has fn called with a copy of each job's final record.
	OnFinish(fn func(*api.Record))
	// Metrics serves the daemon's metrics (GET /metrics).
	Metrics() http.Handler
}
