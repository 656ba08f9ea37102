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
// Without a Client it records none; a record that fails is logged and not
// tried again.
func (p *Provider) containerEvents(e *entry, pod *corev1.Pod, s podState) {
	if p.cfg.Client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, a := range s.Apps {
		if run := a.runStart(); !run.IsZero() {
			p.recordOnce(ctx, e, pod, a.Name, "Created", run.String(), corev1.EventTypeNormal, "Created", "Created container: "+a.Name)
			p.recordOnce(ctx, e, pod, a.Name, "Started", run.String(), corev1.EventTypeNormal, "Started", "Started container "+a.Name)
		}
		for _, kind := range []string{"Liveness", "Readiness", "Startup"} {
			f, failed := a.ProbeFailures[kind]
			switch {
			case !failed:
				// The next failure is news again.
				p.forget(e, a.Name, kind+" failure")
			case f.Failures > 0:
				p.recordOnce(ctx, e, pod, a.Name, kind+" failure", fmt.Sprint(f.Failures, f.Message), corev1.EventTypeWarning, "Unhealthy", kind+" probe failed: "+f.Message)
			case !f.Acting:
				// The probe restarted the app at this failure: the app's
				// last exit is the restart's, which names both events.
				at := a.LastExitAt.String()
				p.recordOnce(ctx, e, pod, a.Name, kind+" failure", at, corev1.EventTypeWarning, "Unhealthy", kind+" probe failed: "+f.Message)
				p.recordOnce(ctx, e, pod, a.Name, kind+" kill", at, corev1.EventTypeNormal, "Killing",
					fmt.Sprintf("Container %s failed %s probe, will be restarted", a.Name, strings.ToLower(kind)))
			}
		}
		if a.PostStartFailed {
			at := a.LastExitAt.String()
			p.recordOnce(ctx, e, pod, a.Name, "FailedPostStartHook", at, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
			p.recordOnce(ctx, e, pod, a.Name, "postStart kill", at, corev1.EventTypeNormal, "Killing", "FailedPostStartHook")
		}
		for kind, msg := range a.Warnings {
			p.recordOnce(ctx, e, pod, a.Name, kind, msg, corev1.EventTypeWarning, "ProbeWarning", kind+" probe warning: "+msg)
		}
		if a.State == "restarting" && a.Backoff > 0 {
			p.recordOnce(ctx, e, pod, a.Name, "BackOff", a.LastExitAt.String(), corev1.EventTypeWarning, "BackOff",
				fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", a.Name, pod.Name, pod.Namespace, pod.UID))
		}
	}
}

// stoppingEvents records a Killing event ("Stopping container C") on each
// container of Pod pod that runs in state s, as the kubelet records one
// when it stops a container of a Pod being deleted.
func (p *Provider) stoppingEvents(ctx context.Context, pod *corev1.Pod, s podState) {
	if p.cfg.Client == nil {
		return
	}
	for _, a := range s.Apps {
		if a.State != "running" {
			continue
		}
		if err := p.event(ctx, pod, containerField(pod, a.Name), corev1.EventTypeNormal, "Killing", "Stopping container "+a.Name); err != nil {
			p.log.Warn("cannot record an event", "pod", key(pod.Namespace, pod.Name), "container", a.Name, "reason", "Killing", "err", err)
		}
	}
}

// recordOnce records the event of type typ and reason with message on
// container app of pod unless e has recorded the same what (a probe's
// kind, BackOff, Started, ...) with the same value (the warning, the run
// or the exit it follows) already.
func (p *Provider) recordOnce(ctx context.Context, e *entry, pod *corev1.Pod, app, what, value, typ, reason, message string) {
	k := app + "/" + what
	p.mu.Lock()
	seen := e.warned[k] == value
	if !seen {
		if e.warned == nil {
			e.warned = map[string]string{}
		}
		e.warned[k] = value
	}
	p.mu.Unlock()
	if seen {
		return
	}
	if err := p.event(ctx, pod, containerField(pod, app), typ, reason, message); err != nil {
		p.log.Warn("cannot record an event", "pod", key(pod.Namespace, pod.Name), "container", app, "reason", reason, "err", err)
	}
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
