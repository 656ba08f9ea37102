package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerEvents records, through the API, the events of Pod pod's
// containers (state s of e's unitrun pod) that were not recorded yet,
// with the kubelet's reasons and messages, on the container:
//
//   - Created ("Created container: C") and Started ("Started container
//     C") for each run of a container, as the kubelet records its start;
//   - Unhealthy for each failed check of a probe ("Liveness probe failed:
//     ..."), and Killing when a liveness or startup probe restarts the
//     container ("Container C failed liveness probe, will be restarted");
//   - FailedPostStartHook ("PostStartHook failed", without the hook's
//     output, as the kubelet keeps it out of events) and Killing
//     ("FailedPostStartHook") for a run whose postStart hook failed;
//   - a ProbeWarning for each probe warning (an http probe's redirect to
//     another host, which it does not follow: "Liveness probe warning:
//     ...");
//   - a BackOff for each back-off of a container that exited (none for a
//     restart made at once) ("Back-off restarting failed container C in
//     pod P_NS(UID)").
//
// Without a Client it records none.
func (p *Provider) containerEvents(e *entry, pod *corev1.Pod, s podState) {
	if p.cfg.Client == nil {
		return
	}
	var news []containerEvent
	once := func(app, what, value, typ, reason, message string) {
		if p.isNew(e, app, what, value) {
			news = append(news, containerEvent{app, typ, reason, message})
		}
	}
	for _, a := range s.Apps {
		if run := a.runStart(); !run.IsZero() {
			once(a.Name, "Created", run.String(), corev1.EventTypeNormal, "Created", "Created container: "+a.Name)
			once(a.Name, "Started", run.String(), corev1.EventTypeNormal, "Started", "Started container "+a.Name)
		}
		for _, kind := range []string{"Liveness", "Readiness", "Startup"} {
			f, failed := a.ProbeFailures[kind]
			switch {
			case !failed:
				// The next failure is news again.
				p.forget(e, a.Name, kind+" failure")
			case f.Failures > 0:
				once(a.Name, kind+" failure", fmt.Sprint(f.Failures, f.Message), corev1.EventTypeWarning, "Unhealthy", kind+" probe failed: "+f.Message)
			case !f.Acting:
				// The probe restarted the app at this failure: the app's
				// last exit is the restart's, which names both events.
				at := a.LastExitAt.String()
				once(a.Name, kind+" failure", at, corev1.EventTypeWarning, "Unhealthy", kind+" probe failed: "+f.Message)
				once(a.Name, kind+" kill", at, corev1.EventTypeNormal, "Killing",
					fmt.Sprintf("Container %s failed %s probe, will be restarted", a.Name, strings.ToLower(kind)))
			}
		}
		if a.PostStartFailed {
			at := a.LastExitAt.String()
			once(a.Name, "FailedPostStartHook", at, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
			once(a.Name, "postStart kill", at, corev1.EventTypeNormal, "Killing", "FailedPostStartHook")
		}
		for kind, msg := range a.Warnings {
			once(a.Name, kind, msg, corev1.EventTypeWarning, "ProbeWarning", kind+" probe warning: "+msg)
		}
		if a.State == "restarting" && a.Backoff > 0 {
			once(a.Name, "BackOff", a.LastExitAt.String(), corev1.EventTypeWarning, "BackOff",
				fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", a.Name, pod.Name, pod.Namespace, pod.UID))
		}
	}
	p.sendEvents(pod, news)
}

// containerEvent is an event of type typ and reason with message on
// container app.
type containerEvent struct{ app, typ, reason, message string }

// stoppingEvents records a Killing event ("Stopping container C") on each
// container of Pod pod that runs in state s, as the kubelet records one
// when it stops a container of a Pod being deleted.
func (p *Provider) stoppingEvents(pod *corev1.Pod, s podState) {
	if p.cfg.Client == nil {
		return
	}
	var evs []containerEvent
	for _, a := range s.Apps {
		if a.State == "running" {
			evs = append(evs, containerEvent{a.Name, corev1.EventTypeNormal, "Killing", "Stopping container " + a.Name})
		}
	}
	p.sendEvents(pod, evs)
}

// sendEvents records evs on pod's containers through the API, in order,
// apart from the caller, as the kubelet's recorder sends its events from
// a queue of its own: a status or a stop never waits for the API. A
// record that fails is logged and not tried again.
func (p *Provider) sendEvents(pod *corev1.Pod, evs []containerEvent) {
	if len(evs) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, ev := range evs {
			if err := p.event(ctx, pod, containerField(pod, ev.app), ev.typ, ev.reason, ev.message); err != nil {
				p.log.Warn("cannot record an event", "pod", key(pod.Namespace, pod.Name), "container", ev.app, "reason", ev.reason, "err", err)
			}
		}
	}()
}

// isNew reports whether value of what (a probe's kind, BackOff,
// Started, ...) on container app of e is new: e has not recorded the same
// (the warning, the run or the exit it follows) last; it is then
// e's.
func (p *Provider) isNew(e *entry, app, what, value string) bool {
	k := app + "/" + what
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.warned[k] == value {
		return false
	}
	if e.warned == nil {
		e.warned = map[string]string{}
	}
	e.warned[k] = value
	return true
}

// forget forgets what e recorded of what on container app, so that the
// next value of it is recorded, whatever it is.
func (p *Provider) forget(e *entry, app, what string) {
	p.mu.Lock()
	delete(e.warned, app+"/"+what)
	p.mu.Unlock()
}

// event records an event of type typ (Normal, Warning) and reason with
// message on pod (on the field fieldPath of it, "" for the whole Pod)
// through the API, as the kubelet records one.
func (p *Provider) event(ctx context.Context, pod *corev1.Pod, fieldPath, typ, reason, message string) error {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			FieldPath: fieldPath,
		},
		Reason:         reason,
		Message:        message,
		Type:           typ,
		Source:         corev1.EventSource{Component: "kubelet", Host: p.cfg.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	_, err := p.cfg.Client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// containerField is the field path of container name in pod, as an
// event's involvedObject names it: spec.containers{name} or
// spec.initContainers{name}.
func containerField(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}
