package job

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// run is one attempt: one unit, watched from before its start until it is
// collected.
type run struct {
	mgr   *manager.Conn
	unit  string
	watch *manager.Watch
	job   dbus.ObjectPath
	state state
	// readAt stamps the last read of each interface's properties: the
	// signals received before it are older than the state.
	readAt map[string]manager.Stamp
	stdio
	transient bool   // a unit unitrun created, to be released after the run
	ref       bool   // the unit is kept for this process (AddRef=yes) until abort
	fixed     bool   // the unit's name is used again (Cmd.Name, a hand-over): release waits until it is free
	typ       string // the service's Type=, if known ("exec" for unitrun's own)
	// restarts says the service's Restart= may restart it: its run ends
	// for good only when systemd makes no further run (waitForGood).
	restarts bool
	pin      string // the unit's pin (Cmd.Pin), stopped at the release
	dropIn   string // the unit's drop-in, if it needed one
	// dropInInfo identifies the very file dropIn that the run wrote.
	dropInInfo os.FileInfo
	unlock     func()  // releases the name's lock (see claim), while held
	canceled   *Status // how the run ended when a cancel came during its start
	// before is, for UnitCmd.Run, the unit's invocation ID before its
	// call: a state that still has it describes an earlier run, not this
	// start's.
	before []byte
	// running says, for UnitCmd.Run, that the unit was active, activating
	// or reloading when the start was asked: a run was in progress, which
	// the start joins if it makes none of its own (joins).
	running bool
	// joined says the start joined the run in progress before it, and
	// shared that its call was merged into another's start job pending
	// before it: either way the run is not this start's to stop when
	// ctx ends.
	joined, shared bool
	// ended, if set, is told the run's outcome before the unit is released.
	ended func(*Status, error)
	// hold, if set, says whether wait, or waitStarted for a run that ended
	// while starting, leaves the unit of a run that ended with err
	// loaded, for the caller to release; held says it did.
	hold func(err error) bool
	held bool
	// invoked, if set, is told the invocation ID (hex) of each run of
	// the unit that a signal or a re-read announces.
	invoked func(id string)
}

// start registers the watch, creates the unit (and the aux units beside
// it) and waits for its start job.
func (r *run) start(ctx context.Context, props []unit.Property, aux ...manager.Aux) error {
	r.transient = true
	r.state = state{}
	r.watch = r.mgr.WatchProps(r.unit, stateProps...)
	// The call is not abandoned when ctx ends: systemd may already have
	// made the unit, and only its answer says so. waitStarted then stops it.
	call, done := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	job, err := r.create(call, props, aux)
	done()
	r.unclaim()
	r.closeAfterStart()
	if err != nil {
		r.watch.Close()
		r.closeAfterWait()
		r.removeDropIn()
		if manager.IsUnitExists(err) || errors.Is(err, ErrUnitExists) {
			return fmt.Errorf("%s: %w", r.unit, ErrUnitExists)
		}
		// systemd makes the unit, with AddRef=yes's reference, before it
		// queues the start job, and keeps it when it refuses the job (a
		// dependency not found, RefuseManualStart=yes, ...): inactive, it
		// would stay loaded under its name while this process is connected.
		r.unref()
		return fmt.Errorf("start %s: %w", r.unit, err)
	}
	r.job = job
	if job == "" {
		// Its start job ended while the connection was down.
		return r.startedUnseen()
	}
	return r.waitStarted(ctx)
}

