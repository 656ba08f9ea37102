package provider

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// PodClient returns pods for virtual-kubelet's pod controller, with its
// removal of a Pod whose deletion the provider has under way left to the
// provider. virtual-kubelet removes a deleted Pod from the API at the end
// of the deletion's grace period, whatever its containers do; that is
// when the provider kills what is left of them (at [kube.MinGracePeriod] at least),
// and their exit hooks have still to run, which systemd runs with the
// container's mounts. The provider removes the Pod once its containers
// have ended ([Provider.delete]), as the kubelet does.
func (p *Provider) PodClient(pods corev1client.PodsGetter) corev1client.PodsGetter {
	return podsGetter{pods, p}
}

type podsGetter struct {
	corev1client.PodsGetter
	p *Provider
}

func (g podsGetter) Pods(namespace string) corev1client.PodInterface {
	return podDeleter{g.PodsGetter.Pods(namespace), g.p, namespace}
}

// podDeleter is a namespace's pods, whose Delete leaves a Pod that the
// provider is deleting to the provider.
type podDeleter struct {
	corev1client.PodInterface
	p         *Provider
	namespace string
}

func (d podDeleter) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	k := key(d.namespace, name)
	d.p.mu.Lock()
	e := d.p.pods[k]
	mine := e != nil && e.deleting && (opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID == e.pod.UID)
	d.p.mu.Unlock()
	if mine {
		d.p.log.Info("leaving the pod in the API until its containers have ended", "pod", k)
		return nil
	}
	return d.PodInterface.Delete(ctx, name, opts)
}
