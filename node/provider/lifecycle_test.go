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
		`trap 'read -r seen < `+dir+`/pre-stop; echo $seen > `+dir+`/seen-at-term; exit 0' TERM; while :; do sleep 0.1; done`,
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
	// The delete of a running container: app0's start, its postStart
	// hook included, is over (a delete during the hook is
	// TestLifecycleHooksStopDuringPostStart's).
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

// A deletion that comes while a container's postStart hook still runs
// stops the container once the hook has ended, with its preStop hook, as
// the kubelet runs the preStop hook of every container it stops once it
// has started; the other containers get SIGTERM meanwhile (app1's
// postStart hook ends once app0 has had its SIGTERM). A postStart hook
// that never ends (app2's) holds its container's stop back for the grace
// period only: the Pod is gone all the same, app2's preStop hook not run.
func TestLifecycleHooksStopDuringPostStart(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	p := newPod("hooks-post-start-stop", corev1.RestartPolicyAlways, nil,
		`trap ': > `+dir+`/app0-term; exit 0' TERM; touch `+dir+`/app0-began; while :; do sleep 0.1; done`,
		`trap 'read -r seen < `+dir+`/pre-stop; echo $seen > `+dir+`/seen-at-term; exit 0' TERM; while :; do sleep 0.1; done`,
		`exec sleep 600`)
	// The grace period bounds app1's wait too: app0's stop, its trap and
	// the end of app1's postStart hook must fit in it on a loaded
	// machine, not only app2's wait.
	grace := int64(10)
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "touch " + dir + "/app1-began; while [ ! -e " + dir + "/app0-term ]; do sleep 0.02; done"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo stopping >" + dir + "/pre-stop"}}},
	}
	p.Spec.Containers[2].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "touch " + dir + "/app2-began; exec sleep 600"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo ran >" + dir + "/app2-pre-stop"}}},
	}
	create(t, client, p)
	for _, f := range []string{"app0-began", "app1-began", "app2-began"} {
		waitFile(t, filepath.Join(dir, f))
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	if data, err := os.ReadFile(filepath.Join(dir, "seen-at-term")); err != nil || string(data) != "stopping\n" {
		t.Errorf("app1 at its SIGTERM saw the preStop hook's file %q (%v), want stopping", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "app2-pre-stop")); err == nil {
		t.Error("app2's preStop hook ran after the grace period was spent waiting for its postStart hook")
	}
}

// waitFile waits, up to 90 s, until file path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if i == 900 {
			t.Fatalf("%s did not appear within 90 s", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