// create makes the unit (and the aux units beside it) and returns its
// start job, or "" if the job ended unseen. A call lost with the
// connection to the manager (a daemon-reexec closes it) is made again
// once the manager is back, unless the unit shows that it reached
// systemd: it is loaded and carries this run's mark (runMark). So a
// command never runs twice, and a unit that someone else made meanwhile
// is never taken for ours: that one is ErrUnitExists.
func (r *run) create(ctx context.Context, props []unit.Property, aux []manager.Aux) (dbus.ObjectPath, error) {
	mark := runMark()
	props = append(props, mark)
	for {
		job, err := startTransient(r.mgr, ctx, r.unit, "fail", props, aux...)
		if !manager.IsConnLost(err) {
			return job, err
		}
		loaded, rerr := r.loaded(ctx)
		if rerr == nil && loaded {
			rerr = r.reread(ctx)
		}
		switch {
		case rerr != nil:
			return "", err // the manager stays away: the call's own error says so
		case !loaded:
			// A new Watch: the events queued in the old one (the
			// reconnection, which waitStarted would answer by reading the
			// unit anew) are older than the call made again, and a
			// read then would return a state that the signals of the
			// unit's start, still on their way, would take back.
			r.watch.Close()
			r.watch = r.mgr.WatchProps(r.unit, stateProps...)
			continue
		case r.state.marked(mark):
			return r.state.job(), nil
		}
		return "", ErrUnitExists
	}
}

// startTransient is manager.Conn.StartTransientUnit; a test replaces it
// to lose a call (export_test.go).
var startTransient = (*manager.Conn).StartTransientUnit

// runMark returns a property that marks one run's unit as made by that
// run: a journal field (LogExtraFields=) UNITRUN_RUN= with 16 random hex
// digits, which systemd adds to what the unit logs to the journal and
// which changes nothing else.
func runMark() unit.Property {
	var b [8]byte
	rand.Read(b[:]) // never fails: crypto/rand.Read aborts the program instead
	field := markField + "=" + hex.EncodeToString(b[:])
	return unit.Property{Name: "LogExtraFields", Value: dbus.MakeVariant([][]byte{[]byte(field)})}
}

// markField is the journal field of runMark.
const markField = "UNITRUN_RUN"

// loaded waits for the manager to be back after a start call lost with
// the connection and reports whether the unit is loaded, without loading
// it: a unit loaded by a read would be collected later, and its signals
// then describe another unit than the one a new call makes. Calls made in
// a manager's last instant before a daemon-reexec were either carried out
// before its state was saved or never read, and the manager answers again
// only once that state is loaded, so the answer is exact.
func (r *run) loaded(ctx context.Context) (bool, error) {
	ok, err := r.mgr.Loaded(ctx, r.unit)
	for manager.IsConnLost(err) && sleep(ctx, releaseRetry) {
		ok, err = r.mgr.Loaded(ctx, r.unit)
	}
	return ok, err
}

// startedUnseen returns the outcome of a start job that ended while the
// connection to the manager was down, as the state read anew shows it:
// nil if the unit is active or its command ran (Wait reports how), else a
// *JobError, the unit released.
func (r *run) startedUnseen() error {
	if r.state.ranCommand() || r.state.str("ActiveState") == "active" {
		return nil
	}
	r.release()
	return &JobError{Unit: r.unit, Result: "unknown (the connection to the manager broke while the job ran)"}
}

// waitStarted waits for the start job to be removed. A job that did not
// complete is a *JobError, unless the command itself ran and failed (a
// oneshot), which is an *ExitError.
func (r *run) waitStarted(ctx context.Context) error {
	result, collected, err := r.waitJob(ctx, r.job)
	switch {
	case err != nil && ctx.Err() != nil:
		if r.shared || r.joins() {
			r.abort()
			return goesOn(r.unit, ctx.Err())
		}
		r.canceled = r.cancel()
		return fmt.Errorf("%s: canceled: %w", r.unit, ctx.Err())
	case err != nil:
		r.abort()
		return err
	case collected != nil:
		r.abort()
		return collected
	case result == "":
		return r.startedUnseen()
	case result == "done":
		return nil
	}
	noRun := r.forgetEarlierRun(ctx, result)
	if r.restarts && r.state.ranCommand() {
		// The command ran and ended while starting, and systemd may run
		// it again: wait follows the restarts and reports the last run.
		return nil
	}
	if r.state.ran() {
		// The command ran and ended while starting (a fast failure
		// under Type=exec, or a oneshot): its final state and
		// Result follow the job's removal.
		r.waitEnded(ctx)
	}
	// Read the outcome before release: resetting the unit changes it.
	st := r.state.status(r.unit, r.jobResult(result))
	if x := r.execFailure(ctx, st.JobResult); x != nil {
		st, err = x, &ExitError{x}
	} else if r.state.ranCommand() {
		err = &ExitError{st}
	} else {
		je := &JobError{Unit: r.unit, Result: result, Reason: r.setupFailure(ctx)}
		if res := r.state.str("Result"); res != "success" {
			je.UnitResult = res
		}
		switch {
		case noRun && je.Reason == "" && je.UnitResult == startLimitHit:
			je.Reason = "job " + result + ", result start-limit-hit: systemd made no run, the unit was started more often than its start limit allows (StartLimitBurst= in StartLimitIntervalSec=; systemctl reset-failed lifts it)"
		case noRun && je.Reason == "":
			je.Reason = "job " + result + ": systemd made no run (its start limit, a condition or a dependency refused the start; systemctl status tells which)"
		}
		err = je
	}
	if r.ended != nil {
		r.ended(st, err)
	}
	if r.hold != nil && r.hold(err) {
		r.held = true // as in wait: a retry follows
		return err
	}
	r.release()
	return err
}

