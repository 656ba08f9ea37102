package podrun

import (
	"context"
	"errors"
	"time"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// The hooks below are what the units of a pod's graph run (see the package
// documentation); the hidden "unitrun pod" commands call them. open reaches
// the pod's manager; a hook calls it only when it must stop units.

// Await is the ExecStartPre= of an app that starts after a sidecar
// ([pod.Manifest.SidecarBefore]) or a retried init app
// ([pod.Manifest.RetriedInitsBefore]): on the app's first run it returns
// once that sidecar's run has started its command ([ExecApp] has executed
// it) and passed its startup probe, if it has one, as the kubelet starts
// each container once the sidecars before it have started, and once those
// init apps have succeeded, as the kubelet starts a container once the
// init containers before it have. A later run of the app does not wait.
// A stop (ctx done) ends the wait without an error.
func Await(ctx context.Context, stateDir, name, app string) error {
	m, a, err := pod.LoadApp(stateDir, name, app)
	if err != nil {
		return err
	}
	if !m.Awaits(a.Name) {
		return nil
	}
	if s, err := record.ReadAppOrNew(stateDir, name, app); err != nil || s.State != record.AppWaiting {
		return err
	}
	for {
		done, err := awaited(stateDir, name, m.SidecarBefore(a.Name), m.RetriedInitsBefore(a.Name))
		if err != nil || done {
			return err
		}
		if !sleepUntil(ctx, time.Now().Add(runPoll)) {
			return nil
		}
	}
}

// awaited reports whether sidecar side (if not nil) has started and the
// init apps inits have succeeded.
func awaited(stateDir, name string, side *pod.App, inits []*pod.App) (bool, error) {
	for _, a := range inits {
		s, err := record.ReadAppOrNew(stateDir, name, a.Name)
		if err != nil || s.State != record.AppExited {
			return false, err
		}
	}
	if side == nil {
		return true, nil
	}
	s, err := record.ReadAppOrNew(stateDir, name, side.Name)
	if err != nil {
		return false, err
	}
	return s.State == record.AppRunning && !execHook(s.PID) &&
		(side.StartupProbe == nil || s.Startup != nil && s.Startup.LastResult == record.ProbeSuccess), nil
}

// ReapApp is "unitrun pod unit-hook reap-app", the ExecStopPost= of an app, and the
// ExecStartPost= of an init app, when the small hook binary
// (cmd/unitrun-hook) is not installed beside unitrun, or that hook could
// not record the exit without the manager: it records the exit that env
// describes with [record.RecordExit], asking the manager whether a job is
// stopping the app, and ends the pod if the exit ends it ([EndPod]).
func ReapApp(ctx context.Context, stateDir, name, app string, env record.HookEnv, open func(context.Context) (*manager.Conn, error)) error {
	p, err := pod.LoadPolicy(stateDir, name)
	if err != nil {
		return err
	}
	end, err := record.RecordExit(stateDir, name, app, p, env, func() bool {
		return stoppedByJob(ctx, open, pod.AppUnit(name, app))
	})
	if err != nil || !end {
		return err
	}
	return EndPod(ctx, stateDir, name, open)
}

// EndPod marks pod name stopping and stops its slice, without waiting for
// the job, which stops the hook that calls it. It is also "unitrun pod
// end", which the small exit hook (cmd/unitrun-hook) runs when an exit it
// recorded ends the pod.
func EndPod(ctx context.Context, stateDir, name string, open func(context.Context) (*manager.Conn, error)) error {
	if err := pod.CheckNames(name); err != nil {
		return err
	}
	if err := record.MarkStopping(stateDir, name); err != nil {
		return err
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	return queueStops(ctx, mgr, pod.SliceUnit(name))
}

// updateApp changes app's record with change, under the pod's lock.
func updateApp(stateDir, name, app string, change func(*record.AppStatus) error) error {
	unlock, err := record.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := record.ReadAppOrNew(stateDir, name, app)
	if err != nil {
		return err
	}
	if err := change(&s); err != nil {
		return err
	}
	return record.WriteApp(stateDir, name, s)
}

// Reap is the ExecStop= of an app's reaper, which stops once the app is
// neither active nor restarting: an app whose record still says it
// restarts (systemd stopped it between two runs, before the next one
// started) has ended for good, with the exit of its last run.
func Reap(stateDir, name, app string) error {
	return updateApp(stateDir, name, app, func(s *record.AppStatus) error {
		if s.State == record.AppRestarting {
			*s = s.EndRestart()
		}
		return nil
	})
}

// Shutdown is the ExecStop= of the pod's shutdown service, which stops once
// every reaper has stopped: it records the pod's exit code, [record.PodExitCode]
// of every app's last exit (from systemd for an app whose reap-app did not
// record it, see [recordedOutcomes]), and its phase; then stops the pod's target and
// slice (with any init app still active in it), and ends an isolated
// pod's own systemd. It first detaches the image roots that a host pod's
// apps mounted ([MountRoot]): every app has stopped.
func Shutdown(ctx context.Context, stateDir, name string, open func(context.Context) (*manager.Conn, error)) error {
	unlock, err := record.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	m, ps, err := pod.LoadState(stateDir, name)
	if err != nil {
		return err
	}
	// An error here leaves the pod's exit to record all the same.
	unmounted := unmountRoots(stateDir, m)
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	return errors.Join(unmounted, endRecorded(ctx, mgr, stateDir, m, ps))
}

// endRecorded is the end of the pod m, whose status is ps, that
// [Shutdown] makes under the pod's lock, on mgr, once its roots are
// unmounted: the pod's exit code and phase, from every app's, then the
// stop of its target and slice.
func endRecorded(ctx context.Context, mgr *manager.Conn, stateDir string, m *pod.Manifest, ps pod.PodStatus) error {
	name := m.Name
	if isolated(m) {
		// The pod's own systemd ends with the pod, whatever happens
		// here: exit.target stops what is left and exits. Mode "fail"
		// leaves a stop from outside (halt, poweroff), which ends it
		// too, undisturbed; the error is then that one.
		defer mgr.StartUnit(context.WithoutCancel(ctx), exitTarget, "fail")
	}
	outcomes, err := recordedOutcomes(ctx, mgr, stateDir, m, ps)
	if err != nil {
		return err
	}
	code := record.PodExitCode(outcomes)
	ps.ExitCode, ps.Phase, ps.FinishedAt = &code, pod.PodSucceeded, time.Now()
	if code != 0 {
		ps.Phase = pod.PodFailed
	}
	if err := pod.WritePod(stateDir, ps); err != nil {
		return err
	}
	if err := record.MarkStopping(stateDir, name); err != nil {
		return err
	}
	return queueStops(ctx, mgr, pod.TargetUnit(name), pod.SliceUnit(name))
}

// recordedOutcomes returns the last exits recorded of the apps of pod m
// whose exits count (not its sidecars'), in ps's order. With a manager
// mgr, the pod's own (the shutdown hook runs once every app's unit has
// stopped), an app whose record says it has not ended although its unit
// has, after a run (its reap-app was killed, say, before it wrote), is
// given and recorded the exit that mgr keeps of that run
// ([appFromSystemd]); and an app still waiting, which never ran
// although every init app before it succeeded (the pod was stopped while
// its unit's start job waited for an init app's, and systemd runs no
// hook for a unit that never started), is recorded as stopped before its
// command ran ([record.StoppedBeforeRun]), sidecars too. The apps after
// an init app that did not succeed stay waiting: that init app's exit is
// the pod's.
func recordedOutcomes(ctx context.Context, mgr *manager.Conn, stateDir string, m *pod.Manifest, ps pod.PodStatus) ([]record.Outcome, error) {
	var outcomes []record.Outcome
	initsOK := true
	for _, a := range ps.Apps {
		app := m.App(a.Name)
		if mgr == nil && app != nil && !app.Counts() {
			continue
		}
		r, err := record.ReadAppOrNew(stateDir, m.Name, a.Name)
		if err != nil {
			return nil, err
		}
		if mgr != nil && app != nil {
			if r, err = endUnrecorded(ctx, mgr, stateDir, m.Name, app, r, initsOK); err != nil {
				return nil, err
			}
			if app.Init && r.State != record.AppExited {
				initsOK = false
			}
		}
		if app != nil && !app.Counts() {
			continue
		}
		if r.ExitCode != nil {
			outcomes = append(outcomes, r.Outcome())
		}
	}
	return outcomes, nil
}

// endUnrecorded returns r, the record of app a of pod name, ended as
// [recordedOutcomes] ends it if it does not record an end, and writes it:
// with its unit's last run, or, if it is still waiting, its unit is not
// running, and every init app before it succeeded (initsOK), as stopped
// before its command ran.
func endUnrecorded(ctx context.Context, mgr *manager.Conn, stateDir, name string, a *pod.App, r record.AppStatus, initsOK bool) (record.AppStatus, error) {
	switch {
	case r.Ended():
		return r, nil
	case r.State == record.AppWaiting:
		if !initsOK {
			return r, nil
		}
		// A sidecar, which may stop after the shutdown service, may be
		// in its await hook yet: its exit hook records that run.
		props, err := mgr.Properties(ctx, pod.AppUnit(name, a.Name), manager.UnitIface)
		if err != nil && !manager.IsNoSuchUnit(err) || err == nil && !ended(props) {
			return r, err
		}
		r, code := record.StoppedBeforeRun(r, time.Now())
		if err := record.WriteExitCode(stateDir, name, a.Name, code); err != nil {
			return r, err
		}
		return r, record.WriteApp(stateDir, name, r)
	}
	r, err := appFromSystemd(ctx, mgr, stateDir, name, a, r)
	if err != nil || !r.FromSystemd {
		return r, err
	}
	return r, record.WriteApp(stateDir, name, r)
}

// exitTarget stops what is left of a manager and makes it exit
// (systemd.special(7)).
const exitTarget = "exit.target"

// queueStops queues a stop job for each unit, without waiting for them: a
// hook runs inside a job that theirs may wait for.
func queueStops(ctx context.Context, mgr *manager.Conn, units ...string) error {
	for _, u := range units {
		if _, err := mgr.StopUnit(ctx, u, "replace"); err != nil {
			return err
		}
	}
	return nil
}

// stoppedByJob reports whether a job is stopping service u, which then
// does not restart, whatever its Restart=. An exit on its own runs
// ExecStopPost= with no job, or with the start job still pending if the
// run ended before its start was done (an app that fails at once): that
// exit restarts as any other does.
func stoppedByJob(ctx context.Context, open func(context.Context) (*manager.Conn, error), u string) bool {
	mgr, err := open(ctx)
	if err != nil {
		return false
	}
	defer mgr.Close()
	stop, err := mgr.StopPending(ctx, u)
	return err == nil && stop
}
