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

// While an init container runs, Initialized is False with the kubelet's
// reason and message, which lists the init containers not yet succeeded.
func TestPodStatusInitializing(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init1"}, {Name: "init2"}, {Name: "init3"}},
		Containers:     []corev1.Container{{Name: "app"}},
	}}
	now := time.Now().Round(0)
	zero := 0
	s := podState{Phase: "Running", CreatedAt: now, StartedAt: now, Apps: []appState{
		{Name: "init1", State: "exited", ExitCode: &zero, StartedAt: now, FinishedAt: now},
		{Name: "init2", State: "running", StartedAt: now},
		{Name: "init3", State: "waiting"},
		{Name: "app", State: "waiting"},
	}}
	st := podStatus(pod, "p", s)
	if st.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", st.Phase)
	}
	for _, c := range st.Conditions {
		if c.Type != corev1.PodInitialized {
			continue
		}
		want := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, LastTransitionTime: c.LastTransitionTime,
			Reason: "ContainersNotInitialized", Message: "containers with incomplete status: [init2 init3]"}
		if c != want {
			t.Errorf("Initialized %+v, want %+v", c, want)
		}
	}
}
