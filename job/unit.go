package job

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// UnitCmd is an existing unit to run (start and wait for), or whose run
// to wait for, as Cmd is a command to run: Unit returns one, its fields
// say where the run's output goes, and Run or Wait report the run as
// Cmd.Wait does.
type UnitCmd struct {
	Name string // the unit, such as "pivot.service" ("pivot" too: see unit.Complete)

	// Stdout and Stderr, if either is not nil, receive what the run logs
	// to the journal (the entries of its invocation ID, its standard
	// output and error among them) while it runs, each entry's message
	// as one line: the entries of priority warning or more severe to
	// Stderr, the others to Stdout. systemd gives a service's standard
	// output and error one stream to journald, so the journal cannot
	// tell them apart: a line's priority is its "<N>" prefix
	// (SyslogLevelPrefix=), else the unit's SyslogLevel= (info). A nil
	// one discards its entries. The output is read from the manager's
	// journal (manager.Target's Journal) with journalctl.
	Stdout, Stderr io.Writer

	// Invoked, if set, is told the invocation ID (hex) of each run that
	// Run makes as soon as systemd announces it, before the run ends (not
	// that of a run in progress before Run); it may be told one ID more
	// than once.
	Invoked func(id string)

	// Awaiting, if set, is told by Wait the name of the active timer that
	// triggers the service when Wait, finding no run in progress, waits
	// for the next run.
	Awaiting func(timer string)

	mgr *manager.Conn
}

// Unit returns the UnitCmd of the named unit on mgr.
func Unit(mgr *manager.Conn, name string) *UnitCmd {
	return &UnitCmd{Name: name, mgr: mgr}
}

// Run starts the unit and waits for its start job. For a service of Type
// oneshot, simple, exec or idle it then waits for the run to finish (and
// for the runs its Restart= setting makes) and reports it as Cmd.Wait
// does: an *ExitError if it failed, a *JobError if the job did not
// complete. For other units (notify, forking, targets, ...) it returns
// once the job is done, with a Status whose JobResult is "done". The unit
// is left as systemd leaves it; a unit already running (active,
// activating or reloading, with a run in progress) is not restarted: the
// start joins that run, and Run waits for it and copies its output from
// its first entry, as Wait does. A service active with its run ended
// (RemainAfterExit=yes) makes no run: Run returns a Status with JobResult
// "done" and no run, never the earlier run's. If ctx ends first, Run
// stops the unit, if its start made the run, and returns an error that
// wraps ctx.Err(); a run that the start joined is left going on, and the
// error is a *GoesOnError.
//
// Where the manager can keep units for this connection (manager.Conn.CanRef),
// Run keeps the unit loaded (Ref) from before its start until it has read
// the run's end, as Wait does: a run that ends while the connection to the
// manager is down (a daemon-reexec) is then reported with its own exit
// status, not lost with a unit that systemd collected meanwhile. Its
// reference dropped, the unit is left as systemd leaves it.
//
// With Stdout or Stderr set, Run copies the output of the runs the start
// makes (or joins) until they end. No entry of an earlier run is copied:
// the journal is brought up to date before the start, then the entries
// are chosen by the invocation IDs of the runs the start makes or joins.
// If the run succeeded and its output could not be copied, the error
// says why.
func (u *UnitCmd) Run(ctx context.Context) (*Status, error) {
	if err := u.complete(); err != nil {
		return nil, err
	}
	o := u.output()
	if o == nil && u.Invoked == nil {
		return runUnit(ctx, u.mgr, u.Name, nil, nil)
	}
	if o != nil {
		// Whatever an earlier run logged is then stored, and read with the
		// invocation ID it ran with, before this start makes a new one.
		syncJournal(ctx, o.journal)
	}
	// On a private socket every change of the unit's properties (its
	// job's, say) signals them all, the last run's ID among them.
	props, err := u.mgr.Properties(ctx, u.Name, manager.UnitIface, "InvocationID")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", u.Name, err)
	}
	last := props["InvocationID"].Value()
	var joined func(id string)
	if o != nil {
		// The run in progress, which the start joined: its output from
		// its first entry, as Wait copies it.
		joined = o.invoked
	}
	st, err := runUnit(ctx, u.mgr, u.Name, func(id string) {
		if b, _ := last.([]byte); hex.EncodeToString(b) == id {
			return
		}
		if o != nil {
			o.invoked(id)
		}
		if u.Invoked != nil {
			u.Invoked(id)
		}
	}, joined)
	if o == nil {
		return st, err
	}
	return st, u.finish(ctx, o, st, err)
}

