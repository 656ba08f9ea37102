package podrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// RunProbe is the ExecStart= of an app's probe service, which the app's
// service starts and whose stop stops it. It runs the app's probes on each
// run of the app, timed from that run's start as [ExecApp] records it
// once its main process has executed the app's command (not from the
// service's start, which comes before),
// and records each result in the app's record:
//
//   - the startup probe, if there is one, checks first, and holds the
//     others until it succeeds; at its FailureThreshold it restarts the app;
//   - the liveness probe (the manifest's probe) acts at FailureThreshold
//     consecutive failures: restart restarts the app, fail-pod ends the
//     pod, whose phase becomes Failed;
//   - the readiness probe sets whether the app is ready: not until its
//     first success, not again after FailureThreshold consecutive failures,
//     ready again at the next success. It never acts.
//
// A probe waits InitialDelaySeconds from the run's start, then checks
// every PeriodSeconds ([check], bounded by TimeoutSeconds). Once a probe
// has acted, RunProbe waits for its own stop: a restart through the manager
// restarts the probe service too (reap-app counts the restart). A probe
// with a StopTimeout bounds the run's end by it ([endRun]). A check that
// ends after the run it checked has ended is not recorded. It returns nil
// when ctx is done.
func RunProbe(ctx context.Context, stateDir, name, app string, open func(context.Context) (*manager.Conn, error)) error {
	_, a, err := pod.LoadApp(stateDir, name, app)
	if err != nil {
		return err
	}
	if !a.HasProbes() {
		return fmt.Errorf("pod %s has no probed app %q", name, app)
	}
	var last time.Time
	for {
		run, command, ok, err := waitForRun(ctx, stateDir, name, app, last)
		if err != nil || !ok {
			return err
		}
		pr := probing{stateDir: stateDir, name: name, a: a, run: run, command: command}
		acted, err := pr.probeRun(ctx)
		if err != nil || ctx.Err() != nil {
			return err
		}
		if acted != nil {
			// The restart or the pod's end is asked for even if the
			// probe service's own stop, which the restart brings,
			// comes before the manager's answer.
			if err := act(context.WithoutCancel(ctx), stateDir, name, app, acted.Action, open); err != nil {
				return err
			}
			if acted.StopTimeout > 0 {
				if err := endRun(ctx, stateDir, name, a, run, acted.StopTimeout, open); err != nil {
					return err
				}
			}
			<-ctx.Done()
			return nil
		}
		last = run
	}
}

// runPoll is how often RunProbe looks for the start of a run.
const runPoll = 50 * time.Millisecond

// waitForRun waits until app's record says a run other than the one that
// started at last is running and its main process has executed the app's
// command, and returns the run's start as recorded (which names the run)
// and the time the command was seen running, from which the probes are
// timed; false if ctx ends first.
func waitForRun(ctx context.Context, stateDir, name, app string, last time.Time) (run, command time.Time, ok bool, err error) {
	for {
		s, err := record.ReadAppOrNew(stateDir, name, app)
		if err != nil {
			return time.Time{}, time.Time{}, false, err
		}
		if s.State == record.AppRunning && !s.StartedAt.Equal(last) && !execHook(s.PID) {
			return s.StartedAt, time.Now(), true, nil
		}
		if !sleepUntil(ctx, time.Now().Add(runPoll)) {
			return time.Time{}, time.Time{}, false, nil
		}
	}
}

