package provider

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unitrun/unitrun/unit/exit"
)

// podState is what a unitrun pod's status files say of it.
type podState struct {
	Phase      string // Pending, Running, Succeeded, Failed
	ExitCode   *int
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	Apps       []appState
}

// appState is what an app's status file says of it.
type appState struct {
	Name       string
	State      string // waiting, running, restarting, exited, failed
	ExitCode   *int
	Signal     string // "TERM", without SIG
	Result     string // systemd's: success, exit-code, signal, oom-kill, ...
	Restarts   int
	Backoff    time.Duration
	Message    string
	StartedAt  time.Time
	FinishedAt time.Time
	LastExitAt time.Time
	// LastStartedAt is when the run that ended at LastExitAt started.
	LastStartedAt time.Time
	// TerminationMessage is what the app's last run wrote to its
	// terminationMessagePath; LogTail, for a failure without one, its
	// log's last lines. Both are read only for an app that does not run.
	TerminationMessage, LogTail string
	// Ready is the app's readiness in its current run (record.AppStatus's);
	// StartupPassed says its startup probe has succeeded in it.
	Ready, StartupPassed bool
	// Warnings are the notes of the app's probes whose last check
	// succeeded with one (an http probe's redirect to another host), by
	// kind: Liveness, Readiness, Startup.
	Warnings map[string]string
	// ProbeFailures are the app's probes whose last check failed, by kind.
	ProbeFailures map[string]probeFailure
	// PostStartFailed says the app's last run ended because its postStart
	// hook failed.
	PostStartFailed bool
	// Image is the app's registry image; zero for an image --image maps.
	Image containerImage
}

// probeFailure is a probe's failed check.
type probeFailure struct {
	Message string
	// Failures counts the consecutive failed checks. It is 0 once a
	// liveness or startup probe has restarted the app at this check
	// (Acting until the app's exit is recorded, then that exit is the
	// app's last).
	Failures int
	Acting   bool
}

// runStart is when the app's current run started, or, if it does not
// run, its last run; zero if none got as far as its command.
func (a appState) runStart() time.Time {
	if a.State == "running" {
		return a.StartedAt
	}
	return a.LastStartedAt
}

func (s podState) app(name string) (appState, bool) {
	for _, a := range s.Apps {
		if a.Name == name {
			return a, true
		}
	}
	return appState{}, false
}

// ended reports whether the pod has ended.
func (s podState) ended() bool { return s.Phase == "Succeeded" || s.Phase == "Failed" }

// podStatus turns the status of unitrun pod name, which runs p, into p's
// status. Every field comes from the status files; a fact they do not
// hold (a container's termination before its last one) is left out.
func podStatus(p *corev1.Pod, name string, s podState) *corev1.PodStatus {
	st := &corev1.PodStatus{
		Phase:     corev1.PodPhase(s.Phase),
		StartTime: timeOf(s.StartedAt),
		QOSClass:  qosClass(p),
	}
	if st.StartTime == nil {
		st.StartTime = timeOf(s.CreatedAt)
	}
	initDone, initAt, sidecarsReady := true, s.StartedAt, true
	var incomplete []string // the kubelet's list: not succeeded, or a sidecar not started
	// Once a container has run, the sidecars had started: a sidecar's
	// restart later does not take the pod back.
	appsRan := slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool {
		a, _ := s.app(c.Name)
		return a.State != "" && a.State != "waiting"
	})
	for _, c := range p.Spec.InitContainers {
		a, _ := s.app(c.Name)
		cs := containerStatus(name, c, a, "PodInitializing")
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		switch {
		case isSidecar(c):
			// Done with initializing once it has started (its command
			// runs and its startup probe, if any, has passed): the apps
			// after it start then (docs/pods.md). Its readiness counts
			// in the pod's, as Kubernetes counts a sidecar's.
			sidecarsReady = sidecarsReady && cs.Ready
			if !*cs.Started && !appsRan && !s.ended() {
				initDone = false
			} else if a.StartedAt.After(initAt) {
				initAt = a.StartedAt
			}
			if cs.Started == nil || !*cs.Started {
				incomplete = append(incomplete, c.Name)
			}
			continue
		case a.State != "exited":
			initDone = false
		case a.FinishedAt.After(initAt):
			initAt = a.FinishedAt
		}
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			incomplete = append(incomplete, c.Name)
		}
	}
	waiting := "ContainerCreating"
	if !initDone {
		waiting = "PodInitializing"
	}
	ready, readyAt := !s.ended() && sidecarsReady, time.Time{}
	for _, c := range p.Spec.Containers {
		a, _ := s.app(c.Name)
		cs := containerStatus(name, c, a, waiting)
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		if !cs.Ready {
			ready = false
		}
		readyAt = latest(readyAt, a.StartedAt, a.LastExitAt, a.FinishedAt)
	}
	if st.Phase == corev1.PodRunning && (!initDone || slices.ContainsFunc(st.ContainerStatuses, neverRan)) {
		// Kubernetes' phase while init containers run, and until every
		// container has run.
		st.Phase = corev1.PodPending
	}
	if s.ended() {
		readyAt = latest(readyAt, s.FinishedAt)
	}
	if readyAt.IsZero() {
		readyAt = s.CreatedAt
	}
	if !initDone {
		initAt = s.CreatedAt
	}
	initCond := initialized(initDone, initAt, incomplete)
	if st.Phase == corev1.PodSucceeded {
		initCond.Reason = "PodCompleted"
	}
	st.Conditions = []corev1.PodCondition{
		condition(corev1.PodScheduled, true, s.CreatedAt, ""),
		initCond,
		readyCondition(corev1.ContainersReady, ready, readyAt, p, st),
		readyCondition(corev1.PodReady, ready, readyAt, p, st),
	}
	return st
}