// startLimitHit is the service's Result after its start limit refused a
// start (StartLimitBurst=, StartLimitIntervalSec=).
const startLimitHit = "start-limit-hit"

// jobResult returns what a start job that systemd removed with result
// did. Under Type=exec, systemd 252 can fail the start job of a command
// that exits at once although the command ran (the race that systemd's
// TEST-07-PID1 type-exec-parallel was written for): such a job ran, and
// reads "done". A command that never got as far as its own code (systemd's
// setup exit statuses, 203 for a failed exec) keeps the job's result.
func (r *run) jobResult(result string) string {
	if result == "failed" && r.typ == "exec" && r.state.ranCommand() {
		return "done"
	}
	return result
}

// next returns the next event, applying property changes to the state. A
// done ctx is not an error here when the unit must still be released.
func (r *run) next(ctx context.Context) (manager.Event, error) {
	ev, err := r.watch.Next(ctx)
	if err != nil {
		return ev, err
	}
	if ev.Kind == manager.EventClosed {
		return ev, manager.ErrClosed
	}
	r.apply(ev)
	return ev, nil
}

// apply applies an event's property changes to the state.
func (r *run) apply(ev manager.Event) {
	if ev.Kind != manager.EventChanged {
		return
	}
	if at, ok := r.readAt[ev.Interface]; ok && ev.Stamp.Before(at) {
		return // older than the state read since: it would take it back
	}
	r.merge(ev.Props)
}

// waitJob waits, as manager.Watch.WaitJob does, until job is removed,
// keeping the state as the events and, after a reconnect, a read anew
// (reread) show it. It returns the job's result, "" if it ended unseen,
// and the error of the reread that found the unit collected, if one did.
func (r *run) waitJob(ctx context.Context, job dbus.ObjectPath) (result string, collected, err error) {
	result, err = r.watch.WaitJob(ctx, job, func(ev manager.Event) {
		r.apply(ev)
		if ev.Kind == manager.EventReconnected {
			collected = r.reread(ctx)
		}
	})
	return result, collected, err
}

// reread refreshes the state after a reconnect, when signals were missed.
// The Unit interface is read first: a run that ends between the two reads
// then shows an ActiveState that has not ended yet (the signals that
// follow say when it has), never an ended ActiveState beside the Service
// properties (Result, ExecMainStatus) of before the end. A read lost with
// the connection (the manager re-executing again) is made again once the
// manager is back.
func (r *run) reread(ctx context.Context) error {
	for _, iface := range []string{manager.UnitIface, manager.ServiceIface} {
		props, at, err := properties(ctx, r.mgr, r.unit, iface)
		if err != nil {
			return fmt.Errorf("%s: re-read after reconnect: %w", r.unit, err)
		}
		r.merge(props)
		if r.readAt == nil {
			r.readAt = map[string]manager.Stamp{}
		}
		r.readAt[iface] = at
	}
	if r.state.str("LoadState") == "not-found" {
		return fmt.Errorf("%s: %w", r.unit, ErrCollected)
	}
	return nil
}

