package provider

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A Pod whose ConfigMap does not exist yet waits Pending, its containers
// ContainerCreating; once the ConfigMap and Secret exist it runs: an init
// container of another user writes into an emptyDir that the container
// then reads, with the ConfigMap's key in a read-only volume and the
// Secret's in its env. The host's mount points hold nothing, and the
// volumes go with the Pod.
func TestVolumesFromAPI(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	const data, cfg = "/run/unitrun-test-volume-data", "/run/unitrun-test-volume-cfg"
	t.Cleanup(func() { os.Remove(data); os.Remove(cfg) }) // the mount points systemd made
	p := newPod("volumes", corev1.RestartPolicyNever, []string{"echo from-init > " + data + "/x"},
		"cat "+data+"/x "+cfg+"/greeting; echo; echo $S; touch "+cfg+"/new 2>/dev/null || echo read-only")
	nobody := int64(65534)
	p.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &nobody}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
	}
	p.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: data}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: data}, {Name: "cfg", MountPath: cfg}}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}}}
	create(t, client, p)
	waitPod(t, client, p, "waiting for its ConfigMap", func(got *corev1.Pod) bool {
		cs := got.Status.ContainerStatuses
		return got.Status.Phase == corev1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil &&
			cs[0].State.Waiting.Reason == "ContainerCreating" && strings.Contains(cs[0].State.Waiting.Message, `configmap "cfg"`)
	})
	ctx := context.Background()
	if _, err := client.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"pw": []byte("secret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
	name := podName(p.Namespace, p.Name, string(p.UID))
	if got, err := os.ReadFile(n.p.eng.logFile(name, "app0")); err != nil || string(got) != "from-init\nhello\nsecret\nread-only\n" {
		t.Errorf("app0 printed %q, %v; want the emptyDir's, the ConfigMap's and the Secret's values, and read-only", got, err)
	}
	for _, dir := range []string{data, cfg} {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
			t.Errorf("the host's %s: %v, %v; want an empty directory", dir, entries, err)
		}
	}
	deletePod(t, client, p)
	waitGone(t, n, name)
}
