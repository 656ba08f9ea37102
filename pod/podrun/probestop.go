package podrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// endRun bounds the end of the run of app a that started at run, which a
// probe of grace has just restarted (or whose pod it has just ended), by
// grace instead of the app's stopTimeout, as the kubelet kills a
// container with its probe's terminationGracePeriodSeconds: if the run's
// command still runs once grace has passed, every process of the app gets
// SIGKILL. Before that the stop goes as any stop: the preStop hook, then
// SIGTERM. The manager runs them when it stops the app before the probe
// service; when it stops the probe service first (ctx, the probe's, is
// done then), which holds back the app's stop until the probe has
// ended, endRun runs them itself. It returns once the command has ended or
// been killed.
func endRun(ctx context.Context, stateDir, name string, a *pod.App, run time.Time, grace time.Duration, open func(context.Context) (*manager.Conn, error)) error {
	deadline, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	s, err := record.ReadAppOrNew(stateDir, name, a.Name)
	if err != nil || s.State != record.AppRunning || !s.StartedAt.Equal(run) || s.PID == 0 {
		return err
	}
	// The command's pidfd tells exactly when it ends; ESRCH: it has.
	pidfd, err := unix.PidfdOpen(s.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	if exited(ctx, deadline, pidfd) {
		return nil
	}
	mgr, err := open(deadline)
	if err != nil {
		return err
	}
	defer mgr.Close()
	unitName := pod.AppUnit(name, a.Name)
	if deadline.Err() == nil && stopHeldBack(deadline, mgr, unitName) {
		if a.PreStop != nil {
			if err := runHook(deadline, a, a.PreStop); err != nil {
				fmt.Fprintf(os.Stderr, "preStop hook of %s failed: %v\n", a.Name, err)
			}
		}
		if err := mgr.KillUnit(deadline, unitName, "all", int32(syscall.SIGTERM)); err == nil && exited(deadline, deadline, pidfd) {
			return nil
		}
	}
	return mgr.KillUnit(context.Background(), unitName, "all", int32(syscall.SIGKILL))
}

// stopHeldBack reports whether app unit u is still active, its stop not
// begun: the manager stops the probe service first.
func stopHeldBack(ctx context.Context, mgr *manager.Conn, u string) bool {
	props, err := mgr.Properties(ctx, u, manager.UnitIface, "ActiveState")
	if err != nil {
		return false
	}
	state, _ := props["ActiveState"].Value().(string)
	return state == "active"
}

// pollSlice is how long exited waits at a time before it looks at its
// contexts again.
const pollSlice = 100 * time.Millisecond

// exited waits until the process of pidfd has ended (true), or either
// ctx or deadline is done.
func exited(ctx, deadline context.Context, pidfd int) bool {
	for ctx.Err() == nil && deadline.Err() == nil {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, int(pollSlice.Milliseconds()))
		switch {
		case err == unix.EINTR:
		case err != nil:
			return false
		case n > 0:
			return true
		}
	}
	return false
}
