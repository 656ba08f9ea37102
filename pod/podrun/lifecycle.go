package podrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// PostStart is the ExecStartPost= of an app with a postStart hook: it
// runs the hook once the run's command has started, beside it, as the
// kubelet runs a container's. If the hook fails, PostStart leaves why
// for reap-app, which records the run as failed with that message, and
// fails, which makes systemd stop the run (the kubelet kills the
// container: FailedPostStartHook).
func PostStart(ctx context.Context, stateDir, name, app string) error {
	_, a, err := pod.LoadApp(stateDir, name, app)
	if err != nil || a.PostStart == nil {
		return err
	}
	// systemd runs ExecStartPost= once the start hook, the main process,
	// has started: the hook has yet to open the run's start-error file
	// (which empties it) and to execute the command.
	if !commandStarted(ctx) {
		return nil
	}
	hookErr := runHook(ctx, a, a.PostStart)
	if hookErr == nil {
		return nil
	}
	return startFailed(stateDir, name, app, PostStartFailed+hookErr.Error())
}

// startFailed writes why as the reason the run of app could not execute
// its command, which the exit hook records, and returns it as an error.
func startFailed(stateDir, name, app, why string) error {
	f, err := record.OpenStartError(stateDir, name, app)
	if err != nil {
		return errors.Join(errors.New(why), err)
	}
	_, err = fmt.Fprintln(f, why)
	return errors.Join(errors.New(why), err, f.Close())
}

// PostStartFailed begins the message of a run whose postStart hook
// failed.
const PostStartFailed = "postStart hook failed: "

// commandStarted waits until the run's main process ($MAINPID, which
// systemd sets for ExecStartPost=) is no longer the start hook: it has
// executed the app's command. It reports false if the process ended
// first (the command could not be executed, or a stop came) or ctx is
// done.
func commandStarted(ctx context.Context) bool {
	pid, err := strconv.Atoi(os.Getenv("MAINPID"))
	if err != nil || pid <= 0 {
		return false
	}
	for execHook(pid) {
		if !sleepUntil(ctx, time.Now().Add(execPoll)) {
			return false
		}
	}
	_, _, running := processOf(pid)
	return running
}

// execPoll is how often commandStarted looks at the main process: the
// start hook takes a few milliseconds to execute the command.
const execPoll = 2 * time.Millisecond

// PreStop is the ExecStop= of an app with a preStop hook: when a stop
// ends a run whose command still runs ($MAINPID is set), it runs the hook
// before systemd sends the stop signal, as the kubelet runs a container's
// before it stops it; the app's stop timeout bounds it (systemd's
// TimeoutStopSec=). A run that ended on its own, which systemd also
// "stops", runs no hook. The hook's failure does not keep the stop from
// going on: PreStop reports it and returns nil, as the kubelet stops the
// container all the same.
func PreStop(ctx context.Context, stateDir, name, app string) error {
	if os.Getenv("MAINPID") == "" {
		return nil
	}
	_, a, err := pod.LoadApp(stateDir, name, app)
	if err != nil || a.PreStop == nil {
		return err
	}
	if err := runHook(ctx, a, a.PreStop); err != nil {
		fmt.Fprintf(os.Stderr, "preStop hook of %s failed: %v\n", app, err)
	}
	return nil
}

// runHook runs h, a hook of a: its command as an exec probe of a runs,
// its HTTP GET as an http probe sends it, or its sleep, until it ends or
// ctx is done.
func runHook(ctx context.Context, a *pod.App, h *pod.Hook) error {
	switch {
	case h.Exec != nil:
		_, err := execCheck(ctx, a, h.Exec)
		return err
	case h.Sleep != nil:
		if !sleepUntil(ctx, time.Now().Add(*h.Sleep)) {
			return ctx.Err()
		}
		return nil
	}
	_, err := httpCheck(ctx, h.HTTP)
	return err
}

// stopAfterPostStarts begins the stop of pod m, if an app of it that has
// a preStop hook is in its postStart hook (its unit in state start-post):
// systemd 252 stops such a unit with its stop signal at once, without its
// ExecStop=, where the kubelet runs the preStop hook of every container
// that it stops once it has started. Each such app gets its stop once its
// postStart hook has ended, so that its preStop hook runs, or once its
// stop timeout (TimeoutStopSec=) has passed since the call, or ctx is
// done; every other app but the init apps (whose stop would stop the apps
// that require them) gets its stop at once. It queues the stops and
// returns once each app's is queued, or ctx is done; the stop of the
// pod's slice that follows waits for them. An isolated pod's apps are its
// own systemd's, which stops them.
func (r *Runner) stopAfterPostStarts(ctx context.Context, m *pod.Manifest) {
	if isolated(m) {
		return
	}
	began := time.Now()
	var held, others []string
	for _, a := range m.Apps {
		u := pod.AppUnit(m.Name, a.Name)
		if a.PostStart != nil && a.PreStop != nil {
			if _, in := r.inPostStart(ctx, u); in {
				held = append(held, u)
				continue
			}
		}
		if !a.Init {
			others = append(others, u)
		}
	}
	if len(held) == 0 {
		return
	}
	stop := func(units ...string) {
		for _, u := range units {
			r.Mgr.StopUnit(context.WithoutCancel(ctx), u, "replace")
		}
	}
	stop(others...)
	for len(held) > 0 {
		held = slices.DeleteFunc(held, func(u string) bool {
			if timeout, in := r.inPostStart(ctx, u); in && time.Since(began) < timeout {
				return false
			}
			stop(u)
			return true
		})
		if len(held) > 0 && !sleepUntil(ctx, time.Now().Add(pollInterval)) {
			return
		}
	}
}

// inPostStart reports whether service u is in its postStart hook (state
// start-post), and u's stop timeout; false if systemd cannot say.
func (r *Runner) inPostStart(ctx context.Context, u string) (time.Duration, bool) {
	unitProps, err := r.Mgr.Properties(ctx, u, manager.UnitIface, "SubState")
	if err != nil || unitProps["SubState"].Value() != "start-post" {
		return 0, false
	}
	props, err := r.Mgr.Properties(ctx, u, manager.ServiceIface, "TimeoutStopUSec")
	usec, ok := props["TimeoutStopUSec"].Value().(uint64)
	// infinity is the largest uint64
	return time.Duration(min(usec, math.MaxInt64/1000)) * time.Microsecond, err == nil && ok
}
