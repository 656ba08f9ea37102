package podrun

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
)

// The hooks below are what the units of a pod's graph run (see the package
// documentation); the hidden "unitrun pod" commands call them. open reaches
// the pod's manager; a hook calls it only when it must stop units.

// HookEnv is what systemd tells a hook about the run it belongs to: the
// $SERVICE_RESULT, $EXIT_CODE and $EXIT_STATUS of ExecStopPost= (empty in
// ExecStartPost=) and the $INVOCATION_ID of every command.
type HookEnv struct {
	ServiceResult string
	ExitCode      string
	ExitStatus    string
	InvocationID  string
}

// BeginRun is the ExecStartPre= of an app that may restart: it waits out
// the back-off that the app's last exit recorded, if that exit was
// followed by a restart. The run's start is recorded by [ExecApp]. A stop
// (ctx done: systemd's SIGTERM) ends the wait without an error: the stop
// goes on, and reap-app records that the back-off was no run.
func BeginRun(ctx context.Context, stateDir, name, app string) error {
	if err := pod.CheckNames(name, app); err != nil {
		return err
	}
	s, err := pod.ReadAppOrNew(stateDir, name, app)
	if err != nil || s.State != pod.AppRestarting {
		return err
	}
	t := time.NewTimer(time.Until(s.LastExitAt.Add(s.Backoff)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return nil
	}
}

// ReapApp is the ExecStopPost= of an app, and the ExecStartPost= of an init
// app: it records the exit that env describes (in ExecStartPost=, the
// success of an init app) at once, in the status file and the app's
// record, applies [pod.Decide], and stops the pod if that ends it. An exit that
// the app's probe caused ([RunProbe]) is a restart, with the back-off of a
// crash, if the probe restarted the app, and a failure if it ends the pod.
// A run whose command [ExecApp] could not execute failed, with ExecApp's
// reason as the record's Message. A run stopped while it waited out its
// back-off was no run: the app ends with the exit of its last run, and
// its status file is left as that run left it. The exit of an init app is
// recorded once per invocation. It reaches the manager to end the pod,
// and for an app that would restart, to see whether a stop job ended the
// run (a stop from outside that no runner marked).
func ReapApp(ctx context.Context, stateDir, name, app string, env HookEnv, open func(context.Context) (*manager.Conn, error)) error {
	// Only this app's own hooks, one at a time, write its record; the lock
	// is for what the other apps' hooks write.
	m, err := pod.LoadSpec(stateDir, name)
	if err != nil {
		return err
	}
	a := m.App(app)
	if a == nil {
		return fmt.Errorf("pod %s has no app %q", name, app)
	}
	s, err := pod.ReadAppOrNew(stateDir, name, app)
	if err != nil {
		return err
	}
	if a.Init && env.InvocationID != "" && s.Invocation == env.InvocationID {
		return nil
	}
	exit := pod.Exit{Result: "success", Success: true}
	if env.ServiceResult != "" || !a.Init {
		if exit, err = pod.ExitFromEnv(env.ServiceResult, env.ExitCode, env.ExitStatus); err != nil {
			return err
		}
	}
	why, err := pod.TakeStartError(stateDir, name, app)
	if err != nil {
		return err
	}
	if why != "" {
		// ExecApp could not execute the command: whatever the exit
		// code, the run failed.
		exit.Success = false
	}
	// ExecApp records the start of every run that gets as far as it.
	started := s.State == pod.AppRunning
	// The probe sets Acted before it restarts the app or ends the pod.
	probeRestart := s.Probe != nil && s.Probe.Acted == pod.RestartApp
	stop := pod.Stopping(stateDir, name)
	if !stop && !probeRestart && (s.State == pod.AppRestarting || pod.Restarts(a.RestartPolicy, exit.Success)) {
		// A stop from outside that no runner marked (systemctl stop of
		// the app, systemctl exit of the manager, SIGRTMIN+3/+4 to an
		// isolated pod's systemd) shows as a job on the app; an exit on
		// its own has none.
		stop = stoppedByJob(ctx, open, pod.AppUnit(name, app))
	}
	backoffStopped := !started && s.State == pod.AppRestarting && env.ExitCode == "" && stop
	if !backoffStopped {
		if err := pod.WriteExitCode(stateDir, name, app, exit.Code); err != nil {
			return err
		}
	}
	unlock, err := pod.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	now := time.Now()
	// The probe writes its state under the lock, after s was read.
	fresh, err := pod.ReadAppOrNew(stateDir, name, app)
	if err != nil {
		return err
	}
	s.Probe = fresh.Probe
	if backoffStopped {
		// Stopped while it waited out its back-off: that was no run.
		// The app ends with the exit of its last run.
		return pod.WriteApp(stateDir, name, s.EndRestart())
	}
	if !started {
		// The run never got as far as its command.
		s.StartedAt = time.Time{}
	}
	var d pod.Decision
	if probeRestart && !stop {
		// The app's probe restarted it: whatever its restart policy, the
		// exit is a restart, backed off as a crash's is, so that a probe
		// that keeps failing does not restart the app in a tight loop.
		s.Probe.Acted = ""
		d.Restart = true
		d.Delay = pod.NextDelay(m.RestartBackoff, pod.History{LastDelay: s.Backoff, StartedAt: s.StartedAt}, now)
	} else {
		if s.Probe != nil && s.Probe.Acted == pod.FailPod {
			// The app's probe ends the pod: the exit is a failure.
			exit.Success = false
		}
		others, err := othersIfAllEnded(stateDir, name, m, app)
		if err != nil {
			return err
		}
		if d, err = pod.Decide(m, pod.Event{
			App:     app,
			Exit:    exit,
			History: pod.History{LastDelay: s.Backoff, StartedAt: s.StartedAt},
			Ended:   others,
			Stopped: stop,
			Now:     now,
		}); err != nil {
			return err
		}
	}
	s.ExitCode, s.Signal, s.Result, s.Message = &exit.Code, exit.Signal, exit.Result, why
	s.LastExitAt, s.LastStartedAt, s.Invocation = now, s.StartedAt, env.InvocationID
	switch {
	case d.Restart:
		s.State, s.Backoff = pod.AppRestarting, d.Delay
	case exit.Success:
		s.State, s.FinishedAt = pod.AppExited, now
	default:
		s.State, s.FinishedAt = pod.AppFailed, now
	}
	if err := pod.WriteApp(stateDir, name, s); err != nil {
		return err
	}
	if !d.EndPod || stop {
		return nil
	}
	if err := pod.MarkStopping(stateDir, name); err != nil {
		return err
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	return queueStops(ctx, mgr, pod.SliceUnit(name))
}

// othersIfAllEnded returns the outcomes of every app of m but app, in the
// manifest's order, if every one of them has ended for good, else nil,
// having read the records only back to the last app that has not. That is
// all [pod.Decide] needs of them to say whether the pod ends (it needs the rest
// only for Decision.PodExitCode, which [Shutdown] computes from every
// record), and it spares each exit reading every other app's record while
// it holds the pod's lock. The records are read from the manifest's end:
// apps tend to end in the order they start, so the first record read is
// mostly one of an app still running.
func othersIfAllEnded(stateDir, name string, m *pod.Manifest, app string) ([]pod.Outcome, error) {
	var others []pod.Outcome
	for _, o := range slices.Backward(m.Apps) {
		if o.Name == app {
			continue
		}
		r, err := pod.ReadAppOrNew(stateDir, name, o.Name)
		if err != nil || !r.Ended() {
			return nil, err
		}
		others = append(others, r.Outcome())
	}
	slices.Reverse(others)
	return others, nil
}

// Reap is the ExecStop= of an app's reaper, which stops once the app is
// neither active nor restarting: an app whose record still says it
// restarts (systemd stopped it between two runs, before the next one
// started) has ended for good, with the exit of its last run.
func Reap(stateDir, name, app string) error {
	unlock, err := pod.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := pod.ReadAppOrNew(stateDir, name, app)
	if err != nil || s.State != pod.AppRestarting {
		return err
	}
	return pod.WriteApp(stateDir, name, s.EndRestart())
}

// Shutdown is the ExecStop= of the pod's shutdown service, which stops once
// every reaper has stopped: it records the pod's exit code, [pod.PodExitCode]
// of every app's last exit, and its phase; then stops the pod's target and
// slice (with any init app still active in it), and ends an isolated
// pod's own systemd.
func Shutdown(ctx context.Context, stateDir, name string, open func(context.Context) (*manager.Conn, error)) error {
	unlock, err := pod.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	m, ps, err := pod.LoadState(stateDir, name)
	if err != nil {
		return err
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	if isolated(m) {
		// The pod's own systemd ends with the pod, whatever happens
		// here: exit.target stops what is left and exits. Mode "fail"
		// leaves a stop from outside (halt, poweroff), which ends it
		// too, undisturbed; the error is then that one.
		defer mgr.StartUnit(context.WithoutCancel(ctx), exitTarget, "fail")
	}
	var outcomes []pod.Outcome
	for _, a := range ps.Apps {
		r, err := pod.ReadAppOrNew(stateDir, name, a.Name)
		if err != nil {
			return err
		}
		if r.ExitCode != nil {
			outcomes = append(outcomes, r.Outcome())
		}
	}
	code := pod.PodExitCode(outcomes)
	ps.ExitCode, ps.Phase, ps.FinishedAt = &code, pod.PodSucceeded, time.Now()
	if code != 0 {
		ps.Phase = pod.PodFailed
	}
	if err := pod.WritePod(stateDir, ps); err != nil {
		return err
	}
	if err := pod.MarkStopping(stateDir, name); err != nil {
		return err
	}
	return queueStops(ctx, mgr, pod.TargetUnit(name), pod.SliceUnit(name))
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
// does not restart, whatever its Restart=: an exit on its own runs
// ExecStopPost= with no job.
func stoppedByJob(ctx context.Context, open func(context.Context) (*manager.Conn, error), u string) bool {
	mgr, err := open(ctx)
	if err != nil {
		return false
	}
	defer mgr.Close()
	props, err := mgr.Properties(ctx, u, manager.UnitIface)
	return err == nil && manager.JobPending(props)
}
