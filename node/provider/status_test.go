package provider

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podStatus on records written by unitrun pods: an init container that
// succeeded is ready, as the kubelet has it; a sidecar whose startup probe
// has not passed yet, or that crashed before it did, has let the apps
// after it start (a sidecar's startup probe holds nothing in unitrun), so
// the pod is Initialized and Running, not Pending beside running
// containers.
func TestPodStatusInitAndSidecar(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup"},
			{Name: "proxy", RestartPolicy: &always, StartupProbe: &corev1.Probe{}},
		},
		Containers: []corev1.Container{{Name: "app"}},
	}}
	now := time.Now().Round(0)
	zero, one := 0, 1
	for _, c := range []struct {
		name  string
		proxy appState
	}{
		{"sidecar's startup probe pending", appState{Name: "proxy", State: "running", StartedAt: now}},
		{"sidecar crashed before its startup probe passed", appState{Name: "proxy", State: "restarting", ExitCode: &one, Backoff: time.Second, StartedAt: now, LastExitAt: now}},
	} {
		s := podState{Phase: "Running", CreatedAt: now, StartedAt: now, Apps: []appState{
			{Name: "setup", State: "exited", ExitCode: &zero, Ready: true, StartedAt: now, FinishedAt: now},
			c.proxy,
			{Name: "app", State: "running", Ready: true, StartedAt: now},
		}}
		st := podStatus(pod, "p", s)
		if st.Phase != corev1.PodRunning {
			t.Errorf("%s: phase %s, want Running", c.name, st.Phase)
		}
		for _, cond := range st.Conditions {
			if cond.Type == corev1.PodInitialized && cond.Status != corev1.ConditionTrue {
				t.Errorf("%s: Initialized %s, want True", c.name, cond.Status)
			}
		}
		if setup := st.InitContainerStatuses[0]; !setup.Ready || setup.State.Terminated == nil || setup.State.Terminated.ExitCode != 0 {
			t.Errorf("%s: init container that succeeded: ready %v, state %+v; want ready, terminated 0", c.name, setup.Ready, setup.State)
		}
	}
}

// A Pod stays Pending until each of its containers has run, as the
// kubelet's phase has it: one container running beside one still being
// created is not Running yet.
func TestPodStatusPendingUntilContainersRun(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	now := time.Now().Round(0)
	one := 1
	for _, c := range []struct {
		name string
		b    appState
		want corev1.PodPhase
	}{
		{"b not started", appState{Name: "b", State: "waiting"}, corev1.PodPending},
		{"b starting", appState{Name: "b", State: "restarting"}, corev1.PodPending},
		{"b running", appState{Name: "b", State: "running", StartedAt: now}, corev1.PodRunning},
		{"b in back-off after a run", appState{Name: "b", State: "restarting", ExitCode: &one, Backoff: time.Second, StartedAt: now, LastExitAt: now}, corev1.PodRunning},
	} {
		s := podState{Phase: "Running", CreatedAt: now, StartedAt: now, Apps: []appState{{Name: "a", State: "running", StartedAt: now}, c.b}}
		if got := podStatus(pod, "p", s).Phase; got != c.want {
			t.Errorf("%s: phase %s, want %s", c.name, got, c.want)
		}
	}
}
