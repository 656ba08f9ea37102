package record

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/unit/exit"
)

// HookEnv is what systemd tells a hook about the run it belongs to: the
// $SERVICE_RESULT, $EXIT_CODE and $EXIT_STATUS of ExecStopPost= (empty in
// ExecStartPost=) and the $INVOCATION_ID of every command.
type HookEnv struct {
	ServiceResult string
	ExitCode      string
	ExitStatus    string
	InvocationID  string
}

// HookEnvFromOS returns the HookEnv of the running process, as systemd set
// its environment.
func HookEnvFromOS() HookEnv {
	return HookEnv{
		ServiceResult: os.Getenv("SERVICE_RESULT"),
		ExitCode:      os.Getenv("EXIT_CODE"),
		ExitStatus:    os.Getenv("EXIT_STATUS"),
		InvocationID:  os.Getenv("INVOCATION_ID"),
	}
}

// ErrNeedsStopJob is RecordExit's error when it must know whether a job is
// stopping the app's unit and was given no way to ask; it has written
// nothing then.
var ErrNeedsStopJob = errors.New("the exit of an app that may restart needs the manager, to tell a stop from outside from an exit on its own")

// RecordExit records the exit of app of pod name, whose policies are p, that env describes (in an init app's
// ExecStartPost=, its success) at once, in the status file and the app's
// record, applies [Decide], and reports whether the exit ends the pod
// (and the pod is not being stopped already): the caller then ends it. It
// is the whole of what an app's ExecStopPost= records, reaching no
// manager, but for one question: whether a job is stopping the app's
// unit, which stopJob answers. A stop from outside that nothing marked
// ([MarkStopping]: systemctl stop of the app, systemctl exit of the
// manager, SIGRTMIN+3/+4 to an isolated pod's systemd) shows as a job on
// the app; an exit on its own has none. It asks only for an exit that
// would restart the app or ends a restart (a run that follows one), the
// only exits such a stop changes; with stopJob nil it then returns
// [ErrNeedsStopJob] before it writes anything.
//
// An exit that the app's probe caused is a restart, with the back-off of
// a crash, if the probe restarted the app, and a failure if it ends the
// pod. A run whose command the start hook could not execute failed, with
// the hook's reason as the record's Message, and so did any other run that
// ended before its command ran (a stop came first: its exit is the stop's
// SIGTERM, also where the stop came before the start hook had a process,
// which systemd tells with no exit status). A restart stopped
// before its command ran (while it waited out its back-off, or after) was
// no run: the app ends with the exit of its last run, and its status file
// is left as that run left it; so was a start that came once the pod was
// stopping and the app had ended for good, which leaves its record as it
// was. The exit of an init app is recorded once
// per invocation.
func RecordExit(stateDir, name, app string, p *Policy, env HookEnv, stopJob func() bool) (bool, error) {
	r, err := readExit(stateDir, name, app, p, env)
	if err != nil || r == nil {
		return false, err
	}
	r.stop = Stopping(stateDir, name)
	if !r.stop && r.acted != RestartApp && (r.s.State == AppRestarting || Restarts(r.a.RestartPolicy, r.exit.Success)) {
		if stopJob == nil {
			return false, ErrNeedsStopJob
		}
		r.stop = stopJob()
	}
	if err := removeStartError(stateDir, name, app); err != nil {
		return false, err
	}
	// A restart stopped before its command ran (while it waited out its
	// back-off, or after): that was no run, and the app ends with the exit
	// of its last run. So is a start that came once the app had ended for
	// good (a restart that systemd began as the pod's stop came, after
	// the app's reaper had ended it): its record is left as it is.
	noRun := !r.started() && (r.s.State == AppRestarting || r.s.Ended()) && r.stop
	if !noRun {
		if err := WriteExitCode(stateDir, name, app, r.exit.Code()); err != nil {
			return false, err
		}
	}
	return r.record(noRun)
}

// reaping is an exit that [RecordExit] records.
type reaping struct {
	stateDir, name string
	p              *Policy
	a              *AppPolicy
	env            HookEnv
	// s is the app's record as the run left it.
	s    AppStatus
	exit Exit
	// why is the reason the start hook could not execute the command, if
	// it could not.
	why string
	// acted is what a probe of the app did at its failure threshold.
	acted ProbeAction
	// stop says the app was stopped on request.
	stop bool
}

