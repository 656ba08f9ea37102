package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// Start starts an existing unit and waits for its start job. For a service
// of Type oneshot, simple, exec or idle it then waits for the run to finish
// and reports it as Cmd.Wait does: an *ExitError if it failed, a *JobError
// if the job did not complete. For other units (notify, forking, targets,
// ...) it returns once the job is done, with a Status whose JobResult is
// "done". The unit is left as systemd leaves it; a unit already running is
// not restarted, and Start then waits for the run in progress. If ctx ends
// first, Start stops the unit and returns an error that wraps ctx.Err().
func Start(ctx context.Context, mgr *manager.Conn, name string) (*Status, error) {
	return start(ctx, mgr, name, nil)
}

// start is Start that tells invoked the invocation ID of each run that
// the start makes.
func start(ctx context.Context, mgr *manager.Conn, name string, invoked func(id string)) (*Status, error) {
	if err := unit.Validate(name); err != nil {
		return nil, err
	}
	r := &run{mgr: mgr, unit: name, state: state{}, invoked: invoked}
	r.watch = mgr.WatchProps(name, stateProps...)
	waits := false
	if svc, err := mgr.Properties(ctx, name, manager.ServiceIface); err == nil {
		r.state.merge(svc)
		switch r.state.str("Type") {
		case "oneshot", "simple", "exec", "idle":
			waits = true
		}
	}
	if u, err := mgr.Properties(ctx, name, manager.UnitIface); err != nil {
		r.watch.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	} else if u["LoadState"].Value() != "loaded" {
		r.watch.Close()
		return nil, fmt.Errorf("start %s: unit is %v (%v)", name, u["LoadState"].Value(), u["LoadError"].Value())
	}
	// Forget the previous run: only signals after the start describe this one.
	r.state = state{}
	// As for transient units, the call is not abandoned when ctx ends;
	// waitJob stops the unit then.
	call, done := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	job, err := mgr.StartUnit(call, name, "replace")
	done()
	if err != nil {
		r.watch.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	r.job = job
	if err := r.waitJob(ctx); err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return ee.Status, err
		}
		return nil, err
	}
	if !waits {
		r.release()
		return &Status{Unit: name, JobResult: "done", Attempts: 1}, nil
	}
	return r.wait(ctx)
}

// Attach waits for the run in progress of a transient unit that unitrun
// created earlier, possibly in another process (a daemon that restarted),
// and reports it as Cmd.Wait does; then it releases the unit, and its pin
// if it was made with Cmd.Pin. ended, if not nil, is told the outcome
// before the release, as Cmd.Exited is, so that a caller can store it
// while systemd still holds it. A unit whose run has already ended (kept
// by RemainAfterExit, or by its pin after a stop) is reported at once. A
// unit that is not loaded gives an error that wraps ErrCollected (its
// outcome is not in systemd), and one that never ran is released and
// gives an error that wraps ErrNeverRan.
func Attach(ctx context.Context, mgr *manager.Conn, name string, ended func(*Status, error)) (*Status, error) {
	st, _, err := AttachHeld(ctx, mgr, name, ended, nil)
	return st, err
}

// AttachHeld is Attach for a run that another may follow under the same
// unit name, as a retry's does: when hold, told the run's outcome (nil
// for a success), reports true, the unit is left loaded, with its outcome
// and its pin, and release, then not nil, releases it. The caller calls
// release just before the next run is created, as Cmd does through a
// retry's back-off, so that a process that dies meanwhile leaves the
// outcome for the next one to find.
func AttachHeld(ctx context.Context, mgr *manager.Conn, name string, ended func(*Status, error), hold func(error) bool) (st *Status, release func(), err error) {
	if err := unit.Validate(name); err != nil {
		return nil, nil, err
	}
	r := &run{mgr: mgr, unit: name, state: state{}, transient: true, ended: ended, hold: hold}
	r.watch = mgr.WatchProps(name, stateProps...)
	if err := r.reread(ctx); err != nil {
		r.abort()
		return nil, nil, err
	}
	r.pin = r.state.pinnedBy(name)
	r.findDropIn(ctx)
	if r.state.str("ActiveState") == "inactive" && !r.state.invoked() && r.jobGone() {
		r.release()
		return nil, nil, fmt.Errorf("%s: %w", name, ErrNeverRan)
	}
	st, err = r.wait(ctx)
	if r.held {
		release = r.release
	}
	return st, release, err
}
