package podrun

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/unit"
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

// WaitBackoff waits out the back-off that app's last exit recorded, if
// that exit was followed by a restart: [ExecApp] calls it first, so a run
// that follows a restart starts its command once the back-off is over. A
// stop ends the wait without an error: ctx done, or, in ExecApp, which
// handles no signal, systemd's SIGTERM, which ends the process; the stop
// goes on, and reap-app records that the back-off was no run. It is also
// "unitrun pod backoff", which the units of pods created by an earlier
// unitrun run as ExecStartPre= of an app that may restart.
func WaitBackoff(ctx context.Context, stateDir, name, app string) error {
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
	m, a, err := loadApp(stateDir, name, app)
	if err != nil {
		return err
	}
	if !m.Awaits(a.Name) {
		return nil
	}
	if s, err := pod.ReadAppOrNew(stateDir, name, app); err != nil || s.State != pod.AppWaiting {
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
		s, err := pod.ReadAppOrNew(stateDir, name, a.Name)
		if err != nil || s.State != pod.AppExited {
			return false, err
		}
	}
	if side == nil {
		return true, nil
	}
	s, err := pod.ReadAppOrNew(stateDir, name, side.Name)
	if err != nil {
		return false, err
	}
	return s.State == pod.AppRunning && !execHook(s.PID) &&
		(side.StartupProbe == nil || s.Startup != nil && s.Startup.LastResult == pod.ProbeSuccess), nil
}

// ReapApp is the ExecStopPost= of an app, and the ExecStartPost= of an init
// app: it records the exit that env describes (in ExecStartPost=, the
// success of an init app) at once, in the status file and the app's
// record, applies [pod.Decide], and stops the pod if that ends it. An exit that
// the app's probe caused ([RunProbe]) is a restart, with the back-off of a
// crash, if the probe restarted the app, and a failure if it ends the pod.
// A run whose command [ExecApp] could not execute failed, with ExecApp's
// reason as the record's Message, and so did any other run that ended
// before its command ran (a stop came first). A restart stopped before its
// command ran (while it waited out its back-off, or after) was no run: the
// app ends with the exit of its last run, and its status file is left as
// that run left it. The exit of an init app is
// recorded once per invocation. It reaches the manager to end the pod,
// and for an app that would restart, to see whether a stop job ended the
// run (a stop from outside that no runner marked).
func ReapApp(ctx context.Context, stateDir, name, app string, env HookEnv, open func(context.Context) (*manager.Conn, error)) error {
	r, err := readExit(stateDir, name, app, env)
	if err != nil || r == nil {
		return err
	}
	r.stop = pod.Stopping(stateDir, name)
	if !r.stop && r.acted != pod.RestartApp && (r.s.State == pod.AppRestarting || pod.Restarts(r.a.RestartPolicy, r.exit.Success)) {
		// A stop from outside that no runner marked (systemctl stop of
		// the app, systemctl exit of the manager, SIGRTMIN+3/+4 to an
		// isolated pod's systemd) shows as a job on the app; an exit on
		// its own has none.
		r.stop = stoppedByJob(ctx, open, pod.AppUnit(name, app))
	}
	// A restart stopped before its command ran (while it waited out its
	// back-off, or after): that was no run, and the app ends with the exit
	// of its last run.
	noRun := !r.started() && r.s.State == pod.AppRestarting && r.stop
	if !noRun {
		if err := pod.WriteExitCode(stateDir, name, app, r.exit.Code()); err != nil {
			return err
		}
	}
	end, err := r.record(noRun)
	if err != nil || !end {
		return err
	}
	return endPod(ctx, stateDir, name, open)
}

// reaping is an exit that [ReapApp] records.
type reaping struct {
	stateDir, name string
	m              *pod.Manifest
	a              *pod.App
	env            HookEnv
	// s is the app's record as the run left it.
	s    pod.AppStatus
	exit pod.Exit
	// why is the reason ExecApp could not execute the command, if it could not.
	why string
	// acted is what a probe of the app did at its failure threshold.
	acted pod.ProbeAction
	// stop says the app was stopped on request.
	stop bool
}