// execHook reports whether process pid is still the start hook, which
// executes an app's command (appexec.Start), or has not been recorded yet
// (pid 0): a process of this binary, or of the small hook binary beside
// it, whose arguments are the start hook's ("pod unit-hook start ...",
// after unitrun's path in the small hook binary). A process that has
// ended is not.
func execHook(pid int) bool {
	if pid == 0 {
		return true
	}
	exe, args, ok := processOf(pid)
	if !ok {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	if fi, err := os.Stat(self); err == nil && os.SameFile(exe, fi) {
		args = args[1:]
	} else if fi, err := os.Stat(pod.HookPath(self)); err == nil && os.SameFile(exe, fi) && len(args) > 1 {
		args = args[2:]
	} else {
		return false
	}
	return len(args) > 2 && args[0] == "pod" && args[1] == record.HookCommand && args[2] == record.HookStart
}

// processOf returns the executable and the arguments of process pid, or
// false if it has ended. They are read through any of its threads that
// still runs: while a thread other than the main one executes a command
// (the start hook's Go runtime may run it on any thread), the main
// thread is a zombie whose executable and arguments cannot be read until
// the exec has replaced it, though the process has not ended.
func processOf(pid int) (exe os.FileInfo, args []string, ok bool) {
	task := "/proc/" + strconv.Itoa(pid) + "/task/"
	threads, err := os.ReadDir(task)
	if err != nil {
		return nil, nil, false
	}
	for _, t := range threads {
		exe, err := os.Stat(task + t.Name() + "/exe")
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(task + t.Name() + "/cmdline")
		if err != nil {
			continue
		}
		return exe, strings.Split(string(cmdline), "\x00"), true
	}
	return nil, nil, false
}

// probing runs the probes of app a of pod name on its run that started
// at run (as the record has it) and whose command was seen running at
// command.
type probing struct {
	stateDir, name string
	a              *pod.App
	run, command   time.Time
}

// errRunEnded is the error of a result that comes after the run it checked.
var errRunEnded = errors.New("the run has ended")

// A probeKind is one of an app's probes.
type probeKind int

const (
	liveness probeKind = iota
	readiness
	startup
)

// probeRun runs the probes on one run, until one of them acts (that
// probe is returned), the run ends, or ctx ends.
func (pr probing) probeRun(ctx context.Context) (*pod.Probe, error) {
	if pr.a.StartupProbe != nil {
		acted, err := pr.loop(ctx, startup)
		if err != nil {
			// The run ended before its startup probe said anything:
			// there is nothing to act on.
			return nil, ignoreRunEnded(err)
		}
		if acted {
			return pr.a.StartupProbe, nil
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	var actor *pod.Probe
	n := 0
	if pr.a.ReadinessProbe != nil {
		n++
		go func() { _, err := pr.loop(ctx, readiness); done <- err }()
	}
	if pr.a.Probe != nil {
		n++
		go func() {
			acted, err := pr.loop(ctx, liveness)
			if acted {
				actor = pr.a.Probe
			}
			done <- err
		}()
	}
	var err error
	for range n {
		// The first loop to end ends the run's probing: the run ended,
		// or the liveness probe acted.
		err = errors.Join(err, ignoreRunEnded(<-done))
		cancel()
	}
	return actor, err
}

func ignoreRunEnded(err error) error {
	if errors.Is(err, errRunEnded) {
		return nil
	}
	return err
}

// loop runs probe kind k until it reaches its failure threshold (true:
// it then has recorded Acted, the action it takes), a startup probe until
// it succeeds, or ctx ends; it returns errRunEnded once the run has ended.
func (pr probing) loop(ctx context.Context, k probeKind) (bool, error) {
	p := pr.probe(k)
	period := time.Duration(p.PeriodSeconds) * time.Second
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	// Probes held by a startup probe start once it has succeeded.
	next := pr.command.Add(time.Duration(p.InitialDelaySeconds) * time.Second)
	var st record.ProbeStatus
	for {
		if !sleepUntil(ctx, next) {
			return false, nil
		}
		next = time.Now().Add(period)
		result, msg := check(ctx, pr.a, p, timeout)
		if ctx.Err() != nil {
			return false, nil
		}
		st = record.ProbeStatus{LastResult: result, Message: msg, ConsecutiveFailures: st.ConsecutiveFailures + 1}
		if result == record.ProbeSuccess {
			st.ConsecutiveFailures = 0
		}
		threshold := st.ConsecutiveFailures >= p.FailureThreshold
		acts := threshold && k != readiness
		if acts {
			st.Acted = p.Action
			if p.Action == record.RestartApp {
				st.ConsecutiveFailures = 0
			}
		}
		if err := pr.record(k, st, threshold); err != nil {
			return false, err
		}
		if acts || k == startup && result == record.ProbeSuccess {
			return acts, nil
		}
	}
}

// probe returns a's probe of kind k.
func (pr probing) probe(k probeKind) *pod.Probe {
	switch k {
	case readiness:
		return pr.a.ReadinessProbe
	case startup:
		return pr.a.StartupProbe
	}
	return pr.a.Probe
}

// record sets the state st of probe kind k, named as the run's, in the
// app's record, and with it whether the app is ready, under the pod's
// lock; threshold says st reached the probe's failure threshold. It
// returns errRunEnded if the run has ended.
func (pr probing) record(k probeKind, st record.ProbeStatus, threshold bool) error {
	return updateApp(pr.stateDir, pr.name, pr.a.Name, func(s *record.AppStatus) error {
		if s.State != record.AppRunning || !s.StartedAt.Equal(pr.run) {
			return errRunEnded
		}
		success := st.LastResult == record.ProbeSuccess
		st.RunStartedAt = pr.run
		switch k {
		case liveness:
			s.Probe = &st
		case startup:
			s.Startup = &st
			s.Ready = success && pr.a.ReadinessProbe == nil
		case readiness:
			s.Readiness = &st
			if success {
				s.Ready = true
			} else if threshold {
				s.Ready = false
			}
		}
		return nil
	})
}

// act restarts app or ends pod name, as action says, without waiting for the
// jobs, which stop the probe that calls it. A restart never undoes a stop
// of the pod: none is asked for once the pod is stopping, and one asked
// for just before is queued in mode "fail", which the manager refuses
// rather than cancel the stop's jobs.
func act(ctx context.Context, stateDir, name, app string, action record.ProbeAction, open func(context.Context) (*manager.Conn, error)) error {
	if action == record.FailPod {
		return EndPod(ctx, stateDir, name, open)
	}
	if record.Stopping(stateDir, name) {
		return nil
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	_, err = mgr.RestartUnit(ctx, pod.AppUnit(name, app), "fail")
	if err != nil && record.Stopping(stateDir, name) {
		return nil
	}
	return err
}

// sleepUntil waits until t and reports whether ctx is still not done.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