// properties reads the unit's properties on one interface, all or those
// named, as manager.Conn.PropertiesAt does; a read lost with the
// connection (the manager re-executing) is made again once the manager
// is back.
func properties(ctx context.Context, mgr *manager.Conn, name, iface string, names ...string) (map[string]dbus.Variant, manager.Stamp, error) {
	props, at, err := mgr.PropertiesAt(ctx, name, iface, names...)
	for manager.IsConnLost(err) && sleep(ctx, releaseRetry) {
		props, at, err = mgr.PropertiesAt(ctx, name, iface, names...)
	}
	return props, at, err
}

// merge applies properties to the state and tells invoked of an
// invocation ID among them.
func (r *run) merge(props map[string]dbus.Variant) {
	r.state.merge(props)
	if id, ok := props["InvocationID"].Value().([]byte); ok && len(id) > 0 && r.invoked != nil {
		r.invoked(hex.EncodeToString(id))
	}
}

// forgetEarlierRun drops from the state the outcome of the unit's earlier
// run, if UnitCmd.Run's call made no run of its own: a start refused by
// systemd's start limit, a condition or a dependency leaves the unit
// inactive or failed with the invocation ID it had before, and with that
// run's exit status, which is not this start's. It reads the unit again
// before it judges, and reports whether it dropped anything. It keeps the
// unit's Result where it is start-limit-hit and the start job failed
// (jobResult): systemd sets that Result only when its start limit refuses
// a start, and a start that a condition or a dependency refuses ends its
// job otherwise (done, dependency), so it is this start's. (systemd sets
// it only over a Result of success: a unit that had failed keeps its
// earlier run's, which is dropped.)
func (r *run) forgetEarlierRun(ctx context.Context, jobResult string) bool {
	earlier := func() bool {
		id, _ := r.state["InvocationID"].Value().([]byte)
		switch r.state.str("ActiveState") {
		case "inactive", "failed":
			return r.before != nil && bytes.Equal(id, r.before)
		}
		return false
	}
	if !earlier() {
		return false
	}
	r.reread(ctx)
	if !earlier() {
		return false
	}
	for _, p := range []string{"InvocationID", "Result", "ExecMainCode", "ExecMainStatus", "ExecMainPID", "ExecMainStartTimestamp", "ExecMainExitTimestamp"} {
		if p != "Result" || jobResult != "failed" || r.state.str(p) != startLimitHit {
			delete(r.state, p)
		}
	}
	return true
}

// jobGone reports whether the unit has no job pending (read after reconnect).
func (r *run) jobGone() bool { return !manager.JobPending(r.state) }

// wait waits for the run to end, through the restarts of a service that
// may restart (restarts), and returns the Status of its last run; the
// error is nil for a success, an *ExitError otherwise, or wraps ctx.Err()
// if ctx ended the run.
func (r *run) wait(ctx context.Context) (*Status, error) {
	waitEnd := r.waitEnded
	if r.restarts {
		waitEnd = r.waitForGood
	}
	if err := waitEnd(ctx); err != nil {
		if ctx.Err() != nil && (r.joined || r.shared) {
			r.abort()
			return nil, goesOn(r.unit, ctx.Err())
		}
		if ctx.Err() != nil {
			st := r.cancel()
			return st, fmt.Errorf("%s: canceled: %w", r.unit, ctx.Err())
		}
		r.abort()
		return nil, err
	}
	r.readSuccessExit(ctx)
	st := r.state.status(r.unit, "done")
	r.explainExec(ctx, st)
	var err error
	if !st.Success() {
		err = &ExitError{st}
	}
	if r.ended != nil {
		r.ended(st, err)
	}
	if r.hold != nil && r.hold(err) {
		r.held = true
		return st, err
	}
	r.release()
	if err == nil {
		err = r.copyError()
	}
	return st, err
}