// complete sets Name to the unit it stands for (unit.Complete).
func (u *UnitCmd) complete() error {
	name, err := unit.Complete(u.Name)
	if err == nil {
		u.Name = name
	}
	return err
}

// ErrNotRunning is wrapped by Wait's error for a unit that has no run in
// progress: inactive, failed, active with its run ended
// (RemainAfterExit=), or not loaded at all (never run, or collected).
var ErrNotRunning = errors.New("not running")

// Wait waits for the run of the service that is in progress, through the
// runs its Restart= setting makes, until the service is inactive or
// failed for good (or active with its run ended, for RemainAfterExit=),
// and reports the last run as Cmd.Wait does: nil for a success, an
// *ExitError otherwise. Wait only watches: it neither starts nor stops
// the unit, which it keeps loaded (Ref) until it has read the run's end. If ctx ends first, Wait returns a *GoesOnError, which wraps
// ctx.Err(), and leaves the unit as it is. A service that is not running is waited
// for until its next run if an active timer triggers it (TriggeredBy=);
// else it gives, at once, an error that wraps ErrNotRunning and tells its
// state, and so does a unit that is not found (not loaded: never run, or
// collected); a unit that is not a service, masked or whose file cannot
// be loaded, an error. With Stdout or Stderr set, Wait copies the output
// of the runs it waits for, from their first entry.
func (u *UnitCmd) Wait(ctx context.Context) (*Status, error) {
	if err := u.complete(); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Name, ".service") {
		return nil, fmt.Errorf("wait %s: only a service has a run to wait for", u.Name)
	}
	r := &run{mgr: u.mgr, unit: u.Name, state: state{}}
	r.watch = u.mgr.WatchProps(u.Name, stateProps...)
	// Kept for this process until the run's end is read: a unit that
	// nothing else keeps (a one-shot timer's service, its timer gone once
	// elapsed) is collected as soon as its run ends, its outcome with it.
	// Where the manager is on no bus, a failed run is kept by its
	// CollectMode= alone (a timer's service: Cmd.StartTimer).
	if u.mgr.CanRef(ctx) && u.mgr.Ref(ctx, u.Name) == nil {
		r.ref = true
	}
	for _, iface := range []string{manager.UnitIface, manager.ServiceIface} {
		props, err := u.mgr.Properties(ctx, u.Name, iface)
		if err != nil {
			r.abort()
			return nil, fmt.Errorf("wait %s: %w", u.Name, err)
		}
		r.state.merge(props)
	}
	if load := r.state.str("LoadState"); load != "loaded" {
		r.abort()
		return nil, notLoaded(u.Name, load)
	}
	if r.state.ended() && !manager.JobPending(r.state) {
		timer := u.armedTimer(ctx, r.state)
		if timer == "" {
			r.abort()
			return nil, fmt.Errorf("%s is %s (%s): %w", u.Name, r.state.str("ActiveState"), r.state.str("SubState"), ErrNotRunning)
		}
		if u.Awaiting != nil {
			u.Awaiting(timer)
		}
		// The next run, which the timer starts.
		for r.state.ended() && !manager.JobPending(r.state) {
			if err := r.step(ctx); err != nil {
				r.abort()
				if ctx.Err() != nil {
					return nil, goesOn(u.Name, ctx.Err())
				}
				return nil, fmt.Errorf("wait %s: %w", u.Name, err)
			}
		}
	}
	o := u.output()
	if o != nil {
		r.invoked = o.invoked
		if id := r.state.status(u.Name, "").InvocationID; id != "" {
			o.invoked(id)
		}
	}
	err := r.waitForGood(ctx)
	r.abort() // drops the reference and closes the watch: the unit is not unitrun's to release
	var st *Status
	switch {
	case ctx.Err() != nil:
		err = goesOn(u.Name, ctx.Err())
	case err != nil:
	case !r.state.invoked():
		// Read anew after a reconnect, the unit has no run: systemd
		// unloaded it meanwhile, with the outcome of its last run.
		err = fmt.Errorf("%s: %w", u.Name, ErrCollected)
	default:
		r.readSuccessExit(ctx)
		st = r.state.status(u.Name, "done")
		r.explainExec(ctx, st)
		if !st.Success() {
			err = &ExitError{st}
		}
	}
	if o != nil {
		err = u.finish(ctx, o, st, err)
	}
	return st, err
}