// readExit reads what ReapApp needs to record app's exit that env
// describes; nil if that exit, an init app's, is recorded already.
func readExit(stateDir, name, app string, env HookEnv) (*reaping, error) {
	// Only this app's own hooks, one at a time, write its record; the lock
	// is for what the other apps' hooks write.
	m, a, err := loadApp(stateDir, name, app)
	if err != nil {
		return nil, err
	}
	r := &reaping{stateDir: stateDir, name: name, m: m, a: a, env: env}
	if r.s, err = pod.ReadAppOrNew(stateDir, name, app); err != nil {
		return nil, err
	}
	if a.Init && env.InvocationID != "" && r.s.Invocation == env.InvocationID {
		return nil, nil
	}
	r.exit = pod.Exit{Exit: unit.Exit{Result: "success"}, Success: true}
	if env.ServiceResult != "" || !a.Init {
		x, err := unit.ExitFromEnv(env.ServiceResult, env.ExitCode, env.ExitStatus)
		if err != nil {
			return nil, err
		}
		r.exit = pod.Exit{Exit: x, Success: x.Result == "success"}
	}
	if r.why, err = pod.TakeStartError(stateDir, name, app); err != nil {
		return nil, err
	}
	if r.why == "" && !r.started() {
		r.why = notRun
	}
	if r.why != "" {
		// ExecApp could not execute the command, or the run ended
		// before ExecApp got that far: whatever the exit code (the
		// SIGTERM of a stop, say), the run failed.
		r.exit.Success = false
	}
	// A probe sets Acted before it restarts the app or ends the pod; an
	// app whose probe ends the pod failed, whatever its exit.
	r.acted, _ = r.s.Acted()
	if r.acted == pod.FailPod {
		r.exit.Success = false
	}
	return r, nil
}

// started reports whether the run got as far as ExecApp, which records
// the start of every run that does.
func (r *reaping) started() bool { return r.s.State == pod.AppRunning }

// notRun is the message of a run that ended before its command ran, and
// not because ExecApp could not execute it: a stop that came first, or a
// hook that failed.
const notRun = "ended before its command ran"

// record writes the app's record, under the pod's lock, and reports
// whether the exit ends the pod (and the pod is not being stopped
// already).
func (r *reaping) record(noRun bool) (bool, error) {
	unlock, err := pod.Lock(r.stateDir, r.name)
	if err != nil {
		return false, err
	}
	defer unlock()
	// The probes write their states under the lock, after s was read.
	fresh, err := pod.ReadAppOrNew(r.stateDir, r.name, r.a.Name)
	if err != nil {
		return false, err
	}
	s := r.s
	s.Probe, s.Startup, s.Readiness = fresh.Probe, fresh.Startup, fresh.Readiness
	if noRun {
		s.PID = 0
		return false, pod.WriteApp(r.stateDir, r.name, s.EndRestart())
	}
	if !r.started() {
		// The run never got as far as its command.
		s.StartedAt = time.Time{}
	}
	now := time.Now()
	d, err := r.decide(&s, now)
	if err != nil {
		return false, err
	}
	exit := r.exit
	code := exit.Code()
	_, signal := exit.JSON()
	s.ExitCode, s.Signal, s.Result, s.Message = &code, signal, exit.Result, r.why
	s.LastExitAt, s.LastStartedAt, s.Invocation, s.PID = now, s.StartedAt, r.env.InvocationID, 0
	// An exit ends readiness, but for an init app's success.
	s.Ready = r.a.Init && exit.Success
	switch {
	case d.Restart:
		s.State, s.Backoff = pod.AppRestarting, d.Delay
	case exit.Success:
		s.State, s.FinishedAt = pod.AppExited, now
	default:
		s.State, s.FinishedAt = pod.AppFailed, now
	}
	if err := pod.WriteApp(r.stateDir, r.name, s); err != nil {
		return false, err
	}
	return d.EndPod && !r.stop, nil
}

