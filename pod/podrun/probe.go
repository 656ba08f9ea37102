package podrun

import (
	"context"
	"fmt"
	"time"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
)

// RunProbe is the ExecStart= of an app's probe service, which the app's
// service starts and whose stop stops it. It waits InitialDelaySeconds, then
// every PeriodSeconds checks the app ([pod.App.check], bounded by
// TimeoutSeconds) and records the result in the app's record. At
// FailureThreshold consecutive failures it acts, then waits for its own
// stop: restart restarts the app through the manager, which restarts the
// probe service too, so the next probe starts over from the initial delay
// (reap-app counts the restart); fail-pod ends the pod, whose phase becomes
// Failed. It returns nil when ctx is done.
func RunProbe(ctx context.Context, stateDir, name, app string, open func(context.Context) (*manager.Conn, error)) error {
	m, err := pod.LoadSpec(stateDir, name)
	if err != nil {
		return err
	}
	a := m.App(app)
	if a == nil || a.Probe == nil {
		return fmt.Errorf("pod %s has no probed app %q", name, app)
	}
	p := a.Probe
	period := time.Duration(p.PeriodSeconds) * time.Second
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	next := time.Now().Add(time.Duration(p.InitialDelaySeconds) * time.Second)
	var st pod.ProbeStatus
	for st.ConsecutiveFailures < p.FailureThreshold {
		if !sleepUntil(ctx, next) {
			return nil
		}
		next = time.Now().Add(period)
		result, msg := check(ctx, a, timeout)
		if ctx.Err() != nil {
			return nil
		}
		st = pod.ProbeStatus{LastResult: result, Message: msg, ConsecutiveFailures: st.ConsecutiveFailures + 1}
		if result == pod.ProbeSuccess {
			st.ConsecutiveFailures = 0
		}
		if st.ConsecutiveFailures < p.FailureThreshold {
			if err := recordProbe(stateDir, name, app, st); err != nil {
				return err
			}
		}
	}
	st.Acted = p.Action
	if p.Action == pod.RestartApp {
		st.ConsecutiveFailures = 0
	}
	if err := recordProbe(stateDir, name, app, st); err != nil {
		return err
	}
	if err := act(ctx, stateDir, name, app, p.Action, open); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// act restarts app or ends pod name, as action says, without waiting for the
// jobs, which stop the probe that calls it.
func act(ctx context.Context, stateDir, name, app string, action pod.ProbeAction, open func(context.Context) (*manager.Conn, error)) error {
	if action == pod.FailPod {
		if err := pod.MarkStopping(stateDir, name); err != nil {
			return err
		}
	}
	mgr, err := open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	if action == pod.FailPod {
		return queueStops(ctx, mgr, pod.SliceUnit(name))
	}
	_, err = mgr.RestartUnit(ctx, pod.AppUnit(name, app), "replace")
	return err
}

// recordProbe sets the probe state in app's record, under the pod's lock.
func recordProbe(stateDir, name, app string, ps pod.ProbeStatus) error {
	unlock, err := pod.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := pod.ReadAppOrNew(stateDir, name, app)
	if err != nil {
		return err
	}
	s.Probe = &ps
	return pod.WriteApp(stateDir, name, s)
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
