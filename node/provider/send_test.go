package provider

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A status read between the records of a pod's end, the app's exit
// (the pod has succeeded) and its sidecar's (still running), is not sent:
// virtual-kubelet sends nothing after the first ended status, so the
// sidecar would show running for ever. Once the sidecar's exit is
// recorded, the status is sent.
func TestEndedStatusWaitsForSidecar(t *testing.T) {
	pod := newPod("ending", corev1.RestartPolicyNever, []string{"exec sleep 600"}, "exit 0")
	always := corev1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers[0].RestartPolicy = &always
	now := time.Now()
	zero := 0
	exited := appState{Name: "app0", State: "exited", ExitCode: &zero, Result: "success", StartedAt: now, FinishedAt: now}
	state := podState{Phase: "Succeeded", ExitCode: &zero, CreatedAt: now, StartedAt: now, FinishedAt: now,
		Apps: []appState{{Name: "init0", State: "running", StartedAt: now}, exited}}
	e := &entry{pod: pod, name: "k8s-ending", final: &state}
	p := &Provider{log: slog.New(slog.DiscardHandler), pods: map[string]*entry{key(pod.Namespace, pod.Name): e}}
	var sent []corev1.PodStatus
	p.notify = func(pod *corev1.Pod) { sent = append(sent, pod.Status) }

	p.sendStatus(context.Background(), e)
	if len(sent) != 0 {
		t.Fatalf("sent %s with container statuses %+v while the sidecar runs; want nothing sent", sent[0].Phase, sent[0].InitContainerStatuses)
	}
	sigterm := 143
	state.Apps[0] = appState{Name: "init0", State: "failed", ExitCode: &sigterm, Signal: "TERM", Result: "signal", StartedAt: now, FinishedAt: now}
	p.sendStatus(context.Background(), e)
	if len(sent) != 1 || sent[0].Phase != corev1.PodSucceeded || sent[0].InitContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("sent %+v; want one Succeeded status with the sidecar terminated", sent)
	}
}
