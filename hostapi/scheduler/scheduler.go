package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/internal/loglimit"
	"github.com/unitrun/unitrun/hostapi/store"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// Scheduler runs ops as jobs on a manager and keeps their records in a Store.
//
// A job's unit runs in systemd, not in the daemon: Close leaves running
// units alone, and a new Scheduler on the same store and manager re-attaches
// to them in Recover and records their real outcome.
type Scheduler struct {
	cfg   *config.Config
	store *Store
	mgr   *manager.Conn
	ops   atomic.Pointer[opSet] // the ops new calls get (see Reload)
	// LookupEnv is where env_passthrough variables come from; New
	// sets it to os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Log receives the daemon's events: each job's start, end and cancel
	// and each refused call, with the attributes job_id, op, unit and
	// caller_uid (see events.go), and, at level error, what the daemon
	// cannot tell a caller, such as a record it failed to store (Logf).
	// New sets it to slog.Default().
	Log *slog.Logger
	// PodStateDir, when set, is the pod state dir whose pods GET /metrics
	// counts by phase (unitrun_pods), reading their status files.
	PodStateDir string

	metrics  *daemonMetrics
	logLimit loglimit.Limiter    // lines logged for each reason of refusal
	onFinish []func(*api.Record) // called with a copy of each final record, under mu
	bootID   string              // the host's boot ID, which each job's record keeps

	mu      sync.Mutex
	live    map[string]*liveJob // jobs queued or running, by id
	running map[string]*liveJob // the running job of each exclusive op
	queues  map[string][]*liveJob
	keys    map[string]string // job id by idempotency key (keyOf)
	closed  bool
	// releasing counts the units of recorded jobs not yet released.
	releasing sync.WaitGroup
	// prunes counts the Prunes that startPruneLocked started and that run.
	prunes sync.WaitGroup

	mgrState mgrState
	// sincePrune counts the jobs finished since the last Prune that
	// startPruneLocked started; pruning says one runs.
	sincePrune int
	pruning    bool
	idle       *time.Timer // see idleLocked

	listing chan struct{} // a token for each listing that reads records (ListPage)
}

// liveJob is a job that is queued or running. Its rec is guarded by the
// Scheduler's mu; done is closed once the final record is stored.
type liveJob struct {
	rec      *api.Record
	op       *config.Op
	caller   core.Caller
	bind     []unit.Property // BindsTo= and After= the caller's unit
	done     chan struct{}
	cancel   context.CancelFunc
	canceled string // why the job was canceled, its message's prefix; "" until it is
	held     int    // callers that hold the job (Hold)
}

// New returns a Scheduler serving cfg's ops, storing records in store
// and running jobs on mgr. Call Recover before serving callers.
func New(cfg *config.Config, store *Store, mgr *manager.Conn) *Scheduler {
	d := &Scheduler{
		cfg: cfg, store: store, mgr: mgr,
		LookupEnv: os.LookupEnv,
		Log:       slog.Default(),
		live:      make(map[string]*liveJob),
		running:   make(map[string]*liveJob),
		queues:    make(map[string][]*liveJob),
		keys:      make(map[string]string),
		listing:   make(chan struct{}, maxListing),
	}
	d.ops.Store(newOpSet(cfg.Ops))
	if id, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		d.bootID = strings.TrimSpace(string(id))
	}
	d.metrics = newMetrics(d)
	return d
}

// Config returns the config the daemon was made with; Reload replaces its
// ops, not this value.
func (d *Scheduler) Config() *config.Config { return d.cfg }

// Op returns the named op, or an *Error with CodeUnknownOp.
func (d *Scheduler) Op(name string) (*config.Op, error) {
	op, ok := d.lookupOp(name)
	if !ok {
		return nil, errorf(api.CodeUnknownOp, fmt.Sprintf("op %q: no such op", name))
	}
	return op, nil
}

// Get returns the job's current record: an *Error with CodeNotFound when
// there is none.
func (d *Scheduler) Get(id string) (*api.Record, error) {
	d.mu.Lock()
	if l, ok := d.live[id]; ok {
		r := copyRecord(l.rec)
		d.mu.Unlock()
		return r, nil
	}
	d.mu.Unlock()
	r, err := d.store.Get(id)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidID) {
		return nil, errorf(api.CodeNotFound, fmt.Sprintf("job %q: no such job", id))
	}
	return r, err
}

// List returns every job's record, newest first.
func (d *Scheduler) List() ([]*api.Record, error) {
	recs, err := d.store.List()
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, r := range recs {
		if l, ok := d.live[r.ID]; ok {
			recs[i] = copyRecord(l.rec)
		}
	}
	return recs, err
}