// readyCondition is condition t (ContainersReady or Ready) of Pod p whose
// status is st, with the kubelet's reason and message when it is False:
// PodCompleted or PodFailed for a Pod that has ended, else
// ContainersNotReady, naming the sidecars and containers not ready.
func readyCondition(t corev1.PodConditionType, ready bool, at time.Time, p *corev1.Pod, st *corev1.PodStatus) corev1.PodCondition {
	c := condition(t, ready, at, "")
	switch {
	case ready:
	case st.Phase == corev1.PodSucceeded:
		c.Reason = "PodCompleted"
	case st.Phase == corev1.PodFailed:
		c.Reason = "PodFailed"
	default:
		var unready []string
		for i, ctr := range p.Spec.InitContainers {
			if isSidecar(ctr) && !st.InitContainerStatuses[i].Ready {
				unready = append(unready, ctr.Name)
			}
		}
		for i, ctr := range p.Spec.Containers {
			if !st.ContainerStatuses[i].Ready {
				unready = append(unready, ctr.Name)
			}
		}
		c.Reason, c.Message = "ContainersNotReady", fmt.Sprintf("containers with unready status: %s", unready)
	}
	return c
}

// pastDeadline reports whether Pod p, whose unitrun pod is in state s, has
// been active for its activeDeadlineSeconds: from its start until now, or
// until it ended.
func pastDeadline(p *corev1.Pod, s podState, now time.Time) bool {
	d := p.Spec.ActiveDeadlineSeconds
	if d == nil || s.StartedAt.IsZero() {
		return false
	}
	if s.ended() {
		now = s.FinishedAt
	}
	return now.Sub(s.StartedAt) >= time.Duration(*d)*time.Second
}

// neverRan reports whether the container of cs waits for its first run,
// which the kubelet counts as waiting (one that waits to run again counts
// as stopped).
func neverRan(cs corev1.ContainerStatus) bool {
	return cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil
}

// keepTransitions gives each readiness condition of st (Ready and
// ContainersReady) the transition time that prev, the status last sent,
// gives it if its status is the same, and now if it changed, as the
// kubelet times a condition: a readiness probe's success, which changes
// them, has no recorded time. Without prev, st's times, from the records,
// stay.
func keepTransitions(st, prev *corev1.PodStatus, now time.Time) {
	if prev == nil {
		return
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != corev1.PodReady && c.Type != corev1.ContainersReady {
			continue
		}
		for _, old := range prev.Conditions {
			if old.Type != c.Type {
				continue
			}
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			} else {
				c.LastTransitionTime = metav1.NewTime(now)
			}
		}
	}
}

// isSidecar reports whether init container c is a sidecar (restartPolicy
// Always), which runs beside the app containers.
func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// initialized is the Initialized condition: with the kubelet's reason and
// message while init containers have not completed.
func initialized(done bool, at time.Time, incomplete []string) corev1.PodCondition {
	c := condition(corev1.PodInitialized, done, at, "ContainersNotInitialized")
	if !done {
		c.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	return c
}

func condition(t corev1.PodConditionType, ok bool, at time.Time, reason string) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at), Reason: reason}
	if ok {
		c.Status, c.Reason = corev1.ConditionTrue, ""
	}
	return c
}

