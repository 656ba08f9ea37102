package provider

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A Pod whose ConfigMap does not exist yet waits Pending, its containers
// ContainerCreating; once the ConfigMap and Secret exist it runs: an init
// container of another user writes into an emptyDir, and into one of
// medium Memory, that the container then reads (the second a tmpfs), with
// the ConfigMap's key in a read-only volume and the Secret's in its env.
// The host's mount points hold nothing, and the volumes go with the Pod.
func TestVolumesFromAPI(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	const data, mem, cfg = "/run/unitrun-test-volume-data", "/run/unitrun-test-volume-mem", "/run/unitrun-test-volume-cfg"
	t.Cleanup(func() { os.Remove(data); os.Remove(mem); os.Remove(cfg) }) // the mount points systemd made
	p := newPod("volumes", corev1.RestartPolicyNever, []string{"echo from-init > " + data + "/x; echo in-memory > " + mem + "/y"},
		"cat "+data+"/x "+mem+"/y "+cfg+"/greeting; echo; stat -f -c %T "+mem+"; echo $S; touch "+cfg+"/new 2>/dev/null || echo read-only")
	nobody := int64(65534)
	p.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &nobody}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
	}
	p.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: data}, {Name: "mem", MountPath: mem}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: data}, {Name: "mem", MountPath: mem}, {Name: "cfg", MountPath: cfg}}
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
	if got, err := os.ReadFile(n.p.eng.logFile(name, "app0")); err != nil || string(got) != "from-init\nin-memory\nhello\ntmpfs\nsecret\nread-only\n" {
		t.Errorf("app0 printed %q, %v; want the emptyDirs', the ConfigMap's and the Secret's values, tmpfs and read-only", got, err)
	}
	for _, dir := range []string{data, mem, cfg} {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
			t.Errorf("the host's %s: %v, %v; want an empty directory", dir, entries, err)
		}
	}
	deletePod(t, client, p)
	waitDeleted(t, n, p)
	if _, err := os.Stat(memoryDir(name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v; want it gone with the pod", memoryDir(name), err)
	}
}

// waitDeleted waits, up to 30 s, until the provider's deletion of Pod p
// has ended: its unitrun pod and what the removal takes after it (the
// parent slices, the memory-backed emptyDirs) are gone, before the test
// closes its connection to the manager.
func waitDeleted(t *testing.T, n *testNodeRun, p *corev1.Pod) {
	t.Helper()
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	for i := 0; n.p.lookup(key(p.Namespace, p.Name)) != nil; i++ {
		if i == 300 {
			t.Fatalf("pod %s: its deletion has not ended after 30 s", p.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A running Pod's ConfigMap volume follows its ConfigMap, and its downward
// API volume its labels, as the kubelet's do: the container reads the new
// values through the same mount.
func TestVolumesFollowTheirObjects(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	const cfg, info = "/run/unitrun-test-follow-cfg", "/run/unitrun-test-follow-info"
	t.Cleanup(func() { os.Remove(cfg); os.Remove(info) })
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"k": "v1"}}
	if _, err := client.CoreV1().ConfigMaps(testNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := newPod("follow", corev1.RestartPolicyNever, nil, "while true; do cat "+cfg+"/k "+info+"/labels; echo; sleep 0.1; done")
	p.Labels = map[string]string{"app": "a"}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: cfg}, {Name: "info", MountPath: info}}
	create(t, client, p)
	waitPod(t, client, p, "Running", phase(corev1.PodRunning))
	cm.Data["k"] = "v2"
	if _, err := client.CoreV1().ConfigMaps(testNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	log := n.p.eng.logFile(podName(p.Namespace, p.Name, string(p.UID)), "app0")
	for i := 0; ; i++ {
		if i%10 == 0 {
			relabel(t, client, p, "b")
		}
		data, _ := os.ReadFile(log)
		if strings.Contains(string(data), "v2app=\"b\"") {
			break
		}
		if i == 900 {
			t.Fatalf("after 90 s the container still reads %q", data[max(0, len(data)-200):])
		}
		time.Sleep(100 * time.Millisecond)
	}
	deletePod(t, client, p)
	waitDeleted(t, n, p)
}

// relabel sets the Pod's label app to v in the API unless it has it. It
// is called again while the test waits: the fake API replaces the whole
// Pod on a status update (no subresource, no resourceVersion check), so a
// status the node sends from the Pod as it was before the update takes
// the old label back, which a real API server never does.
func relabel(t *testing.T, client *fake.Clientset, p *corev1.Pod, v string) {
	t.Helper()
	ctx := context.Background()
	got, err := client.CoreV1().Pods(testNS).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["app"] == v {
		return
	}
	got.Labels["app"] = v
	if _, err := client.CoreV1().Pods(testNS).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A memory-backed emptyDir with a sizeLimit is a tmpfs of that size of
// its own, as the kubelet mounts it: its container sees 1024 KiB and
// cannot write past them (ENOSPC), and the mount goes with the Pod.
func TestMemoryEmptyDirSizeLimit(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	const mem = "/run/unitrun-test-volume-sized"
	t.Cleanup(func() { os.Remove(mem) })
	p := newPod("sized", corev1.RestartPolicyNever, nil,
		"df -k "+mem+" | awk 'NR==2 {print $2}'; dd if=/dev/zero of="+mem+"/big bs=1024 count=2048 2>/dev/null || echo no space")
	limit := resource.MustParse("1Mi")
	p.Spec.Volumes = []corev1.Volume{{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &limit}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mem", MountPath: mem}}
	create(t, client, p)
	waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
	name := podName(p.Namespace, p.Name, string(p.UID))
	if got, err := os.ReadFile(n.p.eng.logFile(name, "app0")); err != nil || string(got) != "1024\nno space\n" {
		t.Errorf("app0 printed %q, %v; want the tmpfs's 1024 KiB and a write past them refused", got, err)
	}
	deletePod(t, client, p)
	waitDeleted(t, n, p)
	if _, err := os.Stat(memoryDir(name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v; want it gone with the pod, its tmpfs unmounted", memoryDir(name), err)
	}
}

// A Pod whose emptyDir on disk holds more than its sizeLimit is evicted,
// as the kubelet's eviction manager evicts it: its containers are
// stopped and it fails with reason Evicted and the kubelet's message.
func TestEmptyDirSizeLimitEvicts(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	const data = "/run/unitrun-test-volume-limited"
	t.Cleanup(func() { os.Remove(data) })
	p := newPod("limited", corev1.RestartPolicyNever, nil,
		"dd if=/dev/zero of="+data+"/big bs=1024 count=2048 2>/dev/null; exec sleep 600")
	limit := resource.MustParse("1Mi")
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: data}}
	create(t, client, p)
	got := waitPod(t, client, p, "Failed", phase(corev1.PodFailed))
	if want := `Usage of EmptyDir volume "data" exceeds the limit "1Mi". `; got.Status.Reason != "Evicted" || got.Status.Message != want {
		t.Errorf("reason %q, message %q; want Evicted, %q", got.Status.Reason, got.Status.Message, want)
	}
	if cs := got.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil {
		t.Errorf("container statuses %+v; want the container terminated", cs)
	}
	deletePod(t, client, p)
	waitDeleted(t, n, p)
}
