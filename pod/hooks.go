package pod

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
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

// BeginRun is the ExecStartPre= of an app: it waits out the back-off that
// the app's last exit recorded, if that exit was followed by a restart,
// then records that the app is running.
func BeginRun(ctx context.Context, stateDir, pod, app string) error {
	if err := checkNames(pod, app); err != nil {
		return err
	}
	s, err := readAppOrNew(stateDir, pod, app)
	if err != nil {
		return err
	}
	if s.State == AppRestarting {
		t := time.NewTimer(time.Until(s.LastExitAt.Add(s.Backoff)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	// The app's probe writes its record under the pod's lock.
	unlock, err := lock(stateDir, pod)
	if err != nil {
		return err
	}
	defer unlock()
	if s, err = readAppOrNew(stateDir, pod, app); err != nil {
		return err
	}
	s.State = AppRunning
	s.StartedAt = time.Now()
	s.FinishedAt = time.Time{}
	return WriteApp(stateDir, pod, s)
}

// ReapApp is the ExecStopPost= of an app, and the ExecStartPost= of an init
// app: it records the exit that env describes (in ExecStartPost=, the
// success of an init app) at once, in the status file and the app's
// record, applies [Decide], and stops the pod if that ends it. An exit that
// the app's probe caused ([RunProbe]) is a restart, with the back-off of a
// crash, if the probe restarted the app, and a failure if it ends the pod. The exit of
// an init app is recorded once per invocation. It reaches the manager
// only to end the pod: the start of a run that no backoff hook recorded
// is left for [Shutdown] to read from systemd.
func ReapApp(ctx context.Context, stateDir, pod, app string, env HookEnv, open func(context.Context) (*manager.Conn, error)) error {
	// Only this app's own hooks, one at a time, write its record; the lock
	// is for what the other apps' hooks write.
	m, err := loadSpec(stateDir, pod)
	if err != nil {
		return err
	}
	a := m.App(app)
	if a == nil {
		return fmt.Errorf("pod %s has no app %q", pod, app)
	}
	s, err := readAppOrNew(stateDir, pod, app)
	if err != nil {
		return err
	}
	if a.Init && env.InvocationID != "" && s.Invocation == env.InvocationID {
		return nil
	}
	exit := Exit{Result: "success", Success: true}
	if env.ServiceResult != "" || !a.Init {
		if exit, err = ExitFromEnv(env.ServiceResult, env.ExitCode, env.ExitStatus); err != nil {
			return err
		}
	}
	if s.State != AppRunning {
		// No backoff hook recorded this run's start; Shutdown and
		// Runner.Status read it from systemd.
		s.StartedAt = time.Time{}
	}
	if err := WriteExitCode(stateDir, pod, app, exit.Code); err != nil {
		return err
	}
	unlock, err := lock(stateDir, pod)
	if err != nil {
		return err
	}
	defer unlock()
	now := time.Now()
	// The probe writes its state under the lock, after s was read.
	fresh, err := readAppOrNew(stateDir, pod, app)
	if err != nil {
		return err
	}
	s.Probe = fresh.Probe
	stop := stopping(stateDir, pod)
	if !stop && m.isolated() && restarts(a.RestartPolicy, exit.Success) {
		// A stop from outside that no runner marked (SIGRTMIN+3/+4 to
		// the pod's own systemd) shows as a job on the app.
		stop = stoppedByJob(ctx, open, AppUnit(pod, app))
	}
	var d Decision
	if p := s.Probe; p != nil && p.Acted == RestartApp && !stop {
		// The app's probe restarted it: whatever its restart policy, the
		// exit is a restart, backed off as a crash's is, so that a probe
		// that keeps failing does not restart the app in a tight loop.
		p.Acted = ""
		d.Restart = true
		d.Delay = backoff(m.RestartBackoff, History{LastDelay: s.Backoff, StartedAt: s.StartedAt}, now)
	} else {
		if p != nil && p.Acted == FailPod {
			// The app's probe ends the pod: the exit is a failure.
			exit.Success = false
		}
		others, err := othersIfAllEnded(stateDir, pod, m, app)
		if err != nil {
			return err
		}
		if d, err = Decide(m, Event{
			App:     app,
			Exit:    exit,
			History: History{LastDelay: s.Backoff, StartedAt: s.StartedAt},
			Ended:   others,
			Stopped: stop,
			Now:     now,
		}); err != nil {
			return err
		}
	}
	s.ExitCode, s.Signal, s.Result = &exit.Code, exit.Signal, exit.Result
	s.LastExitAt, s.Invocation = now, env.InvocationID
	switch {
	case d.Restart:
		s.State, s.Backoff = AppRestarting, d.Delay
		s.Restarts++
	case exit.Success:
		s.State, s.FinishedAt = AppExited, now
	default:
		s.State, s.FinishedAt = AppFailed, now
	}
	if err := WriteApp(stateDir, pod, s); err != nil {
		return err
	}
	if !d.EndPod || stop {
		return nil
	}
	if err := markStopping(stateDir, pod); err != nil {
		return err
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	return queueStops(ctx, mgr, SliceUnit(pod))
}

// othersIfAllEnded returns the outcomes of every app of m but app, in the
// manifest's order, if every one of them has ended for good, else nil,
// having read the records only back to the last app that has not. That is
// all [Decide] needs of them to say whether the pod ends (it needs the rest
// only for Decision.PodExitCode, which [Shutdown] computes from every
// record), and it spares each exit reading every other app's record while
// it holds the pod's lock. The records are read from the manifest's end:
// apps tend to end in the order they start, so the first record read is
// mostly one of an app still running.
func othersIfAllEnded(stateDir, pod string, m *Manifest, app string) ([]Outcome, error) {
	var others []Outcome
	for _, o := range slices.Backward(m.Apps) {
		if o.Name == app {
			continue
		}
		r, err := readAppOrNew(stateDir, pod, o.Name)
		if err != nil || !r.ended() {
			return nil, err
		}
		others = append(others, r.outcome())
	}
	slices.Reverse(others)
	return others, nil
}

// Reap is the ExecStop= of an app's reaper, which stops once the app is
// neither active nor restarting: an app whose record still says it
// restarts (systemd stopped it between two runs) has ended for good.
func Reap(stateDir, pod, app string) error {
	unlock, err := lock(stateDir, pod)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := readAppOrNew(stateDir, pod, app)
	if err != nil || s.State != AppRestarting {
		return err
	}
	s.State, s.FinishedAt = AppFailed, s.LastExitAt
	if s.outcome().Exit.Success {
		s.State = AppExited
	}
	return WriteApp(stateDir, pod, s)
}

// Shutdown is the ExecStop= of the pod's shutdown service, which stops once
// every reaper has stopped: it gives every app's record that has an exit
// but no start (an app without a backoff hook) the start of its last run,
// from its service's ExecMainStartTimestamp; records the pod's exit code,
// [PodExitCode] of every app's last exit, and its phase; then stops the
// pod's target and slice (with any init app still active in it), and
// ends an isolated pod's own systemd.
func Shutdown(ctx context.Context, stateDir, pod string, open func(context.Context) (*manager.Conn, error)) error {
	unlock, err := lock(stateDir, pod)
	if err != nil {
		return err
	}
	defer unlock()
	m, ps, err := loadState(stateDir, pod)
	if err != nil {
		return err
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	if m.isolated() {
		// The pod's own systemd ends with the pod, whatever happens
		// here: exit.target stops what is left and exits. Mode "fail"
		// leaves a stop from outside (halt, poweroff), which ends it
		// too, undisturbed; the error is then that one.
		defer mgr.StartUnit(context.WithoutCancel(ctx), exitTarget, "fail")
	}
	var outcomes []Outcome
	for _, a := range ps.Apps {
		r, err := readAppOrNew(stateDir, pod, a.Name)
		if err != nil {
			return err
		}
		if r.ExitCode == nil {
			continue
		}
		outcomes = append(outcomes, r.outcome())
		if !r.StartedAt.IsZero() {
			continue
		}
		if r.StartedAt, err = runStart(ctx, mgr, pod, a.Name); err != nil {
			return err
		}
		if !r.StartedAt.IsZero() {
			if err := WriteApp(stateDir, pod, r); err != nil {
				return err
			}
		}
	}
	code := PodExitCode(outcomes)
	ps.ExitCode, ps.Phase, ps.FinishedAt = &code, PodSucceeded, time.Now()
	if code != 0 {
		ps.Phase = PodFailed
	}
	if err := WritePod(stateDir, ps); err != nil {
		return err
	}
	if err := markStopping(stateDir, pod); err != nil {
		return err
	}
	return queueStops(ctx, mgr, TargetUnit(pod), SliceUnit(pod))
}

// runStart returns when the last run of app's service started, from its
// ExecMainStartTimestamp; zero if it never started a process.
func runStart(ctx context.Context, mgr *manager.Conn, pod, app string) (time.Time, error) {
	props, err := mgr.Properties(ctx, AppUnit(pod, app), manager.ServiceIface)
	if err != nil {
		return time.Time{}, err
	}
	return timestamp(props["ExecMainStartTimestamp"]), nil
}

// timestamp reads a systemd timestamp property (µs since the epoch, 0 for
// none).
func timestamp(v dbus.Variant) time.Time {
	us, ok := v.Value().(uint64)
	if !ok || us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(us))
}

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
	return err == nil && !noJob(props["Job"])
}
