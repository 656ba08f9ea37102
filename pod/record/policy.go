package record

import (
	"fmt"
	"slices"
	"time"
)

// Decide applies the policies p to an app's exit.
//
// The app's restart policy (its own, else the pod's; Never for an init
// app) decides whether it runs again:
//
//	restartPolicy  app succeeded  app failed  app stopped on request
//	Never          ends           ends        ends
//	OnFailure      ends           restarts    ends
//	Always         restarts       restarts    ends
//
// "Succeeded" is Exit.Success; "stopped on request" is Event.Stopped, as
// with systemd's Restart=, which these policies map onto. An app that
// restarts first waits the back-off delay:
// none after its first run, or after a run that lasted
// restartBackoff.reset or longer, as the kubelet restarts a container at
// once the first time; restartBackoff.initial after a run that followed
// such a restart; otherwise twice the delay before the run that just
// ended, at most restartBackoff.max.
//
// An app that restarts has not ended and never ends the pod. Once an app
// has ended for good, the exit policy decides whether the pod ends:
//
//	exitPolicy     the pod ends when
//	first-failure  an app fails, or every app has ended
//	any            an app that is not an init app ends, or every app has ended
//	all            every app has ended
//
// Under every exit policy, an init app that fails for good ends the pod:
// the apps after it never start. A sidecar (restart policy Always) ends
// only when stopped, and never ends the pod: Event.Ended lists no sidecar,
// and "every app" above means every app but the sidecars.
//
// Decision.PodExitCode is [PodExitCode] of the apps that have ended, this
// one included: 0 if every one succeeded, else the exit code of the one that
// failed first. The apps still running when the pod ends are stopped, and
// their exits count too: the pod's final exit code, PodExitCode of every
// app's last exit, differs from the Decision's only if no app had failed
// before and one fails as it is stopped (say, killed at its stopTimeout).
func Decide(p *Policy, ev Event) (Decision, error) {
	a := p.App(ev.App)
	if a == nil {
		return Decision{}, fmt.Errorf("pod %s has no app %q", p.Pod, ev.App)
	}
	seen := map[string]bool{ev.App: true}
	for _, o := range ev.Ended {
		if seen[o.App] || p.App(o.App) == nil || p.App(o.App).Sidecar {
			return Decision{}, fmt.Errorf("ended app %q: not another app of pod %s that is not a sidecar, listed once", o.App, p.Pod)
		}
		seen[o.App] = true
	}
	if !ev.Stopped && Restarts(a.RestartPolicy, ev.Exit.Success) {
		return Decision{Restart: true, Delay: NextDelay(p.RestartBackoff, ev.History, ev.Now)}, nil
	}
	if a.Sidecar {
		return Decision{}, nil
	}
	ended := append(slices.Clone(ev.Ended), Outcome{App: ev.App, Exit: ev.Exit, At: ev.Now})
	all := len(ended) == len(p.Apps)-p.sidecars()
	var end bool
	switch {
	case all, a.Init && !ev.Exit.Success:
		end = true
	case p.ExitPolicy == FirstFailure:
		end = !ev.Exit.Success
	case p.ExitPolicy == AnyExit:
		end = !a.Init
	}
	d := Decision{EndPod: end}
	if end {
		d.PodExitCode = PodExitCode(ended)
	}
	return d, nil
}

// An Event is an app's exit, with what the policies need to know about the
// pod at that moment.
type Event struct {
	App     string    // the app that exited
	Exit    Exit      // how it exited
	History History   // its past runs
	Ended   []Outcome // the other apps that have ended for good
	// Stopped says the app was stopped on request (pod stop, systemctl
	// stop, or the pod ending), so it does not restart.
	Stopped bool
	Now     time.Time // when the app exited
}

// History is what the back-off needs to know about an app's past runs.
type History struct {
	// Restarted says the run that just ended followed a restart: it was
	// not the app's first.
	Restarted bool
	// LastDelay is the delay before the run that just ended; 0 if that was
	// the first run or followed a restart made at once.
	LastDelay time.Duration
	// StartedAt is when the run that just ended started; zero if unknown,
	// in which case the delay is never reset.
	StartedAt time.Time
}

