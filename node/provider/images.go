package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/registry"
	"github.com/unitrun/unitrun/pod"
)

// A pull is one registry image of a Pod, under one pull policy, and the
// containers that run it.
type pull struct {
	ref        string
	policy     image.PullPolicy
	containers []string
}

// registryPulls are the registry images of manifest's apps (those that
// --image does not map), each once per pull policy, with Kubernetes'
// default policy where the container sets none ([pod.App.PullPolicy]).
func registryPulls(manifest []byte) ([]pull, error) {
	var m struct {
		Apps []struct{ Name, Image, ImagePullPolicy string }
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, err
	}
	var pulls []pull
next:
	for _, a := range m.Apps {
		if a.Image == "" {
			continue
		}
		policy := (&pod.App{Image: a.Image, ImagePullPolicy: a.ImagePullPolicy}).PullPolicy()
		for i := range pulls {
			if pulls[i].ref == a.Image && pulls[i].policy == policy {
				pulls[i].containers = append(pulls[i].containers, a.Name)
				continue next
			}
		}
		pulls = append(pulls, pull{ref: a.Image, policy: policy, containers: []string{a.Name}})
	}
	return pulls, nil
}

// A pullFailure is why a Pod's image could not be pulled, and when the
// next pull is due.
type pullFailure struct {
	ref        string
	containers []string
	// reason is the containers' waiting reason: ErrImagePull,
	// ErrImageNeverPull for an image absent under policy Never, or
	// InvalidImageName for a reference that names no image;
	// ImagePullBackOff replaces ErrImagePull once the back-off is
	// halfway through, as the kubelet shows it at its next look.
	reason, message string
	// failures counts the failed pulls in a row, which the back-off
	// doubles with.
	failures int
	// retry is set when the back-off is over: the Pod's next creation
	// pulls again.
	retry bool
}

// The kubelet's waiting reasons of a container whose image is not there.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
	reasonInvalidImageName  = "InvalidImageName"
)

// maxPullBackoff is the longest wait between two pulls of an image, as
// the kubelet's image back-off.
const maxPullBackoff = 5 * time.Minute

// pullImages pulls the registry images of Pod pod, whose unitrun manifest
// is manifest, into the node's image store, each under its pull policy,
// with the credentials of the Pod's imagePullSecrets, and records the
// kubelet's events on the first container of each: Pulling and Pulled
// ("Successfully pulled image ..."), or Pulled ("Container image ...
// already present on machine") for an image the policy takes from the
// store, or Failed (InspectFailed for a reference that names no image).
// It returns the first failure; a failure of the store itself is an
// error.
func (p *Provider) pullImages(ctx context.Context, pod *corev1.Pod, manifest []byte) (*pullFailure, error) {
	pulls, err := registryPulls(manifest)
	if err != nil || len(pulls) == 0 {
		return nil, err
	}
	s, err := image.Open(p.cfg.imageDir())
	if err != nil {
		return nil, fmt.Errorf("image store %s: %w", p.cfg.imageDir(), err)
	}
	auth := p.pullAuth(ctx, pod)
	for _, pl := range pulls {
		field := containerField(pod, pl.containers[0])
		event := func(typ, reason, message string) {
			if p.cfg.Client == nil {
				return
			}
			if err := p.event(ctx, pod, field, typ, reason, message); err != nil {
				p.log.Warn("cannot record an event", "pod", key(pod.Namespace, pod.Name), "reason", reason, "err", err)
			}
		}
		if _, err := name.ParseReference(pl.ref); err != nil {
			msg := fmt.Sprintf("Failed to apply default image tag %q: %v", pl.ref, err)
			event(corev1.EventTypeWarning, "InspectFailed", msg)
			return &pullFailure{ref: pl.ref, containers: pl.containers, reason: reasonInvalidImageName, message: msg}, nil
		}
		if pl.policy != image.PullAlways {
			if _, err := s.Lookup(pl.ref); err == nil {
				event(corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", pl.ref))
				continue
			}
		}
		if pl.policy == image.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", pl.ref)
			event(corev1.EventTypeWarning, reasonErrImageNeverPull, msg)
			return &pullFailure{ref: pl.ref, containers: pl.containers, reason: reasonErrImageNeverPull, message: msg}, nil
		}
		event(corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", pl.ref))
		began := time.Now()
		img, err := registry.Pull(ctx, s, pl.ref, image.PullOptions{Policy: pl.policy, Auth: auth})
		var pe *image.PullError
		switch {
		case err != nil && !errors.As(err, &pe):
			return nil, err
		case err != nil:
			event(corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", pl.ref, err))
			event(corev1.EventTypeWarning, "Failed", "Error: "+reasonErrImagePull)
			return &pullFailure{ref: pl.ref, containers: pl.containers, reason: reasonErrImagePull, message: err.Error()}, nil
		}
		took := time.Since(began).Round(time.Millisecond)
		event(corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.", pl.ref, took, took, img.Size))
	}
	return nil, nil
}

// imageDir is the image store that registry images are pulled into.
func (c *Config) imageDir() string {
	if c.ImageDir != "" {
		return c.ImageDir
	}
	return image.DefaultDir
}

// pullAuth returns the registry credentials that Pod pod's
// imagePullSecrets hold, read through the API, by registry host. A Secret
// that cannot be read is left out, with a FailedToRetrieveImagePullSecret
// event, as the kubelet records one.
func (p *Provider) pullAuth(ctx context.Context, pod *corev1.Pod) map[string]image.Credentials {
	if len(pod.Spec.ImagePullSecrets) == 0 || p.cfg.Client == nil {
		return nil
	}
	auth := map[string]image.Credentials{}
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := p.cfg.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			err = dockerAuths(s, auth)
		}
		if err == nil {
			continue
		}
		p.log.Warn("cannot read an image pull secret", "pod", key(pod.Namespace, pod.Name), "secret", ref.Name, "err", err)
		msg := fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", ref.Name)
		if err := p.event(ctx, pod, "", corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret", msg); err != nil {
			p.log.Warn("cannot record an event", "pod", key(pod.Namespace, pod.Name), "reason", "FailedToRetrieveImagePullSecret", "err", err)
		}
	}
	return auth
}

// dockerAuths adds the credentials of Secret s, of type
// kubernetes.io/dockerconfigjson (or the older kubernetes.io/dockercfg),
// to auth by registry host. A Secret of another type holds none, as the
// kubelet reads it.
func dockerAuths(s *corev1.Secret, auth map[string]image.Credentials) error {
	var entries map[string]struct{ Username, Password, Auth string }
	var err error
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		var cfg struct {
			Auths map[string]struct{ Username, Password, Auth string }
		}
		err = json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg)
		entries = cfg.Auths
	case corev1.SecretTypeDockercfg:
		err = json.Unmarshal(s.Data[corev1.DockerConfigKey], &entries)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("not a docker config of type %s: %v", s.Type, err)
	}
	for key, e := range entries {
		c := image.Credentials{Username: e.Username, Password: e.Password}
		if e.Auth != "" {
			b, err := base64.StdEncoding.DecodeString(e.Auth)
			user, password, ok := strings.Cut(string(b), ":")
			if err != nil || !ok {
				return fmt.Errorf("auths[%s].auth is not the base64 of USER:PASSWORD", key)
			}
			c = image.Credentials{Username: user, Password: password}
		}
		auth[registryHost(key)] = c
	}
	return nil
}

