package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The volumes of the Pod the ServiceAccount admission plugin makes, and
// the others a kubelet mounts, map to mounts of the app: API data
// read-only, under the pod's state, with the files the kubelet writes.
func TestTranslateVolumes(t *testing.T) {
	c := &Config{Images: map[string]string{"debian": HostImage}, AllowPrivileged: true, StateDir: "/state"}
	mode := int32(0o400)
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "ns", UID: "u", Labels: map[string]string{"b": "2", "a": `q"1`}},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/data"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
					Items:                []corev1.KeyToPath{{Key: "k", Path: "dir/k.txt", Mode: &mode}, {Key: "gone", Path: "g"}},
					Optional:             &yes,
				}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
						{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
						{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "a", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
					}}},
				}}}},
			},
			Containers: []corev1.Container{{Name: "a", Image: "debian", Command: []string{"x"},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				Env:       []corev1.EnvVar{{Name: "SUB", Value: "logs"}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/data", SubPath: "x", ReadOnly: true},
					{Name: "tmp", MountPath: "/tmp/x", SubPathExpr: "$(SUB)"},
					{Name: "cfg", MountPath: "/etc/cfg"},
					{Name: "sec", MountPath: "/etc/sec"},
					{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
				}}},
		},
	}
	in := &inputs{
		configMaps: map[string]*corev1.ConfigMap{
			"cm":               {Data: map[string]string{"k": "v"}},
			"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}},
		},
		secrets: map[string]*corev1.Secret{"s": {Data: map[string][]byte{"password": []byte("pw")}}},
		tokens:  map[string]token{tokenKey(4, 0): {value: "TOKEN"}},
	}
	data, err := c.translate(p, in)
	if err != nil {
		t.Fatal(err)
	}
	m := unmarshal(t, data)
	dir := func(vol string) string { return volumeDir("/state", m.Name, vol) }
	want := []mount{
		{Source: "/var/data/x", Path: "/data", ReadOnly: true},
		{Source: dir("tmp") + "/logs", Path: "/tmp/x"},
		{Source: dir("cfg"), Path: "/etc/cfg", ReadOnly: true},
		{Source: dir("sec"), Path: "/etc/sec", ReadOnly: true},
		{Source: dir("kube-api-access"), Path: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		{Source: dir(etcVolume) + "/hosts", Path: "/etc/hosts", ReadOnly: true},
		{Source: dir(etcVolume) + "/resolv.conf", Path: "/etc/resolv.conf", ReadOnly: true},
	}
	if !reflect.DeepEqual(m.Apps[0].Mounts, want) {
		t.Errorf("mounts\n%+v, want\n%+v", m.Apps[0].Mounts, want)
	}
	files := map[string]map[string]volumeFile{
		"cfg": {"dir/k.txt": {[]byte("v"), 0o400}},
		"sec": {"password": {[]byte("pw"), 0o644}},
		"kube-api-access": {
			"token": {[]byte("TOKEN"), 0o644}, "ca.crt": {[]byte("CA"), 0o644}, "namespace": {[]byte("ns"), 0o644},
			"labels": {[]byte("a=\"q\\\"1\"\nb=\"2\""), 0o644}, "mem": {[]byte("64"), 0o644},
		},
	}
	for name, f := range files {
		if got := in.volumes[name].files; !reflect.DeepEqual(got, f) {
			t.Errorf("volume %s: files %v, want %v", name, got, f)
		}
	}
	if v := in.volumes["tmp"]; !v.emptyDir || !reflect.DeepEqual(v.subPaths, []string{"logs"}) {
		t.Errorf("emptyDir tmp: %+v; want an emptyDir with subPath logs", v)
	}

	// What is not there yet is waited for, unless optional; a kind of
	// volume the node cannot provide is refused.
	in = &inputs{configMaps: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{}}}}
	_, err = c.translate(p, in)
	var w waitError
	if !errors.As(err, &w) || !reflect.DeepEqual([]string(w), []string{`a token of the pod's service account`, `configmap "kube-root-ca.crt"`, `secret "s"`}) {
		t.Errorf("error %v; want it to wait for the token, configmap kube-root-ca.crt and secret s, not the optional key k", err)
	}
	// A memory-backed emptyDir is in the host's /dev/shm.
	p.Spec.Volumes[1].EmptyDir.Medium = corev1.StorageMediumMemory
	if _, err := c.translate(p, in); !errors.As(err, &w) || in.volumes["tmp"].dir != "/dev/shm/unitrun-node-"+m.Name+"/tmp" {
		t.Errorf("emptyDir of medium Memory: %+v, %v; want it in /dev/shm", in.volumes["tmp"], err)
	}
	p.Spec.Volumes[1].EmptyDir.Medium = corev1.StorageMediumHugePages
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "none", MountPath: "/none"}, corev1.VolumeMount{Name: "tmp", MountPath: "/up", SubPath: "../up"})
	_, err = c.translate(p, in)
	for _, field := range []string{"spec.volumes[1].emptyDir.medium", "spec.containers[0].volumeMounts[5].name", "spec.containers[0].volumeMounts[6].subPath"} {
		if err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("error %v; want it to name %s", err, field)
		}
	}
}