// decide applies the policies to the exit, whose record is s: a probe
// that restarted the app makes it a restart (and is told its restart is
// done), otherwise [pod.Decide] says.
func (r *reaping) decide(s *pod.AppStatus, now time.Time) (pod.Decision, error) {
	history := pod.History{LastDelay: s.Backoff, StartedAt: s.StartedAt}
	if r.acted == pod.RestartApp && !r.stop {
		// Whatever its restart policy, the exit is a restart, backed off
		// as a crash's is, so that a probe that keeps failing does not
		// restart the app in a tight loop.
		if _, p := s.Acted(); p != nil {
			p.Acted = ""
		}
		return pod.Decision{Restart: true, Delay: pod.NextDelay(r.m.RestartBackoff, history, now)}, nil
	}
	others, err := othersIfAllEnded(r.stateDir, r.name, r.m, r.a.Name)
	if err != nil {
		return pod.Decision{}, err
	}
	return pod.Decide(r.m, pod.Event{
		App:     r.a.Name,
		Exit:    r.exit,
		History: history,
		Ended:   others,
		Stopped: r.stop,
		Now:     now,
	})
}

// endPod marks pod name stopping and stops its slice, without waiting for
// the job, which stops the hook that calls it.
func endPod(ctx context.Context, stateDir, name string, open func(context.Context) (*manager.Conn, error)) error {
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

// loadApp returns the manifest of pod name and its app.
func loadApp(stateDir, name, app string) (*pod.Manifest, *pod.App, error) {
	m, err := pod.LoadSpec(stateDir, name)
	if err != nil {
		return nil, nil, err
	}
	a := m.App(app)
	if a == nil {
		return nil, nil, fmt.Errorf("pod %s has no app %q", name, app)
	}
	return m, a, nil
}

// updateApp changes app's record with change, under the pod's lock.
func updateApp(stateDir, name, app string, change func(*pod.AppStatus) error) error {
	unlock, err := pod.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := pod.ReadAppOrNew(stateDir, name, app)
	if err != nil {
		return err
	}
	if err := change(&s); err != nil {
		return err
	}
	return pod.WriteApp(stateDir, name, s)
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
		if o.Name == app || !o.Counts() {
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
	return updateApp(stateDir, name, app, func(s *pod.AppStatus) error {
		if s.State == pod.AppRestarting {
			*s = s.EndRestart()
		}
		return nil
	})
}

// Shutdown is the ExecStop= of the pod's shutdown service, which stops once
// every reaper has stopped: it records the pod's exit code, [pod.PodExitCode]
// of every app's last exit (from systemd for an app whose reap-app did not
// record it, see [recordedOutcomes]), and its phase; then stops the pod's target and
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
	outcomes, err := recordedOutcomes(ctx, mgr, stateDir, m, ps)
	if err != nil {
		return err
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

// recordedOutcomes returns the last exits recorded of the apps of pod m
// whose exits count (not its sidecars'), in ps's order. With a manager
// mgr, the pod's own (the shutdown hook runs once every app's unit has
// stopped), an app whose record says it has not ended although its unit
// has, after a run (its reap-app was killed, say, before it wrote), is
// given and recorded the exit that mgr keeps of that run
// ([appFromSystemd]).
func recordedOutcomes(ctx context.Context, mgr *manager.Conn, stateDir string, m *pod.Manifest, ps pod.PodStatus) ([]pod.Outcome, error) {
	var outcomes []pod.Outcome
	for _, a := range ps.Apps {
		app := m.App(a.Name)
		if app != nil && !app.Counts() {
			continue
		}
		r, err := pod.ReadAppOrNew(stateDir, m.Name, a.Name)
		if err != nil {
			return nil, err
		}
		if mgr != nil && app != nil && !r.Ended() && r.State != pod.AppWaiting {
			if r, err = appFromSystemd(ctx, mgr, m.Name, app, r); err != nil {
				return nil, err
			}
			if r.FromSystemd {
				if err := pod.WriteApp(stateDir, m.Name, r); err != nil {
					return nil, err
				}
			}
		}
		if r.ExitCode != nil {
			outcomes = append(outcomes, r.Outcome())
		}
	}
	return outcomes, nil
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
