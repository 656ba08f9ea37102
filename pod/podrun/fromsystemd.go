package podrun

import (
	"context"
	"encoding/hex"
	"slices"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit/exit"
)

// The hooks record each exit in the pod's state directory. A hook that
// cannot write (the state directory is full, or the manager cannot see
// it) fails, and the record stays as it was: "running" for an app that has
// ended, "Running" for a pod whose graph is over. systemd still holds what
// happened: an app's unit keeps its last run's ExecMainCode,
// ExecMainStatus and Result until it is unloaded, and the pod's shutdown
// service, which runs once every reaper has stopped, is inactive or failed
// once it has run. Status reads those back for what the records miss.

// Values of ExecMainCode (waitid(2) si_code).
const (
	cldExited = 1
	cldKilled = 2
)

// completeFromSystemd returns s, the records of pod m, which is running,
// with each app that the records say has not ended but whose unit has
// ended a run given that run's exit from systemd, and, if the pod's graph
// is over, the pod ended with the exit code of those exits. What it takes
// from systemd is marked FromSystemd. An isolated pod's units are in its
// own systemd, gone with it: its records are returned as they are.
func (r *Runner) completeFromSystemd(ctx context.Context, m *pod.Manifest, s pod.PodStatus) (pod.PodStatus, error) {
	if isolated(m) {
		return s, nil
	}
	over, at, err := r.graphOver(ctx, m.Name)
	if err != nil {
		return s, err
	}
	s.Apps = slices.Clone(s.Apps)
	for i, a := range s.Apps {
		app := m.App(a.Name)
		if a.Ended() || app == nil {
			continue
		}
		if s.Apps[i], err = appFromSystemd(ctx, r.Mgr, r.StateDir, m.Name, app, a); err != nil {
			return s, err
		}
	}
	if !over {
		return s, nil
	}
	var outcomes []record.Outcome
	unknown := false
	for _, a := range s.Apps {
		if app := m.App(a.Name); app != nil && !app.Counts() {
			continue
		}
		if a.ExitCode == nil {
			unknown = a.State != record.AppWaiting
			continue
		}
		outcomes = append(outcomes, a.Outcome())
	}
	code := record.PodExitCode(outcomes)
	if code == 0 && unknown {
		// An app ran and how it ended is known neither to the records
		// nor to systemd: that is no success.
		code = record.NoProcessCode
	}
	s.ExitCode, s.Phase, s.FinishedAt, s.FromSystemd, s.Ready = &code, pod.PodSucceeded, at, true, false
	if code != 0 {
		s.Phase = pod.PodFailed
	}
	return s, nil
}

// mainSucceeded reports whether a main process of app a that ended with
// code and status succeeded as systemd counts it: it exited with 0 or one
// of the app's success exit codes, or, for an app that is not an init app
// (a oneshot service), was killed by a signal that systemd deems clean for
// a service (HUP, INT, TERM, PIPE).
func mainSucceeded(a *pod.App, code, status int32) bool {
	switch code {
	case cldExited:
		return status == 0 || slices.Contains(a.SuccessExitCodes, int(status))
	case cldKilled:
		return !a.Init && slices.Contains([]syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE}, syscall.Signal(status))
	}
	return false
}

// graphOver reports whether the graph of pod name, which is not isolated,
// is over: its shutdown service has run and is inactive or failed, and
// when it became so.
func (r *Runner) graphOver(ctx context.Context, name string) (bool, time.Time, error) {
	props, err := r.Mgr.Properties(ctx, pod.ShutdownUnit(name), manager.UnitIface)
	if manager.IsNoSuchUnit(err) {
		return false, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, err
	}
	left, _ := props["InactiveExitTimestampMonotonic"].Value().(uint64)
	entered, _ := props["InactiveEnterTimestamp"].Value().(uint64)
	return left != 0 && ended(props), time.UnixMicro(int64(entered)), nil
}

// ended reports whether the unit whose properties props are is inactive
// or failed.
func ended(props map[string]dbus.Variant) bool {
	state, _ := props["ActiveState"].Value().(string)
	return state == "inactive" || state == "failed"
}

// appFromSystemd returns s, the record of app a of pod name in stateDir,
// which says a has not ended, completed with the last run that mgr keeps
// of a's unit if that unit is inactive or failed after a run that s does
// not record: the exit systemd saw and its end for good. The run's
// success is systemd's Result, but for a Result of "exit-code" with a
// main process that succeeded ([mainSucceeded]): the hook that failed
// made it so. s was read before the unit's state: a unit seen ended may
// have had its exit recorded since (its exit hook runs before the unit
// is inactive), so the record is read again then, and if it has changed,
// it is returned as it is now.
func appFromSystemd(ctx context.Context, mgr *manager.Conn, stateDir, name string, a *pod.App, s record.AppStatus) (record.AppStatus, error) {
	u := pod.AppUnit(name, a.Name)
	props, err := mgr.Properties(ctx, u, manager.UnitIface)
	if manager.IsNoSuchUnit(err) {
		return s, nil
	}
	if err != nil || !ended(props) {
		return s, err
	}
	now, err := record.ReadAppOrNew(stateDir, name, a.Name)
	if err != nil {
		return s, err
	}
	if now.State != s.State || !now.StartedAt.Equal(s.StartedAt) || now.Invocation != s.Invocation || now.Restarts != s.Restarts {
		return now, nil
	}
	svc, err := mgr.Properties(ctx, u, manager.ServiceIface)
	if err != nil {
		return s, err
	}
	code, _ := svc["ExecMainCode"].Value().(int32)
	status, _ := svc["ExecMainStatus"].Value().(int32)
	result, _ := svc["Result"].Value().(string)
	exitedAt, _ := svc["ExecMainExitTimestamp"].Value().(uint64)
	id, _ := props["InvocationID"].Value().([]byte)
	invocation := hex.EncodeToString(id)
	if code == 0 {
		// No run of the unit had a main process.
		return s, nil
	}
	if s.State == record.AppRestarting && s.Invocation == invocation {
		// Its last exit is recorded; the reaper's record of its end
		// for good is not.
		s = s.EndRestart()
		s.FromSystemd = true
		return s, nil
	}
	x := exit.ExitFromMain(code, status, result)
	exit := record.Exit{Exit: x, Success: x.Result == "success"}
	if result == "exit-code" && mainSucceeded(a, code, status) {
		// The main process succeeded: the hook that failed made the
		// result "exit-code".
		exit.Success = true
	}
	at := time.UnixMicro(int64(exitedAt))
	c := exit.Code()
	_, signal := exit.JSON()
	s.ExitCode, s.Signal, s.Result = &c, signal, exit.Result
	s.LastExitAt, s.FinishedAt, s.Invocation, s.PID, s.Ready = at, at, invocation, 0, false
	s.State, s.FromSystemd = record.AppFailed, true
	if exit.Success {
		s.State = record.AppExited
	}
	return s, nil
}