// A container's environment takes ConfigMaps' and Secrets' keys, envFrom
// (with its prefix, leaving out names that are no variable names and a
// ConfigMap's binaryData) and its resources, in the kubelet's order: env
// over envFrom.
func TestTranslateEnvFromAPI(t *testing.T) {
	c := &Config{Images: map[string]string{"debian": HostImage}, AllowPrivileged: true}
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "debian", Command: []string{"x"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
				{Prefix: "P_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
			},
			Env: []corev1.EnvVar{
				{Name: "A", Value: "env wins"},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "b"}}},
				{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}},
				{Name: "O", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "none", Optional: &yes}}},
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			},
		}}},
	}
	in := &inputs{
		configMaps: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"A": "from cm", "b": "B", "bad name": "x"}, BinaryData: map[string][]byte{"bin": {0xff}}}},
		secrets:    map[string]*corev1.Secret{"s": {Data: map[string][]byte{"pw": []byte("secret")}}},
	}
	data, err := c.translate(p, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "env wins", "b": "B", "P_pw": "secret", "C": "B", "S": "secret", "CPU": "250"}
	if got := unmarshal(t, data).Apps[0].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("env %q, want %q", got, want)
	}
	p.Spec.Containers[0].Env[2].ValueFrom.SecretKeyRef.Key = "other"
	var w waitError
	if _, err := c.translate(p, in); !errors.As(err, &w) || w.Error() != `key "other" of secret "s"` {
		t.Errorf("error %v; want it to wait for key other of secret s", err)
	}
}

// writePayload swaps a volume's files at once: the names at the top are
// links into ..data, a rewrite removes what the new files do not have, and
// each file has its mode.
func TestWritePayload(t *testing.T) {
	dir := t.TempDir()
	if err := writePayload(dir, map[string]volumeFile{"a": {[]byte("1"), 0o644}, "d/b": {[]byte("2"), 0o400}}); err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	if err := writePayload(dir, map[string]volumeFile{"a": {[]byte("3"), 0o600}, "c": {[]byte("4"), 0o644}}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"a": "3", "c": "4"} {
		if got, err := os.ReadFile(filepath.Join(dir, path)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", path, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "a")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a: %v, %v; want mode 0600", fi, err)
	}
	if link, err := os.Readlink(filepath.Join(dir, "c")); err != nil || link != "..data/c" {
		t.Errorf("c links to %q, %v; want ..data/c", link, err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 || strings.Contains(strings.Join(names, " "), first) || strings.Contains(strings.Join(names, " "), " d") {
		t.Errorf("the volume holds %q; want ..data, one ..N directory, a and c", names)
	}
}

func unmarshal(t *testing.T, data []byte) manifest {
	t.Helper()
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A projected token is requested for the Pod, bound to it, and requested
// again only once 80% of its life has passed, as the kubelet does.
func TestFetchTokens(t *testing.T) {
	client := fake.NewClientset()
	var requests []*authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		req := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, req)
		req.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("t%d", len(requests)), ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
		return true, req, nil
	})
	p := &Provider{cfg: Config{Client: client}}
	exp := int64(3600)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{ServiceAccountName: "sa", Volumes: []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "api", ExpirationSeconds: &exp}}}}}}}},
	}
	in, err := p.fetch(context.Background(), pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := in.tokens[tokenKey(0, 0)]
	if tok.value != "t1" || len(requests) != 1 || requests[0].Spec.BoundObjectRef.UID != "u" || requests[0].Spec.Audiences[0] != "api" || *requests[0].Spec.ExpirationSeconds != 3600 {
		t.Fatalf("token %+v after requests %+v; want t1, bound to the pod, for audience api, 3600 s", tok, requests)
	}
	if d := time.Until(tok.refreshAt); d < 47*time.Minute || d > 48*time.Minute {
		t.Errorf("refresh in %s; want at 80%% of the hour", d)
	}
	if in, _ = p.fetch(context.Background(), pod, in.tokens); in.tokens[tokenKey(0, 0)].value != "t1" || len(requests) != 1 {
		t.Errorf("a token not due was requested again: %+v", requests)
	}
	tok.refreshAt = time.Now().Add(-time.Second)
	if in, _ = p.fetch(context.Background(), pod, map[string]token{tokenKey(0, 0): tok}); in.tokens[tokenKey(0, 0)].value != "t2" {
		t.Errorf("a token due was not requested again: %+v", in.tokens)
	}
}
