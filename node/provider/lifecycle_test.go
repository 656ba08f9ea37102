package provider

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A container's postStart hook runs as it starts, its preStop hook when
// the Pod is deleted, before the container's stop signal (the container
// copies the hook's file when it gets SIGTERM), and a failed postStart
// hook kills the container, which the Pod's policy then restarts, its
// status saying why, as the kubelet does (lifecycle_hook.go).
func TestLifecycleHooks(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	p := newPod("hooks", corev1.RestartPolicyAlways, nil,
		`trap 'cp `+dir+`/pre-stop `+dir+`/seen-at-term; exit 0' TERM; while :; do sleep 0.1; done`,
		`exec sleep 600`)
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo started >" + dir + "/post-start"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo stopping >" + dir + "/pre-stop"}}},
	}
	p.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
	}
	p.Annotations = map[string]string{AnnotationRestartBackoff: "100ms"}
	create(t, client, p)
	// Between two runs: a run's record holds the message of the run
	// before it only until it starts.
	got := waitPod(t, client, p, "app1 waiting to restart after its postStart hook failed", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 2 && cs[1].State.Waiting != nil && cs[1].LastTerminationState.Terminated != nil
	})
	if lt := got.Status.ContainerStatuses[1].LastTerminationState.Terminated; lt.Message != "postStart hook failed: exit status 1" {
		t.Errorf("app1's last termination after its postStart hook failed: %+v", lt)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "post-start")); err != nil || string(data) != "started\n" {
		t.Errorf("app0's postStart hook wrote %q (%v)", data, err)
	}
	// The stop comes once app0's postStart hook has ended: systemd runs
	// no ExecStop= (the preStop hook) for a unit whose ExecStartPost= (the
	// postStart hook) still runs (docs/pods.md, Lifecycle hooks).
	waitStarted(t, unitName(podName(p.Namespace, p.Name, string(p.UID)), "app0"))
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	if data, err := os.ReadFile(filepath.Join(dir, "seen-at-term")); err != nil || string(data) != "stopping\n" {
		t.Errorf("app0 at its SIGTERM saw the preStop hook's file %q (%v), want stopping", data, err)
	}
}

// waitStarted waits until unit u is active: its start, postStart hook
// (ExecStartPost=) included, is over.
func waitStarted(t *testing.T, u string) {
	t.Helper()
	conn := systemdtest.Conn(t)
	for i := 0; ; i++ {
		props, err := conn.Properties(context.Background(), u, manager.UnitIface)
		if err == nil && props["ActiveState"].Value() == "active" {
			return
		}
		if i == 1200 {
			t.Fatalf("%s not active within a minute: %v", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