// An Outcome is an app that has ended for good.
type Outcome struct {
	App  string
	Exit Exit
	At   time.Time // when it ended
}

// A Decision is what happens after an app's exit.
type Decision struct {
	// Restart says the app runs again, after Delay.
	Restart bool
	Delay   time.Duration
	// EndPod says the pod ends now: the apps still running are stopped.
	EndPod bool
	// PodExitCode is the pod's exit code, when EndPod is set.
	PodExitCode int
}

// PodExitCode is the exit code of a pod whose apps ended as ended says: 0
// if every app succeeded, else the Exit.Code() of the one that ended first
// among those that failed, or 1 if that code is 0 (an app whose probe ended
// the pod may exit 0 when stopped). Outcomes at the same time count in list
// order.
func PodExitCode(ended []Outcome) int {
	sorted := slices.Clone(ended)
	slices.SortStableFunc(sorted, func(a, b Outcome) int { return a.At.Compare(b.At) })
	for _, o := range sorted {
		if !o.Exit.Success {
			return max(o.Exit.Code(), 1)
		}
	}
	return 0
}

// Restarts reports whether policy runs an app again after an exit that
// succeeded (success) or not.
func Restarts(policy RestartPolicy, success bool) bool {
	return policy == Always || policy == OnFailure && !success
}

// NextDelay is the delay before an app's next run under the back-off b,
// given the history h of its run that ended at now, as the kubelet's
// back-off of a container's restarts: none after its first run or a run
// that lasted b.Reset or longer, b.Initial after a run that followed a
// restart made at once, else twice the last delay (at least b.Initial),
// up to b.Max.
func NextDelay(b Backoff, h History, now time.Time) time.Duration {
	ranLong := !h.StartedAt.IsZero() && now.Sub(h.StartedAt) >= b.Reset
	switch {
	case ranLong, !h.Restarted && h.LastDelay <= 0:
		return 0
	case h.LastDelay <= 0:
		return b.Initial
	case h.LastDelay >= b.Max/2:
		return b.Max
	}
	return max(2*h.LastDelay, b.Initial)
}

// sidecars counts p's sidecars.
func (p *Policy) sidecars() int {
	n := 0
	for _, a := range p.Apps {
		if a.Sidecar {
			n++
		}
	}
	return n
}

// A Policy is what the policies need to know of a pod: its exit policy
// (the manifest's, or the one its start chose), its back-off, and each
// app's restart policy and kind, in the manifest's order. Package pod
// makes it from the manifest (Manifest.Policy) and saves it in the pod's
// state ([WritePolicy]), where an exit's hook reads it.
type Policy struct {
	Pod            string      `json:"pod"`
	ExitPolicy     ExitPolicy  `json:"exitPolicy"`
	RestartBackoff Backoff     `json:"restartBackoff"`
	Apps           []AppPolicy `json:"apps"`
}

// An AppPolicy is what the policies need to know of one app.
type AppPolicy struct {
	Name string `json:"name"`
	// RestartPolicy is the app's effective restart policy: its own, else
	// the pod's; Never for an init app that is not retried.
	RestartPolicy RestartPolicy `json:"restartPolicy"`
	Init          bool          `json:"init,omitzero"`
	Sidecar       bool          `json:"sidecar,omitzero"`
}

// App returns p's app called name, or nil.
func (p *Policy) App(name string) *AppPolicy {
	for i := range p.Apps {
		if p.Apps[i].Name == name {
			return &p.Apps[i]
		}
	}
	return nil
}

// validate checks the names and policies of p.
func (p *Policy) validate() error {
	if err := CheckNames(p.Pod); err != nil {
		return err
	}
	if err := p.ExitPolicy.Check(); err != nil {
		return fmt.Errorf("exit policy %w", err)
	}
	for _, a := range p.Apps {
		if err := CheckNames(p.Pod, a.Name); err != nil {
			return err
		}
		if !a.RestartPolicy.Valid() {
			return fmt.Errorf("app %s: restart policy %q: must be Never, Always or OnFailure", a.Name, a.RestartPolicy)
		}
	}
	return nil
}
