package provider

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podStatus on records written by unitrun pods: an init container that
// succeeded is ready, as the kubelet has it; a sidecar whose startup probe
// has not passed yet holds the apps after it, and the pod is Pending and
// not Initialized; once an app has run, a sidecar that crashed since does
// not take the pod back.
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
		name        string
		proxy, app  appState
		phase       corev1.PodPhase
		initialized bool
	}{
		{"sidecar's startup probe pending", appState{Name: "proxy", State: "running", StartedAt: now}, appState{Name: "app", State: "waiting"}, corev1.PodPending, false},
		{"sidecar started", appState{Name: "proxy", State: "running", StartedAt: now, StartupPassed: true}, appState{Name: "app", State: "running", StartedAt: now}, corev1.PodRunning, true},
		{"sidecar crashed after the app started", appState{Name: "proxy", State: "restarting", ExitCode: &one, Backoff: time.Second, StartedAt: now, LastExitAt: now}, appState{Name: "app", State: "running", Ready: true, StartedAt: now}, corev1.PodRunning, true},
	} {
		s := podState{Phase: "Running", CreatedAt: now, StartedAt: now, Apps: []appState{
			{Name: "setup", State: "exited", ExitCode: &zero, Ready: true, StartedAt: now, FinishedAt: now},
			c.proxy, c.app,
		}}
		st := podStatus(pod, "p", s)
		if st.Phase != c.phase {
			t.Errorf("%s: phase %s, want %s", c.name, st.Phase, c.phase)
		}
		for _, cond := range st.Conditions {
			if cond.Type == corev1.PodInitialized && (cond.Status == corev1.ConditionTrue) != c.initialized {
				t.Errorf("%s: Initialized %s, want %v", c.name, cond.Status, c.initialized)
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

// ContainersReady and Ready, when False, carry the kubelet's reason and
// message: the sidecars and containers not ready while the Pod runs,
// PodCompleted or PodFailed once it has ended (and Initialized then says
// PodCompleted for a Pod that succeeded).
func TestPodStatusReadyReasons(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always}},
		Containers:     []corev1.Container{{Name: "web"}, {Name: "worker"}},
	}}
	now := time.Now().Round(0)
	zero, one := 0, 1
	for _, c := range []struct {
		name                  string
		phase                 string
		proxy, web, worker    appState
		reason, message, init string
	}{
		{"running, one container not ready", "Running",
			appState{Name: "proxy", State: "running", Ready: true, StartedAt: now},
			appState{Name: "web", State: "running", StartedAt: now},
			appState{Name: "worker", State: "running", Ready: true, StartedAt: now},
			"ContainersNotReady", "containers with unready status: [web]", ""},
		{"running, the sidecar not ready", "Running",
			appState{Name: "proxy", State: "running", StartedAt: now},
			appState{Name: "web", State: "running", Ready: true, StartedAt: now},
			appState{Name: "worker", State: "running", StartedAt: now},
			"ContainersNotReady", "containers with unready status: [proxy worker]", ""},
		{"succeeded", "Succeeded",
			appState{Name: "proxy", State: "exited", ExitCode: &zero, StartedAt: now, FinishedAt: now},
			appState{Name: "web", State: "exited", ExitCode: &zero, StartedAt: now, FinishedAt: now},
			appState{Name: "worker", State: "exited", ExitCode: &zero, StartedAt: now, FinishedAt: now},
			"PodCompleted", "", "PodCompleted"},
		{"failed", "Failed",
			appState{Name: "proxy", State: "exited", ExitCode: &zero, StartedAt: now, FinishedAt: now},
			appState{Name: "web", State: "failed", ExitCode: &one, StartedAt: now, FinishedAt: now},
			appState{Name: "worker", State: "exited", ExitCode: &zero, StartedAt: now, FinishedAt: now},
			"PodFailed", "", ""},
	} {
		s := podState{Phase: c.phase, CreatedAt: now, StartedAt: now, Apps: []appState{c.proxy, c.web, c.worker}}
		if c.phase != "Running" {
			s.FinishedAt = now
		}
		st := podStatus(pod, "p", s)
		for _, cond := range st.Conditions {
			switch cond.Type {
			case corev1.ContainersReady, corev1.PodReady:
				if cond.Status != corev1.ConditionFalse || cond.Reason != c.reason || cond.Message != c.message {
					t.Errorf("%s: %s %s, reason %q, message %q; want False, %q, %q", c.name, cond.Type, cond.Status, cond.Reason, cond.Message, c.reason, c.message)
				}
			case corev1.PodInitialized:
				if cond.Status != corev1.ConditionTrue || cond.Reason != c.init {
					t.Errorf("%s: Initialized %s, reason %q; want True, %q", c.name, cond.Status, cond.Reason, c.init)
				}
			}
		}
	}
}