// readExit reads what RecordExit needs to record app's exit that env
// describes; nil if that exit, an init app's, is recorded already. It
// writes nothing.
func readExit(stateDir, name, app string, p *Policy, env HookEnv) (*reaping, error) {
	a := p.App(app)
	if a == nil {
		return nil, fmt.Errorf("pod %s has no app %q", name, app)
	}
	r := &reaping{stateDir: stateDir, name: name, p: p, a: a, env: env}
	// Only this app's own hooks, one at a time, write its record; the lock
	// is for what the other apps' hooks write.
	var err error
	if r.s, err = ReadAppOrNew(stateDir, name, app); err != nil {
		return nil, err
	}
	if a.Init && env.InvocationID != "" && r.s.Invocation == env.InvocationID {
		return nil, nil
	}
	r.exit = Exit{Exit: exit.Exit{Result: "success"}, Success: true}
	if env.ServiceResult != "" || !a.Init {
		x, err := exit.ExitFromEnv(env.ServiceResult, env.ExitCode, env.ExitStatus)
		if err != nil {
			return nil, err
		}
		r.exit = Exit{Exit: x, Success: x.Result == "success"}
		if a.Init && mainSucceeded(x) {
			// The command exited, and succeeded, but a hook after it
			// did not: the ExecStartPost= that records the success,
			// killed by a stop that came while it ran (result
			// signal), timed out or failed. systemd tells
			// ExecStopPost= the result of the whole start, and the
			// command's own exit: the command succeeded.
			r.exit = Exit{Exit: exit.Exit{Ran: true, ExitCode: x.ExitCode, Result: "success"}, Success: true}
		}
	}
	if r.why, err = readStartError(stateDir, name, app); err != nil {
		return nil, err
	}
	if r.why == "" && !r.started() {
		r.why = notRun
		if env.ServiceResult != "" && !r.exit.Ran && (r.exit.Result == "signal" || r.exit.Result == "success") {
			// No main process, and no failure: a hook that runs before
			// the start hook (ExecStartPre=: the wait for the init apps
			// and the sidecar before the app, the image root's mount)
			// was ended by a stop's signal, which killed it (result
			// signal) or which it took as the end of its wait (success),
			// and systemd did not start the start hook. It tells
			// ExecStopPost= no $EXIT_CODE nor $EXIT_STATUS then: the run
			// ended by the stop's signal before its command ran, as one
			// whose start hook the stop killed does.
			r.exit.Exit = stoppedExit(r.exit.Result)
		}
	}
	if r.why != "" {
		// The start hook could not execute the command, or the run ended
		// before the hook got that far: whatever the exit code (the
		// SIGTERM of a stop, say), the run failed.
		r.exit.Success = false
	}
	// A probe sets Acted before it restarts the app or ends the pod; an
	// app whose probe ends the pod failed, whatever its exit.
	r.acted, _ = r.s.Acted()
	if r.acted == FailPod {
		r.exit.Success = false
	}
	return r, nil
}

// mainSucceeded reports whether x, an init app's exit as systemd tells
// ExecStopPost=, is that of a command that succeeded, whatever the
// result: it exited with 0, or with a status systemd took for a success
// (one of successExitCodes) since the result is not exit-code. A oneshot
// service runs ExecStartPost= only once its command has succeeded, and
// its $EXIT_CODE and $EXIT_STATUS are the command's; so a result other
// than success with an exit that did not fail is a hook's, after the
// command.
func mainSucceeded(x exit.Exit) bool {
	if !x.Ran || x.Signal != 0 || x.Result == "success" {
		return false
	}
	return x.ExitCode == 0 || x.Result != "exit-code"
}

// started reports whether the run got as far as the start hook, which
// records the start of every run that does.
func (r *reaping) started() bool { return r.s.State == AppRunning }

// stopSignal is the signal a stop sends an app's processes: systemd's
// KillSignal= default, which no app's unit changes (a Pod's
// lifecycle.stopSignal is refused).
const stopSignal = syscall.SIGTERM

// stoppedExit is the exit of a run that a stop's signal ended, systemd's
// result being result: 128+N for the signal's number N, as the exit of a
// process it killed.
func stoppedExit(result string) exit.Exit {
	return exit.Exit{Ran: true, ExitCode: 128 + int(stopSignal), Signal: stopSignal, Result: result}
}