// readSuccessExit reads the unit's SuccessExitStatus= into the state
// where the run's end needs it to tell a success (state.mayBeListed) and
// the state lacks it: systemd never signals it (it does not change while
// the unit is loaded), so only a read gets it. It must come before the
// release. A read that fails leaves it out: the run is then told by its
// exit status alone.
func (r *run) readSuccessExit(ctx context.Context) {
	if _, ok := r.state["SuccessExitStatus"]; ok || !r.state.mayBeListed() {
		return
	}
	if props, _, err := properties(ctx, r.mgr, r.unit, manager.ServiceIface, "SuccessExitStatus"); err == nil {
		r.state.merge(props)
	}
}

// waitEnded waits until the unit's state shows the run has ended. systemd
// sends a unit's PropertiesChanged for the type's interface before the one
// for org.freedesktop.systemd1.Unit, so when ActiveState says the run ended,
// the Service properties already received (Result, ExecMainCode,
// ExecMainStatus) are final.
func (r *run) waitEnded(ctx context.Context) error {
	for !r.state.ended() {
		if err := r.step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// step takes the next event into the state, reading the unit anew after a
// reconnect.
func (r *run) step(ctx context.Context) error {
	ev, err := r.next(ctx)
	if err != nil {
		return err
	}
	if ev.Kind == manager.EventReconnected {
		return r.reread(ctx)
	}
	return nil
}

// joins reports whether UnitCmd.Run's start made no run of its own and
// joined the one in progress when it was asked (running): the unit's
// invocation ID, read anew once the start call is answered, is still the
// one it had before the start. A start job on a unit already active is
// done at once and one on a unit activating (a oneshot's run) is merged
// with the job that started it: neither makes a run. It sets joined.
func (r *run) joins() bool {
	if r.joined || !r.running {
		return r.joined
	}
	ctx, done := context.WithTimeout(context.Background(), cleanupTimeout)
	defer done()
	u, _, err := properties(ctx, r.mgr, r.unit, manager.UnitIface, "InvocationID")
	if err != nil {
		return false // as before the start: the run is taken for this start's
	}
	id, _ := u["InvocationID"].Value().([]byte)
	r.joined = len(id) > 0 && bytes.Equal(id, r.before)
	return r.joined
}

// GoesOnError is the error of UnitCmd.Wait, and of UnitCmd.Run when its
// start joined a run in progress, once ctx has ended the wait: the unit
// is left as it is, its run going on. It wraps ctx's error.
type GoesOnError struct {
	Unit string
	Err  error
}

func (e *GoesOnError) Error() string {
	return "stopped waiting for " + e.Unit + ", which goes on: " + e.Err.Error()
}

func (e *GoesOnError) Unwrap() error { return e.Err }

// goesOn is the GoesOnError of a wait for unit that err (ctx's) ended.
func goesOn(unit string, err error) error { return &GoesOnError{Unit: unit, Err: err} }

// cancel stops the unit, waits for it to be gone, releases it and returns
// what its state then says.
func (r *run) cancel() *Status {
	ctx, done := context.WithTimeout(context.Background(), cleanupTimeout)
	defer done()
	if job, err := r.mgr.StopUnit(ctx, r.unit, "replace"); err == nil {
		r.waitJob(ctx, job)
	}
	st := r.state.status(r.unit, "done")
	r.release()
	return st
}

// release lets systemd collect the unit: a unit left active (exited) is
// stopped, waiting for the stop job so that none of its processes is left,
// and a failed one is reset (its processes are gone already); then its pin,
// if it has one, is stopped; systemd then unloads it. A call lost with the
// connection (the manager re-executing) is made again once the unit's
// state is read anew. Last, release closes the watch and waits for the
// output to be copied.
func (r *run) release() {
	ctx, done := context.WithTimeout(context.Background(), cleanupTimeout)
	defer done()
	for r.transient && ctx.Err() == nil {
		err := r.releaseOnce(ctx)
		var reply dbus.Error
		if err == nil || errors.As(err, &reply) {
			break // done, or systemd's own answer: nothing to retry
		}
		time.Sleep(releaseRetry)
		if r.reread(ctx) != nil {
			break // collected meanwhile, or the manager stays away
		}
	}
	if r.transient {
		r.unpin(ctx)
		r.removeDropIn()
	}
	r.unref()
	if r.fixed {
		// The caller's next run of the name must find it free.
		r.waitCollected()
	}
	r.abort()
}

// handOver releases the unit of a run that another run of the same name
// follows, as a retry's does, and waits until systemd has collected the
// unit, so that the next run finds its name free (see waitCollected).
func (r *run) handOver() {
	r.fixed = true
	r.release()
}

// waitCollected waits until systemd has collected the released unit, for
// cleanupTimeout at most. systemd collects it a little after the
// release's calls return, not before their answers: the reference that
// AddRef=yes took is dropped as the bus that carried the Unref goes on
// (sd-bus's track queue), and a pinned unit is collected after its pin,
// so a next run of the name that looked at once could find it still
// taken (ErrUnitExists). The run's watch tells when: systemd sends the
// unit's UnitRemoved once it has collected it. One may be of an earlier
// load of the name (a read that loaded it, say), or be missed while the
// connection is down, or have been read already by a wait for a job, so
// the manager is asked whether the unit is loaded after each, after a
// reconnect, and after each collectCheck without one. It gives up after
// cleanupTimeout: a unit that someone else keeps loaded then fails the
// next run as taken.
func (r *run) waitCollected() {
	ctx, done := context.WithTimeout(context.Background(), cleanupTimeout)
	defer done()
	for ctx.Err() == nil {
		next, cancel := context.WithTimeout(ctx, collectCheck)
		ev, err := r.watch.Next(next)
		cancel()
		switch {
		case err == nil && ev.Kind == manager.EventClosed:
			return
		case err == nil && ev.Kind != manager.EventRemoved && ev.Kind != manager.EventReconnected:
			continue
		}
		if loaded, err := r.loaded(ctx); err != nil || !loaded {
			return
		}
	}
}

// collectCheck is how long waitCollected waits for the unit's UnitRemoved
// before it asks the manager whether the unit is still loaded.
const collectCheck = time.Second

// sleep pauses for d and reports true, or reports false at once if ctx
// ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseRetry is the pause before release looks again at a unit whose
// release call was lost.
const releaseRetry = 100 * time.Millisecond

// releaseOnce stops or resets the unit as its last known state asks.
func (r *run) releaseOnce(ctx context.Context) error {
	switch r.state.str("ActiveState") {
	case "failed":
		return r.mgr.ResetFailedUnit(ctx, r.unit)
	case "inactive":
		return nil
	}
	job, err := r.mgr.StopUnit(ctx, r.unit, "replace")
	if err != nil {
		return err
	}
	r.waitJob(ctx, job)
	switch r.state.str("ActiveState") {
	case "failed":
		return r.mgr.ResetFailedUnit(ctx, r.unit)
	case "inactive":
		return nil
	}
	// waitJob gave up on the stop job across a reconnect.
	return errNotReleased
}

// errNotReleased is releaseOnce's error for a unit still not stopped.
var errNotReleased = errors.New("unit not stopped yet")

// abort releases what it can after an error that ended the wait early;
// it ends release too. Dropping the unit's reference lets systemd collect
// it once it is inactive or failed. A unit that may still run keeps its
// drop-in, which it removes when it stops.
func (r *run) abort() {
	r.unref()
	r.watch.Close()
	r.closeAfterWait()
	r.unclaim()
}

// unref drops the unit's reference that this process took (AddRef=yes),
// if it holds one, so that systemd may collect the unit. A call lost on
// the bus while the manager re-executes is made again: a reference left
// behind would keep the unit loaded for as long as this process lives.
func (r *run) unref() {
	if !r.ref {
		return
	}
	ctx, done := context.WithTimeout(context.Background(), cleanupTimeout)
	for err := r.mgr.Unref(ctx, r.unit); manager.IsConnLost(err) && sleep(ctx, releaseRetry); err = r.mgr.Unref(ctx, r.unit) {
	}
	done()
	r.ref = false
}
