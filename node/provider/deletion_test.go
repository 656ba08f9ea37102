package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// A deleted Pod leaves the API once its containers have ended, as the
// kubelet removes it, and not when virtual-kubelet's own removal at the
// end of the deletion's grace period comes: a container that ignores
// SIGTERM, deleted with a grace period of 1 s, is killed at the kubelet's
// minimum of 2 s; when its Pod is gone from the API, its unit has stopped
// (the exit hooks, which systemd runs with the container's mounts, done).
func TestDeleteRemovesOnceEnded(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("stubborn", corev1.RestartPolicyAlways, nil, "trap '' TERM; echo trapped; while sleep 0.1; do :; done")
	create(t, client, p)
	got := waitPod(t, client, p, "Running", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil
	})
	for i := 0; !strings.Contains(containerLogs(t, n, p, api.ContainerLogOpts{}), "trapped"); i++ {
		if i == 600 {
			t.Fatal("the container did not write that it ignores SIGTERM within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	deleteGracefully(t, client, got, 1) // kubectl delete --grace-period=1
	waitRemoved(t, client, p)
	name := podName(p.Namespace, p.Name, string(p.UID))
	u := unitName(name, "app0")
	if props, err := systemdtest.Conn(t).Properties(context.Background(), u, manager.UnitIface); err == nil {
		if s := props["ActiveState"].Value(); s != "inactive" && s != "failed" {
			t.Errorf("the Pod left the API while its container's unit %s was %v (%v)", u, s, props["SubState"].Value())
		}
	}
	waitGone(t, n, name)
}