// registryHost is the registry host that key of a docker config's auths
// names: a host, or a URL ("https://index.docker.io/v1/"); Docker Hub's
// names are its registry's, index.docker.io.
func registryHost(key string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "docker.io", "registry-1.docker.io":
		return name.DefaultRegistry
	}
	return h
}

// pullBackoff is how long a Pod waits after its nth failed pull in a
// row: the node's first restart back-off, doubled at each failure, at
// most maxPullBackoff, as the kubelet's image back-off.
func (c *Config) pullBackoff(n int) time.Duration {
	d := c.MinRestartBackoff
	if d <= 0 {
		d = DefaultMinRestartBackoff
	}
	for i := 1; i < n && d < maxPullBackoff; i++ {
		d *= 2
	}
	return min(d, maxPullBackoff)
}

// retryPull waits out the back-off of entry e's failed pull, showing
// ImagePullBackOff from its half (with the kubelet's BackOff and Failed
// events), then creates its Pod again, which pulls again, unless the
// entry has been replaced or deleted by then.
func (p *Provider) retryPull(ctx context.Context, k string, e *entry) {
	ctx = context.WithoutCancel(ctx)
	p.mu.Lock()
	f := e.pull
	p.mu.Unlock()
	wait := p.cfg.pullBackoff(f.failures)
	current := func() (*corev1.Pod, bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return e.pod, p.pods[k] == e && !e.deleting
	}
	if f.reason == reasonErrImagePull {
		time.AfterFunc(wait/2, func() {
			pod, ok := current()
			if !ok {
				return
			}
			p.mu.Lock()
			f.reason, f.message = reasonImagePullBackOff, fmt.Sprintf("Back-off pulling image %q: %s: %s", f.ref, reasonErrImagePull, f.message)
			p.mu.Unlock()
			p.sendEvents(pod, []containerEvent{
				{f.containers[0], corev1.EventTypeNormal, "BackOff", fmt.Sprintf("Back-off pulling image %q", f.ref)},
				{f.containers[0], corev1.EventTypeWarning, "Failed", "Error: " + reasonImagePullBackOff},
			})
		})
	}
	time.AfterFunc(wait, func() {
		pod, ok := current()
		if !ok {
			return
		}
		p.mu.Lock()
		f.retry = true
		p.mu.Unlock()
		if err := p.CreatePod(ctx, pod); err != nil {
			p.log.Warn("cannot create the pod", "pod", k, "err", err)
		}
	})
}

// pullStatus is the status of Pod p, whose image pull failed as f says
// since at: Pending, the containers of the image waiting with f's reason
// and message, the others ContainerCreating.
func pullStatus(p *corev1.Pod, f *pullFailure, at time.Time) *corev1.PodStatus {
	st := waitingStatus(p, errors.New(f.ref), at)
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			w := &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
			for _, c := range f.containers {
				if c == list[i].Name {
					w.Reason, w.Message = f.reason, f.message
				}
			}
			list[i].State.Waiting = w
		}
	}
	return st
}

// A containerImage is a registry image as a container's status names it:
// Image its normalized name, ImageID its repository and digest
// ("registry/name@sha256:..."), as the kubelet reports them.
type containerImage struct{ Image, ImageID string }

// registryImage is how the status of a container whose image is ref,
// found in the store as the image of ID id (its manifest digest), names
// it.
func registryImage(ref, id string) containerImage {
	r, err := name.ParseReference(ref)
	if err != nil {
		return containerImage{Image: ref, ImageID: id}
	}
	// As containerd names Docker Hub's images.
	short := func(s string) string {
		if rest, ok := strings.CutPrefix(s, name.DefaultRegistry+"/"); ok {
			return "docker.io/" + rest
		}
		return s
	}
	return containerImage{Image: short(r.Name()), ImageID: short(r.Context().Name()) + "@" + id}
}
