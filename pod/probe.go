package pod

import (
	"context"
	"fmt"
	"time"

	"github.com/unitrun/unitrun/manager"
)

// Probe results, as ProbeStatus.LastResult records them.
const (
	ProbeSuccess = "success"
	ProbeFailure = "failure"
	ProbeTimeout = "timeout"
)

// probeRestarts reports whether a's probe restarts a when it fails.
func (a *App) probeRestarts() bool { return a.Probe != nil && a.Probe.Action == RestartApp }

// RunProbe is the ExecStart= of an app's probe service, which the app's
// service starts and whose stop stops it. It waits InitialDelaySeconds, then
// every PeriodSeconds checks the app ([App.check], bounded by
// TimeoutSeconds) and records the result in the app's record. At
// FailureThreshold consecutive failures it acts, then waits for its own
// stop: restart restarts the app through the manager, which restarts the
// probe service too, so the next probe starts over from the initial delay
// (reap-app counts the restart); fail-pod ends the pod, whose phase becomes
// Failed. It returns nil when ctx is done.
func RunProbe(ctx context.Context, stateDir, pod, app string, open func(context.Context) (*manager.Conn, error)) error {
	m, err := loadSpec(stateDir, pod)
	if err != nil {
		return err
	}
	a := m.App(app)
	if a == nil || a.Probe == nil {
		return fmt.Errorf("pod %s has no probed app %q", pod, app)
	}
	p := a.Probe
	period := time.Duration(p.PeriodSeconds) * time.Second
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	next := time.Now().Add(time.Duration(p.InitialDelaySeconds) * time.Second)
	var st ProbeStatus
	for st.ConsecutiveFailures < p.FailureThreshold {
		if !sleepUntil(ctx, next) {
			return nil
		}
		next = time.Now().Add(period)
		result, msg := a.check(ctx, timeout)
		if ctx.Err() != nil {
			return nil
		}
		st = ProbeStatus{LastResult: result, Message: msg, ConsecutiveFailures: st.ConsecutiveFailures + 1}
		if result == ProbeSuccess {
			st.ConsecutiveFailures = 0
		}
		if st.ConsecutiveFailures < p.FailureThreshold {
			if err := recordProbe(stateDir, pod, app, st); err != nil {
				return err
			}
		}
	}
	st.Acted = p.Action
	if p.Action == RestartApp {
		st.ConsecutiveFailures = 0
	}
	if err := recordProbe(stateDir, pod, app, st); err != nil {
		return err
	}
	if err := act(ctx, stateDir, pod, app, p.Action, open); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// act restarts app or ends pod, as action says, without waiting for the
// jobs, which stop the probe that calls it.
func act(ctx context.Context, stateDir, pod, app string, action ProbeAction, open func(context.Context) (*manager.Conn, error)) error {
	if action == FailPod {
		if err := markStopping(stateDir, pod); err != nil {
			return err
		}
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	if action == FailPod {
		return queueStops(ctx, mgr, SliceUnit(pod))
	}
	_, err = mgr.RestartUnit(ctx, AppUnit(pod, app), "replace")
	return err
}

// recordProbe sets the probe state in app's record, under the pod's lock.
func recordProbe(stateDir, pod, app string, ps ProbeStatus) error {
	unlock, err := lock(stateDir, pod)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := readAppOrNew(stateDir, pod, app)
	if err != nil {
		return err
	}
	s.Probe = &ps
	return WriteApp(stateDir, pod, s)
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