// containerStatus is the status of container c, which app a of pod name
// runs; waiting is the reason of a container not started yet.
func containerStatus(name string, c corev1.Container, a appState, waiting string) corev1.ContainerStatus {
	running := a.State == "running"
	// Started as Kubernetes has it: running, past its startup probe.
	started := running && (c.StartupProbe == nil || a.StartupPassed)
	cs := corev1.ContainerStatus{
		Name:         c.Name,
		Image:        cmp.Or(a.Image.Image, c.Image),
		ImageID:      cmp.Or(a.Image.ImageID, c.Image),
		ContainerID:  "unitrun://" + unitName(name, c.Name),
		RestartCount: int32(a.Restarts),
		// A's readiness ends with any exit but an init app's success,
		// which Kubernetes counts as ready too.
		Ready:   a.Ready,
		Started: &started,
	}
	switch a.State {
	case "running":
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(a.StartedAt)}
		if a.Restarts > 0 && a.ExitCode != nil {
			// The run before this one.
			cs.LastTerminationState.Terminated = terminated(a, a.LastStartedAt, a.LastExitAt)
		}
	case "restarting":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: fmt.Sprintf("back-off %s restarting failed container", a.Backoff)}
		if a.Backoff == 0 {
			cs.State.Waiting.Reason, cs.State.Waiting.Message = "ContainerCreating", ""
		}
		if a.ExitCode != nil {
			cs.LastTerminationState.Terminated = terminated(a, a.LastStartedAt, a.LastExitAt)
		}
	case "exited", "failed":
		cs.State.Terminated = terminated(a, a.StartedAt, a.FinishedAt)
		if cs.State.Terminated == nil {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "Unknown", Message: "unitrun recorded no exit code"}
		}
	default:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		if a.Message != "" {
			cs.State.Waiting.Message = a.Message
		}
	}
	// The run that ended last, whose file and log are not yet a next
	// run's.
	last := cs.State.Terminated
	if a.State == "restarting" {
		last = cs.LastTerminationState.Terminated
	}
	if m := terminationMessage(c, a); last != nil && m != "" {
		last.Message = m
	}
	return cs
}

// terminationMessage is the message of a's last exit, as the kubelet takes
// it: what it wrote to its terminationMessagePath, else, under
// FallbackToLogsOnError, its log's tail if it failed.
func terminationMessage(c corev1.Container, a appState) string {
	if a.TerminationMessage != "" || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		return a.TerminationMessage
	}
	return a.LogTail
}

// terminated describes a's last exit, of the run started at started (zero
// if it never got as far as its command), which happened at finished.
func terminated(a appState, started, finished time.Time) *corev1.ContainerStateTerminated {
	if a.ExitCode == nil {
		return nil
	}
	// The exit as unitrun writes it everywhere (unit.Exit): exit code
	// 128+N for signal N, as the kubelet's runtimes report it too.
	x := exit.ParseExit(a.ExitCode, a.Signal, a.Result)
	t := &corev1.ContainerStateTerminated{
		ExitCode:   int32(x.ExitCode),
		Signal:     int32(x.Signal),
		StartedAt:  metav1.NewTime(started),
		FinishedAt: metav1.NewTime(finished),
		Message:    a.Message,
	}
	switch {
	case x.Result == "oom-kill":
		t.Reason = "OOMKilled"
	case a.Message != "":
		// The run could not execute the container's command (the
		// message says why), as the kubelet's StartError.
		t.Reason = "StartError"
	case x.ExitCode == 0 && x.Signal == 0:
		t.Reason = "Completed"
	default:
		t.Reason = "Error"
	}
	return t
}

// qosClass is the Pod's QoS class, as the API server computes it; a status
// update must keep it.
func qosClass(p *corev1.Pod) corev1.PodQOSClass {
	if p.Status.QOSClass != "" {
		return p.Status.QOSClass
	}
	return corev1.PodQOSBestEffort
}

func timeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// refusedMessage is the message that says why this node refuses a Pod, err
// naming the fields.
func refusedMessage(err error) string { return "unitrun-node cannot run this pod: " + err.Error() }

// refusedStatus is the status of a Pod this node refuses: Failed, its
// reason naming the fields.
func refusedStatus(p *corev1.Pod, err error, at time.Time) *corev1.PodStatus {
	st := &corev1.PodStatus{
		Phase:     corev1.PodFailed,
		Reason:    "Unsupported",
		Message:   refusedMessage(err),
		StartTime: timeOf(at),
		QOSClass:  qosClass(p),
		Conditions: []corev1.PodCondition{
			condition(corev1.PodScheduled, true, at, ""),
			condition(corev1.PodInitialized, false, at, "Unsupported"),
			condition(corev1.ContainersReady, false, at, "Unsupported"),
			condition(corev1.PodReady, false, at, "Unsupported"),
		},
	}
	for _, c := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, refusedContainer(c))
	}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, refusedContainer(c))
	}
	return st
}

// waitingStatus is the status of Pod p, which waits for what err says
// since at: Pending, its containers ContainerCreating.
func waitingStatus(p *corev1.Pod, err error, at time.Time) *corev1.PodStatus {
	st := refusedStatus(p, err, at)
	st.Phase, st.Reason, st.Message = corev1.PodPending, "", ""
	for i := range st.Conditions {
		if st.Conditions[i].Type != corev1.PodScheduled {
			st.Conditions[i].Reason = "ContainersNotReady"
		}
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			list[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: "waiting for " + err.Error()}
		}
	}
	return st
}

func refusedContainer(c corev1.Container) corev1.ContainerStatus {
	f := false
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, Started: &f,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "Unsupported"}},
	}
}
