package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/unitrun/unitrun/pod/kube"
)

// Annotations a Pod may carry for this node: kube's, which
// docs/kubernetes.md describes.
const (
	AnnotationIsolation      = kube.AnnotationIsolation
	AnnotationRestartBackoff = kube.AnnotationRestartBackoff
)

// HostImage is the image mapping that runs a container on the host's own
// file system.
const HostImage = kube.HostImage

// The mapping's types, as the node's volumes and files use them.
type (
	manifest  = kube.Manifest
	mount     = kube.Mount
	refusals  = kube.Refusals
	waitError = kube.WaitError
)

// podName is the unitrun pod that runs Pod namespace/name of uid: a name
// that unitrun accepts (at most 29 characters) and that no other Pod, nor
// a later Pod of the same name, gets.
func podName(namespace, name, uid string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name + "/" + uid))
	return podPrefix + hex.EncodeToString(sum[:])[:25]
}

// podPrefix starts the name of every unitrun pod this provider runs; it
// touches no other pod.
const podPrefix = "k8s-"

// translate returns the unitrun manifest that runs p on node, its
// containers' environment and volumes made of in (nil: the Pod's alone),
// or every reason it cannot (refusals), or, if it could run, what it
// waits for (waitError). The mapping is kube's, the one unitrun pod run
// applies to a Pod's YAML; the node gives it the cluster's data and adds
// the Pod's volumes of API objects and its hosts and resolv.conf files.
// It notes the Pod's volumes in in.volumes.
func (c *Config) translate(p *corev1.Pod, in *inputs) ([]byte, error) {
	if in == nil {
		in = &inputs{}
	}
	in.waits = nil
	kp, rs, err := toKube(p)
	if err != nil {
		return nil, err
	}
	vols := c.podVolumes(p, kp, in, &rs)
	in.volumes = vols
	dirs := map[string]*kube.VolumeDir{}
	for name, v := range vols {
		dirs[name] = &kube.VolumeDir{Dir: v.dir, EmptyDir: v.emptyDir, ReadOnly: v.files != nil}
	}
	m, err := kube.Translate(kp, &kube.Options{
		Name:              podName(p.Namespace, p.Name, string(p.UID)),
		Images:            c.Images,
		RegistryImages:    true,
		AllowPrivileged:   c.AllowPrivileged,
		MinRestartBackoff: c.MinRestartBackoff,
		Volumes:           dirs,
		ServiceEnv:        in.svcEnv,
		ConfigMap:         func(name string) map[string][]byte { return in.configMapData(name, false) },
		Secret:            in.secretData,
		Address:           c.Address,
		Allocatable:       allocatable,
	})
	for name, d := range dirs {
		vols[name].subPaths = d.SubPaths
	}
	var krs kube.Refusals
	var kw kube.WaitError
	switch {
	case errors.As(err, &krs):
		rs = append(rs, krs...)
	case errors.As(err, &kw):
		in.waits = append(in.waits, kw...)
	case err != nil:
		return nil, err
	}
	if len(rs) > 0 {
		return nil, rs
	}
	if len(in.waits) > 0 {
		return nil, waitError(slices.Compact(slices.Sorted(slices.Values(in.waits))))
	}
	hostname := m.Name // an isolated pod's own
	if m.Isolation != "namespaces" {
		if h, err := os.Hostname(); err == nil {
			hostname = h
		}
	}
	c.etcFiles(p, m, hostname, in, vols)
	return json.Marshal(m)
}

// toKube is p as kube reads it, from the same JSON, and the refusals of
// its fields that kube does not know.
func toKube(p *corev1.Pod) (*kube.Pod, refusals, error) {
	q := *p
	q.APIVersion, q.Kind = "v1", "Pod"
	data, err := json.Marshal(&q)
	if err != nil {
		return nil, nil, err
	}
	docs, err := kube.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	return docs[0].Pod, docs[0].Refusals, nil
}

// allocatable is the node's cpu and memory, as kube reads them.
func allocatable() (map[string]kube.Quantity, error) {
	list, err := capacity()
	if err != nil {
		return nil, err
	}
	out := map[string]kube.Quantity{}
	for name, q := range list {
		if out[string(name)], err = kube.ParseQuantity(q.String()); err != nil {
			return nil, err
		}
	}
	return out, nil
}
