package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
)

// imageConfig is testConfig with an image store of its own and a first
// pull back-off of 2 s: ErrImagePull shows for a second, then
// ImagePullBackOff for a second, before the next pull.
func imageConfig(t *testing.T) Config {
	cfg := testConfig(t)
	cfg.ImageDir = t.TempDir()
	cfg.MinRestartBackoff = 2 * time.Second
	return cfg
}

// imagePod is a Pod of one container, app0, of image ref, that runs once.
func imagePod(name, ref string) *corev1.Pod {
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-" + name), CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{
			NodeName: testNode, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app0", Image: ref}},
		},
	}
}

// waitingFor is true of a Pod whose container waits for reason.
func waitingFor(reason string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == reason
	}
}

// wantEvents waits until each of wants, "Reason: message prefix", has
// been recorded on Pod p.
func wantEvents(t *testing.T, client *fake.Clientset, p *corev1.Pod, wants ...string) {
	t.Helper()
	for _, w := range wants {
		reason, prefix, _ := strings.Cut(w, ": ")
		waitEvent(t, w, func() bool {
			for _, ev := range eventsOf(t, client, p.Namespace, reason) {
				if ev.InvolvedObject.Name == p.Name && strings.HasPrefix(ev.Message, prefix) {
					return true
				}
			}
			return false
		})
	}
}

// A Pod whose image is in a registry that wants credentials pulls it with
// those of its imagePullSecrets, read through the API, as the kubelet
// does. Before the Secret exists, the pull is refused: the container
// waits in ErrImagePull, then ImagePullBackOff while the node waits to
// pull again, with the kubelet's events; once the Secret is there, the
// next pull gets the image, which runs, and the container's status names
// it and its digest as the kubelet's does.
func TestImagePullSecrets(t *testing.T) {
	reg := imagetest.NewAuthRegistry(t, "puller", "s3cret")
	ref := reg.Push(t, "app:1", imagetest.Image{
		Layers: []imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool")},
		Config: image.Config{Entrypoint: []string{"/bin/tool"}, Cmd: []string{"echo", "from-the-image"}},
	})
	client := fake.NewClientset()
	cfg := imageConfig(t)
	n := startNode(t, cfg, client)
	p := imagePod("pull-secret", ref)
	p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	create(t, client, p)
	got := waitPod(t, client, p, "waiting in ErrImagePull", waitingFor("ErrImagePull"))
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "refused access") {
		t.Errorf("ErrImagePull's message %q does not say the registry refused access", msg)
	}
	got = waitPod(t, client, p, "waiting in ImagePullBackOff", waitingFor("ImagePullBackOff"))
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.HasPrefix(msg, fmt.Sprintf("Back-off pulling image %q: ErrImagePull: ", ref)) {
		t.Errorf("ImagePullBackOff's message: %q", msg)
	}
	wantEvents(t, client, p,
		"FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (regcred)",
		fmt.Sprintf("Pulling: Pulling image %q", ref),
		fmt.Sprintf("Failed: Failed to pull image %q: ", ref),
		"Failed: Error: ErrImagePull",
		fmt.Sprintf("BackOff: Back-off pulling image %q", ref),
		"Failed: Error: ImagePullBackOff")
	auth := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: testNS},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths": {"https://%s/v1/": {"auth": %q}}}`, reg.Host, auth)},
	}
	if _, err := client.CoreV1().Secrets(testNS).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
	s, err := image.Open(cfg.ImageDir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := s.Lookup(ref)
	if err != nil {
		t.Fatal(err)
	}
	cs := got.Status.ContainerStatuses[0]
	if cs.Image != ref || cs.ImageID != reg.Host+"/app@"+img.ID {
		t.Errorf("container status names image %q, ID %q; want %q, %q", cs.Image, cs.ImageID, ref, reg.Host+"/app@"+img.ID)
	}
	wantEvents(t, client, p, fmt.Sprintf("Pulled: Successfully pulled image %q in ", ref))
	if out := containerLogs(t, n, p, api.ContainerLogOpts{}); out != "from-the-image\n" {
		t.Errorf("the container printed %q, want the image's Cmd's output", out)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A Pod whose image's tag the registry lacks waits in ErrImagePull, which
// says so, then ImagePullBackOff; one whose image is absent from the
// store under imagePullPolicy Never waits in ErrImageNeverPull, and one
// whose image is no image reference in InvalidImageName, as the kubelet
// has them.
func TestImagePullFails(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	reg.Push(t, "app:1", imagetest.Image{Layers: []imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool")}})
	client := fake.NewClientset()
	n := startNode(t, imageConfig(t), client)
	wrong := imagePod("wrong-tag", reg.Host+"/app:nope")
	create(t, client, wrong)
	got := waitPod(t, client, wrong, "waiting in ErrImagePull", waitingFor("ErrImagePull"))
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "has no image app:nope") {
		t.Errorf("ErrImagePull's message %q does not say the registry has no such image", msg)
	}
	waitPod(t, client, wrong, "waiting in ImagePullBackOff", waitingFor("ImagePullBackOff"))
	never := imagePod("never", reg.Host+"/app:1")
	never.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	create(t, client, never)
	got = waitPod(t, client, never, "waiting in ErrImageNeverPull", waitingFor("ErrImageNeverPull"))
	want := fmt.Sprintf("Container image %q is not present with pull policy of Never", reg.Host+"/app:1")
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; msg != want {
		t.Errorf("ErrImageNeverPull's message %q, want %q", msg, want)
	}
	wantEvents(t, client, never, "ErrImageNeverPull: "+want)
	invalid := imagePod("invalid", "Upper/Case:1")
	create(t, client, invalid)
	got = waitPod(t, client, invalid, "waiting in InvalidImageName", waitingFor("InvalidImageName"))
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.HasPrefix(msg, `Failed to apply default image tag "Upper/Case:1": `) {
		t.Errorf("InvalidImageName's message: %q", msg)
	}
	for _, p := range []*corev1.Pod{wrong, never, invalid} {
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	}
}

// imagePullPolicy says when the node reaches the registry, as the
// kubelet's: Always at each Pod's creation, IfNotPresent only for an
// image the store lacks (with the kubelet's "already present" event).
func TestImagePullPolicy(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "app:1", imagetest.Image{
		Layers: []imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool")},
		Config: image.Config{Entrypoint: []string{"/bin/tool"}, Cmd: []string{"exit", "0"}},
	})
	var manifestGets atomic.Int32
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
			manifestGets.Add(1)
		}
		registry.ServeHTTP(w, r)
	})
	client := fake.NewClientset()
	n := startNode(t, imageConfig(t), client)
	for _, c := range []struct {
		name   string
		policy corev1.PullPolicy
		pulls  bool
	}{
		{"first", corev1.PullIfNotPresent, true},
		{"present", corev1.PullIfNotPresent, false},
		{"always", corev1.PullAlways, true},
	} {
		p := imagePod(c.name, ref)
		p.Spec.Containers[0].ImagePullPolicy = c.policy
		before := manifestGets.Load()
		create(t, client, p)
		waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
		if pulled := manifestGets.Load() > before; pulled != c.pulls {
			t.Errorf("Pod %s of policy %s: reached the registry %v, want %v", c.name, c.policy, pulled, c.pulls)
		}
		if !c.pulls {
			wantEvents(t, client, p, fmt.Sprintf("Pulled: Container image %q already present on machine", ref))
		}
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	}
}
