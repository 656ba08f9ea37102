package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
)

// registryImages runs Pods of images that a registry served by the test's
// process holds, which wants credentials: one whose imagePullSecrets
// (made by kubectl create secret docker-registry) give them runs the
// image, and its container's status names the image and its digest as
// the kubelet's does; one whose tag the registry lacks stays Pending, its
// container waiting in ErrImagePull, then ImagePullBackOff, with the
// kubelet's Failed event.
func (c *cluster) registryImages(t *testing.T) {
	reg := imagetest.NewAuthRegistry(t, "puller", "s3cret")
	ref := reg.Push(t, "e2e/app:1", imagetest.Image{
		Layers: []imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool")},
		Config: image.Config{Entrypoint: []string{"/bin/tool"}, Cmd: []string{"echo", "from-the-image"}},
	})
	c.mustKubectl("create", "secret", "docker-registry", "regcred", "--docker-server", reg.Host,
		"--docker-username", "puller", "--docker-password", "s3cret")
	defer c.mustKubectl("delete", "secret", "regcred")
	c.apply(t, pod("pulled", "", `restartPolicy: Never
imagePullSecrets: [{name: regcred}]
containers:
- {name: app, image: "`+ref+`"}`))
	defer c.mustKubectl("delete", "pod", "pulled", "--timeout=60s")
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/pulled", "--timeout=120s")
	if out := c.mustKubectl("logs", "pulled"); out != "from-the-image\n" {
		t.Errorf("kubectl logs pulled = %q, want the image's Cmd's output", out)
	}
	got := c.mustKubectl("get", "pod", "pulled", "-o", "jsonpath={.status.containerStatuses[0].image} {.status.containerStatuses[0].imageID}")
	if img, id, _ := strings.Cut(got, " "); img != ref || !strings.HasPrefix(id, reg.Host+"/e2e/app@sha256:") {
		t.Errorf("container status names image %q, ID %q; want %q, %s/e2e/app@sha256:...", img, id, ref, reg.Host)
	}
	c.apply(t, pod("wrong-tag", "", `restartPolicy: Never
imagePullSecrets: [{name: regcred}]
containers:
- {name: app, image: "`+reg.Host+`/e2e/app:nope"}`))
	defer c.mustKubectl("delete", "pod", "wrong-tag", "--timeout=60s")
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
		c.eventually(2*time.Minute, "wrong-tag waiting in "+reason, func() error {
			got, err := c.kubectl("get", "pod", "wrong-tag", "-o", "jsonpath={.status.phase} {.status.containerStatuses[0].state.waiting.reason}")
			if err != nil {
				return err
			}
			if got != "Pending "+reason {
				return fmt.Errorf("phase and waiting reason %q", got)
			}
			return nil
		})
	}
	events := c.mustKubectl("get", "events", "--field-selector", "involvedObject.name=wrong-tag,reason=Failed", "-o", "jsonpath={.items[*].message}")
	if want := fmt.Sprintf("Failed to pull image %q: ", reg.Host+"/e2e/app:nope"); !strings.Contains(events, want) {
		t.Errorf("wrong-tag's Failed events %q lack %q", events, want)
	}
}
