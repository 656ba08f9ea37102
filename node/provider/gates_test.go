package provider

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A Pod with readiness gates is Ready only once its containers are and
// the gates' conditions, which another controller writes into its status,
// are True; the node keeps those conditions in the status it sends.
func TestReadinessGates(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("gated", corev1.RestartPolicyAlways, nil, "exec sleep 600")
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	create(t, client, p)
	got := waitPod(t, client, p, "running, not ready for its gate", func(p *corev1.Pod) bool {
		c := findCondition(p.Status.Conditions, corev1.PodReady)
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.ContainersReady) &&
			c != nil && c.Status == corev1.ConditionFalse && c.Reason == "ReadinessGatesNotReady"
	})
	got.Status.Conditions = append(got.Status.Conditions, corev1.PodCondition{Type: "example.com/gate", Status: corev1.ConditionTrue})
	if _, err := client.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitPod(t, client, p, "ready once its gate is met", func(p *corev1.Pod) bool { return podCondition(p, corev1.PodReady) })
	if !podCondition(got, "example.com/gate") {
		t.Errorf("the gate's condition is gone from the status: %+v", got.Status.Conditions)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}
