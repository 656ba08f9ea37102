package provider

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// readinessGates applies Pod pod's readiness gates to st, as the kubelet
// does: the gates' conditions, which other controllers write into the
// Pod's status in the API, are read from there and kept in st (the
// status the node sends replaces the API's), and the Pod is Ready only
// if its containers are and every gate's condition is True; otherwise
// Ready is False with reason ReadinessGatesNotReady. Without a Client,
// or if the Pod cannot be read, no gate is met.
func (p *Provider) readinessGates(pod *corev1.Pod, st *corev1.PodStatus) {
	if len(pod.Spec.ReadinessGates) == 0 {
		return
	}
	var current []corev1.PodCondition
	if p.cfg.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if got, err := p.cfg.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
			current = got.Status.Conditions
		} else {
			p.log.Warn("cannot read the pod's readiness gates", "pod", key(pod.Namespace, pod.Name), "err", err)
		}
	}
	why := ""
	for _, g := range pod.Spec.ReadinessGates {
		c := findCondition(current, g.ConditionType)
		switch {
		case c == nil:
			if why == "" {
				why = fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType)
			}
			continue
		case c.Status != corev1.ConditionTrue && why == "":
			why = fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status)
		}
		if findCondition(st.Conditions, g.ConditionType) == nil {
			st.Conditions = append(st.Conditions, *c)
		}
	}
	ready := findCondition(st.Conditions, corev1.PodReady)
	if ready == nil || why == "" || ready.Status != corev1.ConditionTrue {
		return
	}
	ready.Status, ready.Reason, ready.Message = corev1.ConditionFalse, "ReadinessGatesNotReady", why
}

// findCondition returns the condition of type t in conds, or nil.
func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
