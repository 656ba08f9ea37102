package provider

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerEvents records, through the API, the warnings of Pod pod's
// containers (state s of e's unitrun pod) that were not recorded yet, as
// the kubelet records them on the container: a ProbeWarning for each
// probe warning (an http probe's redirect to another host, which it does
// not follow: "Liveness probe warning: ..."), and a BackOff for each
// back-off of a container that exited (none for a restart made at once) ("Back-off restarting failed
// container C in pod P_NS(UID)"). Without a Client it records none; a
// record that fails is logged and not tried again.
func (p *Provider) containerEvents(e *entry, pod *corev1.Pod, s podState) {
	if p.cfg.Client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, a := range s.Apps {
		for kind, msg := range a.Warnings {
			p.recordOnce(ctx, e, pod, a.Name, kind, msg, "ProbeWarning", kind+" probe warning: "+msg)
		}
		if a.State == "restarting" && a.Backoff > 0 {
			p.recordOnce(ctx, e, pod, a.Name, "BackOff", a.LastExitAt.String(), "BackOff",
				fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", a.Name, pod.Name, pod.Namespace, pod.UID))
		}
	}
}

// recordOnce records the warning of reason with message on container app
// of pod unless e has recorded the same what (a probe's kind, BackOff)
// with the same value (the warning, the exit it follows) already.
func (p *Provider) recordOnce(ctx context.Context, e *entry, pod *corev1.Pod, app, what, value, reason, message string) {
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
	if err := p.event(ctx, pod, containerField(pod, app), reason, message); err != nil {
		p.log.Warn("cannot record an event", "pod", key(pod.Namespace, pod.Name), "container", app, "reason", reason, "err", err)
	}
}

// event records a warning of reason with message on pod (on the field
// fieldPath of it, "" for the whole Pod) through the API, as the kubelet
// records one.
func (p *Provider) event(ctx context.Context, pod *corev1.Pod, fieldPath, reason, message string) error {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			FieldPath: fieldPath,
		},
		Reason:         reason,
		Message:        message,
		Type:           corev1.EventTypeWarning,
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
