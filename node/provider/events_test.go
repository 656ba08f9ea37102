package provider

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
)

// A liveness probe answered with a redirect to another host, which it
// does not follow, records one ProbeWarning event on the container, with
// the answer's body, as the kubelet does ("Liveness probe warning: ...
// Probe terminated redirects, Response body: ..."), and does not restart
// it.
func TestProbeWarningEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://0.0.0.0/", http.StatusFound)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("redirected", corev1.RestartPolicyAlways, nil, "exec sleep 600")
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/redirect", Port: intstr.FromInt(port)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	create(t, client, p)
	want := `Liveness probe warning: status 302 from http://127.0.0.1:`
	body := `Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`
	var events []corev1.Event
	for deadline := time.Now().Add(60 * time.Second); len(events) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no ProbeWarning event after 60 s")
		}
		events = probeWarningEvents(t, client, p.Namespace)
	}
	ev := events[0]
	if ev.Reason != "ProbeWarning" || ev.Type != corev1.EventTypeWarning || !strings.HasPrefix(ev.Message, want) || !strings.Contains(ev.Message, body) ||
		ev.InvolvedObject.Name != p.Name || ev.InvolvedObject.FieldPath != "spec.containers{app0}" {
		t.Errorf("event %+v; want a ProbeWarning on %s's app0 saying %q ... %q", ev, p.Name, want, body)
	}
	got := waitPod(t, client, p, "running", phase(corev1.PodRunning))
	if n := len(probeWarningEvents(t, client, p.Namespace)); n != 1 || got.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("%d ProbeWarning events, %d restarts; want 1, 0: the same warning again is no new event", n, got.Status.ContainerStatuses[0].RestartCount)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// probeWarningEvents lists the ProbeWarning events of namespace ns (a Pod of
// ClusterFirst on a node without a cluster DNS has a MissingClusterDNS
// event too).
func probeWarningEvents(t *testing.T, client *fake.Clientset, ns string) []corev1.Event {
	t.Helper()
	return eventsOf(t, client, ns, "ProbeWarning")
}

// eventsOf lists the events of reason in namespace ns.
func eventsOf(t *testing.T, client *fake.Clientset, ns, reason string) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// A container that exits is restarted at once the first time, as the
// kubelet restarts it, with no BackOff; exiting again, it waits out its
// back-off before it runs again and has one BackOff warning recorded on
// it for that exit, with the kubelet's message.
func TestBackOffEvent(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	p := newPod("backoff", corev1.RestartPolicyOnFailure, nil, `[ -e `+dir+`/ran2 ] && exec sleep 600; [ -e `+dir+`/ran ] && touch `+dir+`/ran2; touch `+dir+`/ran; exit 3`)
	p.Annotations = map[string]string{AnnotationRestartBackoff: "2s"}
	create(t, client, p)
	waitPod(t, client, p, "running again after its back-off", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil && cs[0].RestartCount == 2
	})
	want := "Back-off restarting failed container app0 in pod backoff_" + testNS + "(uid-backoff)"
	// Sent apart from the status.
	waitEvent(t, "BackOff", func() bool { return len(eventsOf(t, client, p.Namespace, "BackOff")) > 0 })
	events := eventsOf(t, client, p.Namespace, "BackOff")
	if len(events) != 1 || events[0].Type != corev1.EventTypeWarning || events[0].Message != want || events[0].InvolvedObject.FieldPath != "spec.containers{app0}" {
		t.Errorf("BackOff events %+v; want one Warning on spec.containers{app0}: %q", events, want)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A container's runs, probe failures and stops record the kubelet's
// events on it, with its reasons and messages: Created and Started at
// each start, Unhealthy at each failed check of a liveness probe (with
// what its command printed) and
// Killing when the probe restarts it, FailedPostStartHook and Killing
// when its postStart hook fails, and Killing when the Pod's deletion
// stops it.
func TestContainerEvents(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	p := newPod("events", corev1.RestartPolicyAlways, nil, "exec sleep 600", "exec sleep 600")
	// Unhealthy once, which restarts it; the events come from the status
	// the node reads, so the next run's first check, which succeeds,
	// comes late enough for a read to see the failure.
	p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "[ -e " + dir + "/probed ] && exit 0; touch " + dir + "/probed; cat " + dir + "/health"}}},
		InitialDelaySeconds: 2, PeriodSeconds: 1, FailureThreshold: 1,
	}
	p.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/false"}}}}
	create(t, client, p)
	waitPod(t, client, p, "restarted by its probe and its hook", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 2 && cs[0].RestartCount >= 1 && cs[1].RestartCount >= 1
	})
	type want struct{ typ, reason, container, message string }
	has := func(w want) bool {
		for _, ev := range eventsOf(t, client, p.Namespace, w.reason) {
			if ev.Type == w.typ && ev.InvolvedObject.FieldPath == "spec.containers{"+w.container+"}" && strings.HasPrefix(ev.Message, w.message) {
				return true
			}
		}
		return false
	}
	wants := []want{
		{corev1.EventTypeNormal, "Created", "app0", "Created container: app0"},
		{corev1.EventTypeNormal, "Started", "app0", "Started container app0"},
		// The probe command's output, as the kubelet says.
		{corev1.EventTypeWarning, "Unhealthy", "app0", "Liveness probe failed: cat: " + dir + "/health: No such file or directory\n"},
		{corev1.EventTypeNormal, "Killing", "app0", "Container app0 failed liveness probe, will be restarted"},
		{corev1.EventTypeNormal, "Started", "app1", "Started container app1"},
		{corev1.EventTypeWarning, "FailedPostStartHook", "app1", "PostStartHook failed"},
		{corev1.EventTypeNormal, "Killing", "app1", "FailedPostStartHook"},
	}
	// The events of the last status change are recorded with the next
	// status.
	for _, w := range wants {
		waitEvent(t, w.reason+" on "+w.container, func() bool { return has(w) })
	}
	waitPod(t, client, p, "running", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 2 && cs[0].State.Running != nil
	})
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	waitEvent(t, "Killing on app0 at the deletion", func() bool {
		return has(want{corev1.EventTypeNormal, "Killing", "app0", "Stopping container app0"})
	})
}

// waitEvent waits, up to 60 s, until has says the event of what has been
// recorded.
func waitEvent(t *testing.T, what string, has func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !has(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s event after 60 s", what)
		}
	}
}
