package job

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// runUnit starts an existing unit and waits for its start job, then for
// the run of a service of Type oneshot, simple, exec or idle, as
// UnitCmd.Run does, and tells invoked, if not nil, the invocation ID of
// each run that the start makes. A start that makes no run and joins the
// run in progress before it tells joined, if not nil, that run's
// invocation ID before it waits for it; if ctx ends, that run is left
// going on.
func runUnit(ctx context.Context, mgr *manager.Conn, name string, invoked, joined func(id string)) (*Status, error) {
	name, err := unit.Complete(name)
	if err != nil {
		return nil, err
	}
	r := &run{mgr: mgr, unit: name, state: state{}, invoked: invoked}
	r.watch = mgr.WatchProps(name, stateProps...)
	// Kept for this process (Ref) from before the start until the run's
	// end is read, as Wait keeps it: a unit of a file that nothing else
	// keeps is collected as soon as its run ends inactive, its outcome
	// with it, and a run that ends while the connection is down (a
	// daemon-reexec) would then be lost. The reference goes out beside
	// the reads (on a bus, on the same connection), so that it costs no
	// round trip of its own; RefUnit loads the unit, and a unit that
	// cannot be loaded is refused it, which the reads then report.
	refd := make(chan error, 1)
	go func() { refd <- mgr.Ref(ctx, name) }()
	waits := false
	// Both interfaces' reads go out at once, answered in one round trip;
	// a unit that is not a service has no Service properties.
	svcRead := mgr.Read(ctx, name, manager.ServiceIface, "Type", "Restart")
	u, _, err := properties(ctx, mgr, name, manager.UnitIface, "LoadState", "LoadError", "InvocationID", "ActiveState", "SubState", "Job")
	svc, _, svcErr := svcRead.Wait()
	if manager.IsConnLost(svcErr) {
		svc, _, svcErr = properties(ctx, mgr, name, manager.ServiceIface, "Type", "Restart")
	}
	r.ref = <-refd == nil
	if svcErr == nil {
		r.state.merge(svc)
		r.typ = r.state.str("Type")
		r.restarts = mayRestart(r.state)
		switch r.typ {
		case "oneshot", "simple", "exec", "idle":
			waits = true
		}
	}
	if err != nil {
		r.abort()
		return nil, fmt.Errorf("start %s: %w", name, err)
	} else if u["LoadState"].Value() != "loaded" {
		r.abort()
		return nil, fmt.Errorf("start %s: %s", name, loadError(u))
	}
	// Forget the previous run: only signals after the start describe this one.
	r.state = state{}
	// As for transient units, the call is not abandoned when ctx ends;
	// waitStarted stops the unit then, unless the start joined a run in
	// progress (running) or another's start job (shared).
	call, done := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	before, _ := u["InvocationID"].Value().([]byte)
	r.before = append([]byte{}, before...)
	switch u["ActiveState"].Value() {
	case "active", "activating", "reloading":
		// A run in progress: not one ended (exited, as RemainAfterExit=
		// keeps a service active), nor between a run and its restart
		// (auto-restart), which a start ends with a run of its own.
		sub := u["SubState"].Value()
		r.running = len(before) > 0 && sub != "exited" && sub != "auto-restart"
	}
	job, err := r.startUnit(call, before)
	done()
	if err != nil {
		r.abort()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	r.job = job
	// A start job pending before the call (another's start, not yet
	// running) that the call was merged into: the run it makes is that
	// start's, not this one's to stop.
	r.shared = job != "" && job == state(u).job()
	if waits && r.joins() && joined != nil {
		// Told now, not once the job is done: a oneshot's start job
		// is done when its run is.
		joined(hex.EncodeToString(r.before))
	}
	if job == "" {
		// Its start job ended while the connection was down.
		err = r.startedUnseen()
	} else {
		err = r.waitStarted(ctx)
	}
	if err != nil {
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
	if r.forgetEarlierRun(ctx, "done") || r.keptEarlierRun(ctx) {
		// The start job is done and the unit made no run (a condition
		// not met, or a unit active already): there is no run to wait
		// for.
		r.release()
		return &Status{Unit: name, JobResult: "done", Attempts: 1}, nil
	}
	return r.wait(ctx)
}

// keptEarlierRun reports whether the start, its job done, found the unit
// active with the run it had before, ended: a service that
// RemainAfterExit=yes keeps active once its command has exited, which
// systemd does not start again. Its job is done at once and it makes no
// run; the outcome the unit holds is its earlier run's. (A run still in
// progress is waited for: a start joins it.) It reads the unit again
// unless the state shows the invocation ID of a run that the start made.
func (r *run) keptEarlierRun(ctx context.Context) bool {
	if id, _ := r.state["InvocationID"].Value().([]byte); len(id) > 0 && !bytes.Equal(id, r.before) {
		return false
	}
	u, _, err := properties(ctx, r.mgr, r.unit, manager.UnitIface, "ActiveState", "SubState", "InvocationID")
	if err != nil {
		return false // wait tells what went wrong
	}
	r.merge(u)
	id, _ := r.state["InvocationID"].Value().([]byte)
	return len(r.before) > 0 && bytes.Equal(id, r.before) && r.state.str("ActiveState") == "active" && r.state.str("SubState") == "exited"
}

// startUnit starts the unit and returns its start job, or "" if the job
// ended unseen. A call lost with the connection to the manager (a
// daemon-reexec closes it) is made again once the manager is back,
// unless the unit shows that a start reached systemd: a job of the unit
// is pending, or its invocation ID is no longer before, the one it had
// before the call. As UnitCmd.Run joins a run in progress, it takes that
// run for its own.
func (r *run) startUnit(ctx context.Context, before []byte) (dbus.ObjectPath, error) {
	for {
		job, at, err := r.mgr.StartUnitAt(ctx, r.unit, "replace")
		if !manager.IsConnLost(err) {
			// What the watch holds from before the answer tells of
			// the unit before the start: the reads above loaded it,
			// and systemd may have collected it since.
			r.watch.DropBefore(at)
			return job, err
		}
		if r.reread(ctx) != nil {
			return "", err // the manager stays away: the call's own error says so
		}
		if id, _ := r.state["InvocationID"].Value().([]byte); r.state.job() != "" || !bytes.Equal(id, before) {
			return r.state.job(), nil
		}
		// As in create: no event queued before the call made again is read.
		r.state, r.readAt = state{}, nil
		r.watch.Close()
		r.watch = r.mgr.WatchProps(r.unit, stateProps...)
	}
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
	r.restarts = mayRestart(r.state)
	r.findDropIn(ctx)
	if r.state.str("ActiveState") == "inactive" && !r.state.invoked() && r.jobGone() {
		r.release()
		return nil, nil, fmt.Errorf("%s: %w", name, ErrNeverRan)
	}
	st, err = r.wait(ctx)
	if r.held {
		release = r.handOver
	}
	return st, release, err
}

// mayRestart reports whether the service whose properties s holds has a
// Restart= setting that may run it again after its run ends.
func mayRestart(s state) bool {
	v := s.str("Restart")
	return v != "" && v != "no"
}

// loadError says why a unit whose properties are u is not loaded: systemd's
// message of its LoadError (a D-Bus error name and a message), such as
// "Unit x.service not found.", else its LoadState.
func loadError(u map[string]dbus.Variant) string {
	if e, ok := u["LoadError"].Value().([]any); ok && len(e) == 2 {
		if msg, ok := e[1].(string); ok && msg != "" {
			return msg
		}
	}
	return fmt.Sprintf("unit is %v", u["LoadState"].Value())
}