// StoppedBeforeRun returns s, the record of an app that never ran because
// its pod ended first, at now, as the record of a run that a stop ended
// before its command ran: failed, by the stop's SIGTERM (143), with no
// start time. systemd runs no ExecStopPost= for a unit that never started
// (its start job, queued behind an init app's, was canceled by the stop),
// so the pod's shutdown hook records it. Its exit code is for the status
// file.
func StoppedBeforeRun(s AppStatus, now time.Time) (AppStatus, int) {
	x := stoppedExit("signal")
	code, signal := x.JSON()
	s.ExitCode, s.Signal, s.Result, s.Message = code, signal, x.Result, notRun
	s.State, s.StartedAt, s.LastStartedAt, s.LastExitAt, s.FinishedAt = AppFailed, time.Time{}, time.Time{}, now, now
	s.PID, s.Ready = 0, false
	return s, *code
}

// notRun is the message of a run that ended before its command ran, and
// not because the start hook could not execute it: a stop that came first,
// or a hook that failed.
const notRun = "ended before its command ran"

// record writes the app's record, under the pod's lock, and reports
// whether the exit ends the pod (and the pod is not being stopped
// already).
func (r *reaping) record(noRun bool) (bool, error) {
	unlock, err := Lock(r.stateDir, r.name)
	if err != nil {
		return false, err
	}
	defer unlock()
	// The probes write their states under the lock, after s was read.
	fresh, err := ReadAppOrNew(r.stateDir, r.name, r.a.Name)
	if err != nil {
		return false, err
	}
	s := r.s
	s.Probe, s.Startup, s.Readiness = fresh.Probe, fresh.Startup, fresh.Readiness
	if noRun && s.Ended() {
		return false, nil
	}
	if noRun {
		s.PID = 0
		return false, WriteApp(r.stateDir, r.name, s.EndRestart())
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
		s.State, s.Backoff = AppRestarting, d.Delay
	case exit.Success:
		s.State, s.FinishedAt = AppExited, now
	default:
		s.State, s.FinishedAt = AppFailed, now
	}
	if err := WriteApp(r.stateDir, r.name, s); err != nil {
		return false, err
	}
	return d.EndPod && !r.stop, nil
}

// decide applies the policies to the exit, whose record is s: a probe
// that restarted the app makes it a restart (and is told its restart is
// done), otherwise [Decide] says.
func (r *reaping) decide(s *AppStatus, now time.Time) (Decision, error) {
	history := History{Restarted: s.Restarts > 0, LastDelay: s.Backoff, StartedAt: s.StartedAt}
	if r.acted == RestartApp && !r.stop {
		// Whatever its restart policy, the exit is a restart, backed off
		// as a crash's is, so that a probe that keeps failing does not
		// restart the app in a tight loop.
		if _, p := s.Acted(); p != nil {
			p.Acted = ""
		}
		return Decision{Restart: true, Delay: NextDelay(r.p.RestartBackoff, history, now)}, nil
	}
	others, err := othersIfAllEnded(r.stateDir, r.name, r.p, r.a.Name)
	if err != nil {
		return Decision{}, err
	}
	return Decide(r.p, Event{
		App:     r.a.Name,
		Exit:    r.exit,
		History: history,
		Ended:   others,
		Stopped: r.stop,
		Now:     now,
	})
}

// othersIfAllEnded returns the outcomes of every app of p but app, in the
// manifest's order, if every one of them has ended for good, else nil,
// having read the records only back to the last app that has not. That is
// all [Decide] needs of them to say whether the pod ends (it needs the rest
// only for Decision.PodExitCode, which the shutdown hook computes from
// every record), and it spares each exit reading every other app's record
// while it holds the pod's lock. The records are read from the manifest's
// end: apps tend to end in the order they start, so the first record read
// is mostly one of an app still running.
func othersIfAllEnded(stateDir, name string, p *Policy, app string) ([]Outcome, error) {
	var others []Outcome
	for _, o := range slices.Backward(p.Apps) {
		if o.Name == app || o.Sidecar {
			continue
		}
		r, err := ReadAppOrNew(stateDir, name, o.Name)
		if err != nil || !r.Ended() {
			return nil, err
		}
		others = append(others, r.Outcome())
	}
	slices.Reverse(others)
	return others, nil
}
