package podrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

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
	why := PostStartFailed + hookErr.Error()
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
		return execCheck(ctx, a, h.Exec)
	case h.Sleep != nil:
		if !sleepUntil(ctx, time.Now().Add(*h.Sleep)) {
			return ctx.Err()
		}
		return nil
	}
	_, err := httpCheck(ctx, h.HTTP)
	return err
}
