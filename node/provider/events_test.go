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
	events := eventsOf(t, client, p.Namespace, "BackOff")
	if len(events) != 1 || events[0].Type != corev1.EventTypeWarning || events[0].Message != want || events[0].InvolvedObject.FieldPath != "spec.containers{app0}" {
		t.Errorf("BackOff events %+v; want one Warning on spec.containers{app0}: %q", events, want)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}