// waitForGood waits until the service has ended and no run of its
// Restart= follows. systemd 252 shows a service that restarts as failed
// (or inactive) on its way to auto-restart, and inactive with a new
// invocation ID and a job between the restart's stop and its start (and
// a unit whose start job waits is inactive too): so when the signals say
// the run ended, the unit is read once more, and it has ended for good
// only if that read, which systemd answers after it has made every change
// it made with the one signaled (the restart's arming among them), finds
// it with no job and in the same state. A unit that the read finds with no
// job and collected (not found, or loaded anew with no run) ended for
// good: systemd collects no unit on its way to a restart. A read lost
// with the connection (the manager re-executing) is made again.
func (r *run) waitForGood(ctx context.Context) error {
	for {
		if err := r.waitEnded(ctx); err != nil {
			return err
		}
		now, _, err := properties(ctx, r.mgr, r.unit, manager.UnitIface)
		if err != nil {
			return fmt.Errorf("%s: %w", r.unit, err)
		}
		if !manager.JobPending(now) {
			id, _ := now["InvocationID"].Value().([]byte)
			if now["LoadState"].Value() != "loaded" || len(id) == 0 {
				return nil
			}
			same := true
			for _, p := range []string{"ActiveState", "SubState", "InvocationID"} {
				same = same && reflect.DeepEqual(now[p].Value(), r.state[p].Value())
			}
			if same {
				// The run's end as the Service interface has it now:
				// under load the signal of the last run's exit can
				// come after the Unit interface's, or not at all
				// before this read, and the state would keep the
				// ExecMain* of that run's start (no exit yet).
				svc, _, err := properties(ctx, r.mgr, r.unit, manager.ServiceIface)
				if err != nil {
					return fmt.Errorf("%s: %w", r.unit, err)
				}
				if state(svc).u64("ExecMainStartTimestamp") != 0 {
					// Not a unit collected since, whose properties
					// are all zero.
					r.state.merge(svc)
				}
				return nil
			}
		}
		// The change the read saw, or the job's end, is signaled next.
		if err := r.step(ctx); err != nil {
			return err
		}
	}
}

// output returns the journalOutput of u's Stdout and Stderr, or nil.
func (u *UnitCmd) output() *journalOutput {
	if u.Stdout == nil && u.Stderr == nil {
		return nil
	}
	return &journalOutput{journal: u.mgr.Target().Journal, stdout: u.Stdout, stderr: u.Stderr}
}

// finish copies the rest of the output of the runs, the last of which
// ended as st, and returns the error of the run, or the output's if the
// run succeeded.
func (u *UnitCmd) finish(ctx context.Context, o *journalOutput, st *Status, err error) error {
	if outErr := o.finish(context.WithoutCancel(ctx), st); err == nil && outErr != nil {
		return fmt.Errorf("%s: copying its output from the journal: %w", u.Name, outErr)
	}
	return err
}

// armedTimer returns an active timer that triggers the service, in its
// state s, whose next run is then to come; "" if there is none.
func (u *UnitCmd) armedTimer(ctx context.Context, s state) string {
	by, _ := s["TriggeredBy"].Value().([]string)
	for _, t := range by {
		if !strings.HasSuffix(t, ".timer") {
			continue
		}
		if p, err := u.mgr.Properties(ctx, t, manager.UnitIface); err == nil && p["ActiveState"].Value() == "active" {
			return t
		}
	}
	return ""
}

// notLoaded says why wait cannot follow name, whose LoadState is load.
func notLoaded(name, load string) error {
	switch load {
	case "not-found":
		return fmt.Errorf("no unit named %s is loaded (it never ran, or its last run ended and was collected, its outcome gone): %w", name, ErrNotRunning)
	case "masked":
		return fmt.Errorf("wait %s: the unit is masked", name)
	case "bad-setting", "error":
		return fmt.Errorf("wait %s: the unit's file could not be loaded (systemctl status %s says why)", name, name)
	}
	return fmt.Errorf("wait %s: the unit is not loaded (its load state is %s)", name, load)
}