// maxListing bounds the pages of records read at once for listings, so
// that callers listing in parallel, however many, hold at most this many
// pages of records in memory; further listings wait their turn.
const maxListing = 4

// ListPage returns a page of the records the caller may see, newest first:
// at most limit (1 to api.MaxPage), after the cursor after unless it is
// "", and the cursor of the next page, "" when this is the last. Records
// not visible to the caller are passed over before any is read. It waits
// for its turn among maxListing listings, until ctx ends. A limit out of
// range or a cursor that no listing gave is an *Error with CodeBadRequest.
func (d *Scheduler) ListPage(ctx context.Context, c core.Caller, after string, limit int) ([]*api.Record, string, error) {
	if limit < 1 || limit > api.MaxPage {
		return nil, "", errorf(api.CodeBadRequest, fmt.Sprintf("limit %d: must be a number from 1 to %d", limit, api.MaxPage))
	}
	var cur *store.Cursor
	if after != "" {
		pc, err := store.ParseCursor(after)
		if err != nil {
			return nil, "", errorf(api.CodeBadRequest, "after: "+err.Error())
		}
		cur = &pc
	}
	select {
	case d.listing <- struct{}{}:
		defer func() { <-d.listing }()
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	recs, next, err := d.store.Page(cur, limit, func(op string, uid uint32) bool { return d.maySeeJob(c, op, uid) })
	if err != nil {
		return nil, "", err
	}
	d.mu.Lock()
	for i, r := range recs {
		if l, ok := d.live[r.ID]; ok {
			recs[i] = copyRecord(l.rec)
		}
	}
	d.mu.Unlock()
	if next == nil {
		return recs, "", nil
	}
	return recs, next.String(), nil
}

// Wait waits until the job has ended and returns its final record. If ctx
// ends first it returns ctx's error; the job goes on.
func (d *Scheduler) Wait(ctx context.Context, id string) (*api.Record, error) {
	d.mu.Lock()
	l, ok := d.live[id]
	d.mu.Unlock()
	if !ok {
		return d.Get(id)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The final record, as finishLocked stored it.
	d.mu.Lock()
	defer d.mu.Unlock()
	return copyRecord(l.rec), nil
}

// Done returns a channel closed when the job has ended, or nil when it
// already has (or there is no such job).
func (d *Scheduler) Done(id string) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.live[id]; ok {
		return l.done
	}
	return nil
}

// Cancel cancels the job: a queued job ends at once as canceled, a running
// one has its unit stopped. It waits, until ctx ends, for the job to end
// and returns its record. Canceling a job that has ended returns its
// record unchanged.
func (d *Scheduler) Cancel(ctx context.Context, id string) (*api.Record, error) {
	return d.cancel(ctx, id, canceledByCaller)
}

// The reasons a job is canceled, which its record's message starts with.
const (
	canceledByCaller     = "canceled by a caller"
	canceledOnDisconnect = `canceled because its last waiting caller disconnected (on_disconnect = "stop")`
)

// cancel is Cancel, recording why (one of the canceled reasons) in the
// job's message unless the job was canceled already.
func (d *Scheduler) cancel(ctx context.Context, id, why string) (*api.Record, error) {
	d.mu.Lock()
	l, ok := d.live[id]
	if ok {
		if l.canceled == "" {
			d.jobCanceling(l)
			l.canceled = why
		}
		if l.rec.State == api.StateQueued {
			d.dequeueLocked(l)
			d.finishLocked(l, func(r *api.Record) {
				r.State = api.StateCanceled
				r.Message = l.canceled + " while queued"
			})
		} else if l.cancel != nil {
			l.cancel()
		}
	}
	d.mu.Unlock()
	return d.Wait(ctx, id)
}

// Close makes the daemon stop recording: jobs that end afterwards are left
// for a later Scheduler's Recover. It stops no running unit, but waits for the
// units of jobs already recorded to be released, and for a Prune started
// in the background to end. Close the manager connection after Close to
// end the goroutines that watch the units.
func (d *Scheduler) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.releasing.Wait()
	d.prunes.Wait()
}

// Logf logs what the daemon cannot tell a caller, formatted as by
// fmt.Sprintf, to Log at level error.
func (d *Scheduler) Logf(format string, args ...any) {
	d.Log.Error(fmt.Sprintf(format, args...))
}

func copyRecord(r *api.Record) *api.Record {
	c := *r
	c.Args = append([]string(nil), r.Args...)
	return &c
}
