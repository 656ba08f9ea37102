package provider

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/kube"
)

func translated(t *testing.T, c *Config, p *corev1.Pod) manifest {
	t.Helper()
	data, err := c.translate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Each mapped field lands where docs/kubernetes.md says.
func TestTranslateMapping(t *testing.T) {
	c := &Config{Images: map[string]string{"debian": HostImage, "alpine": "/srv/alpine"}}
	uid, gid, grace := int64(1000), int64(100), int64(7)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", UID: "u-1"},
		Spec: corev1.PodSpec{
			NodeName: "n1", RestartPolicy: corev1.RestartPolicyOnFailure, TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid},
			InitContainers:  []corev1.Container{{Name: "setup", Image: "debian", Command: []string{"true"}}},
			Containers: []corev1.Container{{
				Name: "server", Image: "alpine", Command: []string{"/bin/server"}, Args: []string{"--pod=$(POD)", "$$(POD)", "$(NONE)"},
				WorkingDir:      "/srv",
				SecurityContext: &corev1.SecurityContext{RunAsGroup: &gid},
				Env: []corev1.EnvVar{
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
					{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
					{Name: "WHERE", Value: "$(NS)/$(POD)"},
				},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http"), Path: "/healthz"}},
					PeriodSeconds:    5,
					FailureThreshold: 2,
				},
				Lifecycle: &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}},
					PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 50}},
				},
			}},
			HostNetwork: true,
		},
	}
	m := translated(t, c, p)
	if m.Name != podName("prod", "web", "u-1") || len(m.Name) > 29 || m.RestartPolicy != "OnFailure" || m.Isolation != "namespaces" {
		t.Errorf("pod: %+v", m)
	}
	setup, server := m.Apps[0], m.Apps[1]
	if !setup.Init || setup.Rootfs != "" || setup.User != "1000" || setup.StopTimeout != "7s" {
		t.Errorf("init app: %+v", setup)
	}
	wantEnv := map[string]string{"POD": "web", "NS": "prod", "UID": "u-1", "NODE": "n1", "WHERE": "prod/web"}
	if !reflect.DeepEqual(server.Env, wantEnv) {
		t.Errorf("env %v, want %v", server.Env, wantEnv)
	}
	if want := []string{"/bin/server", "--pod=web", "$(POD)", "$(NONE)"}; !reflect.DeepEqual(server.Exec, want) {
		t.Errorf("exec %q, want %q", server.Exec, want)
	}
	if server.Rootfs != "/srv/alpine" || server.WorkingDir != "/srv" || server.User != "1000" || server.Group != "100" {
		t.Errorf("app: %+v", server)
	}
	if r := server.Resources; r == nil || r.Memory != "67108864" || r.CPUWeight == nil || *r.CPUWeight != 39 {
		t.Errorf("resources %+v, want memory 67108864 and CPU weight 39 (the kubelet's for 1 CPU)", r)
	}
	if pr := server.Probe; pr == nil || pr.HTTP == nil || pr.HTTP.Port != 8080 || pr.HTTP.Path != "/healthz" || pr.Action != "restart" || pr.PeriodSeconds != 5 || pr.FailureThreshold != 2 {
		t.Errorf("probe %+v", server.Probe)
	}
	// The sleep action is unitrun's sleep, not a command in the container.
	if server.PostStart == nil || server.PostStart.Sleep != "0s" || server.PreStop == nil || server.PreStop.Sleep != "50s" {
		t.Errorf("hooks %+v, %+v; want sleeps of 0s and 50s", server.PostStart, server.PreStop)
	}
}

// A container without a command runs its args on an image mapped to host,
// which has no entrypoint; on a root filesystem, whose entrypoint the node
// does not know, and without args too, command is refused with the reason.
func TestTranslateArgsWithoutCommand(t *testing.T) {
	c := &Config{Images: map[string]string{"busybox": HostImage, "alpine": "/srv/alpine"}, AllowPrivileged: true}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "args", Namespace: "default", UID: "u"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Args: []string{"sleep", "$(N)"}, Env: []corev1.EnvVar{{Name: "N", Value: "5"}}}}},
	}
	if exec := translated(t, c, p).Apps[0].Exec; !reflect.DeepEqual(exec, []string{"sleep", "5"}) {
		t.Errorf("exec %q, want the args, expanded", exec)
	}
	for _, w := range []struct {
		image  string
		args   []string
		reason string
	}{
		{"alpine", []string{"sleep"}, "no image metadata to take an entrypoint from"},
		{"busybox", nil, "an image mapped to host has no entrypoint or default command"},
	} {
		p.Spec.Containers[0].Image, p.Spec.Containers[0].Args = w.image, w.args
		if _, err := c.translate(p, nil); err == nil || !strings.Contains(err.Error(), "spec.containers[0].command: required") || !strings.Contains(err.Error(), w.reason) {
			t.Errorf("image %s, args %q: %v; want command refused: %s", w.image, w.args, err, w.reason)
		}
	}
}

// Each field the node refuses is refused with the reason, not "not
// supported" alone.
func TestTranslateRefusalsGiveReasons(t *testing.T) {
	yes := true
	c := &Config{Images: map[string]string{"debian": HostImage}, AllowPrivileged: true}
	signal := corev1.SIGUSR1
	ctrSC := &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default", UID: "u"},
		Spec: corev1.PodSpec{
			HostIPC: true, ShareProcessNamespace: &yes,
			EphemeralContainers: []corev1.EphemeralContainer{{}},
			SecurityContext: &corev1.PodSecurityContext{
				FSGroup: new(int64), SupplementalGroups: []int64{4000}, Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu"}},
			Containers: []corev1.Container{{
				Name: "app", Image: "debian", Command: []string{"sleep", "1"},
				VolumeDevices:   []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}},
				Lifecycle:       &corev1.Lifecycle{StopSignal: &signal},
				Stdin:           true,
				ResizePolicy:    []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}},
				SecurityContext: ctrSC,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")},
					Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
				},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/healthz", Port: intstr.FromInt32(8080), HTTPHeaders: []corev1.HTTPHeader{{Name: "Custom-Header", Value: "Awesome"}},
				}}},
			}},
		},
	}
	_, err := c.translate(p, nil)
	var rs refusals
	if !errors.As(err, &rs) {
		t.Fatalf("error %v, want the refusals", err)
	}
	fields := map[string]bool{}
	for _, r := range rs {
		fields[r.Field] = true
		if rule := strings.TrimSpace(r.Rule); strings.HasSuffix(rule, "not supported") {
			t.Errorf("%s: %q gives no reason", r.Field, r.Rule)
		}
	}
	for _, f := range []string{
		"spec.hostIPC", "spec.shareProcessNamespace", "spec.ephemeralContainers", "spec.securityContext.fsGroup",
		"spec.securityContext.supplementalGroups", "spec.securityContext.sysctls", "spec.securityContext", "spec.resourceClaims",
		"spec.containers[0].volumeDevices", "spec.containers[0].lifecycle.stopSignal", "spec.containers[0].stdin",
		"spec.containers[0].resizePolicy", "spec.containers[0].securityContext", "spec.containers[0].resources.requests[example.com/gpu]",
		"spec.containers[0].resources.claims", "spec.containers[0].livenessProbe.httpGet.httpHeaders",
	} {
		if !fields[f] {
			t.Errorf("%s is not refused: %v", f, err)
		}
	}
}

// Every field the node cannot honour is refused, named, and all at once.
func TestTranslateRefusals(t *testing.T) {
	onFailure := corev1.ContainerRestartPolicy("OnFailure")
	yes := true
	c := &Config{Images: map[string]string{"debian": HostImage}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default", UID: "u"},
		Spec: corev1.PodSpec{
			Volumes:        []corev1.Volume{{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
			InitContainers: []corev1.Container{{Name: "side", Image: "debian", Command: []string{"x"}, RestartPolicy: &onFailure}},
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx", Command: []string{"x"},
				Ports:           []corev1.ContainerPort{{ContainerPort: 80}},
				ReadinessProbe:  &corev1.Probe{},
				StartupProbe:    &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, SuccessThreshold: 2},
				SecurityContext: &corev1.SecurityContext{Privileged: &yes},
				Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
				Env: []corev1.EnvVar{
					{Name: "S", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{}}},
					// This node has no address.
					{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				},
			}},
		},
	}
	uid := int64(1000)
	socket := corev1.HostPathSocket
	bidirectional := corev1.MountPropagationBidirectional
	p.Spec.Resources = &corev1.ResourceRequirements{}
	p.Spec.Hostname = "web"
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/x", Type: &socket}}})
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
		Name: "other", Image: "debian", Command: []string{"x"},
		VolumeMounts:    []corev1.VolumeMount{{Name: "run", MountPath: "/run/x", MountPropagation: &bidirectional}},
		SecurityContext: &corev1.SecurityContext{RunAsUser: &uid, AllowPrivilegeEscalation: new(bool), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
	})
	_, err := c.translate(p, nil)
	if err == nil {
		t.Fatal("no error")
	}
	// Allowed, privileged and capabilities.add are root's: another user
	// has none.
	c.AllowPrivileged = true
	if _, err := c.translate(p, nil); err == nil || !strings.Contains(err.Error(), "spec.containers[1].securityContext.capabilities.add: needs runAsUser 0") {
		t.Errorf("capabilities.add of uid 1000 on a node that allows them: %v", err)
	}
	for _, field := range []string{
		"spec.containers[0].env[1].valueFrom.fieldRef.fieldPath", "spec.resources", "spec.hostname", "spec.volumes[1].hostPath.type",
		"spec.containers[1].volumeMounts[0].mountPropagation",
		"spec.containers[1].securityContext.capabilities.add",
		"spec.volumes[0]", "spec.initContainers[0].restartPolicy",
		"spec.containers[0].ports[0]", "spec.containers[0].readinessProbe", "spec.containers[0].startupProbe.successThreshold",
		"spec.containers[0].securityContext.privileged", "spec.containers[0].securityContext.runAsUser",
		"spec.containers[0].resources.limits[ephemeral-storage]", "spec.containers[0].env[0].valueFrom",
	} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
}

// A node that is not privileged runs no container as root's user or root's
// group, whether the container or the Pod asks; a privileged one may.
func TestTranslateRootGroup(t *testing.T) {
	uid, gid := int64(1000), int64(0)
	for _, tt := range []struct {
		name     string
		pod, ctr *int64 // runAsGroup of the Pod and of the container
	}{
		{"container", nil, &gid},
		{"pod", &gid, nil},
	} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "default", UID: "u"},
			Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: tt.pod},
				Containers: []corev1.Container{{Name: "app", Image: "debian", Command: []string{"/bin/true"},
					SecurityContext: &corev1.SecurityContext{RunAsGroup: tt.ctr}}},
			},
		}
		c := &Config{Images: map[string]string{"debian": HostImage}}
		want := "spec.containers[0].securityContext.runAsGroup: 0 is root's group on the host, which this node does not allow"
		if _, err := c.translate(p, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s runAsGroup 0 on a node that is not privileged: %v, want %q", tt.name, err, want)
		}
		c.AllowPrivileged = true
		if m := translated(t, c, p); m.Apps[0].Group != "0" {
			t.Errorf("%s runAsGroup 0 on a privileged node: group %q, want 0", tt.name, m.Apps[0].Group)
		}
	}
}

// A Pod's restart back-off may not go below the node's floor, the
// kubelet's 10s unless the node's operator chose another, which is also
// the default; a 1ns back-off made 256 restarting apps starve the manager.
func TestTranslateRestartBackoffFloor(t *testing.T) {
	field := "metadata.annotations[" + AnnotationRestartBackoff + "]"
	for _, tt := range []struct {
		floor      time.Duration
		annotation string // "" for none
		want       string // the first delay, or the refusal
	}{
		{0, "", "10s"},
		{0, "30s", "30s"},
		{0, "10s", "10s"},
		{0, "1ns", field + `: "1ns" is shorter than the minimum restart back-off, 10s (the kubelet's, unless unitrun-node's operator set another)`},
		{0, "9s", field + `: "9s" is shorter than the minimum restart back-off, 10s`},
		{0, "6m", field + `: "6m" is not a duration above 0 and at most 5m0s`},
		{100 * time.Millisecond, "100ms", "100ms"},
		{100 * time.Millisecond, "", "100ms"},
		{100 * time.Millisecond, "1ms", field + `: "1ms" is shorter than the minimum restart back-off, 100ms`},
		{time.Minute, "", "1m0s"},
	} {
		c := &Config{Images: map[string]string{"debian": HostImage}, AllowPrivileged: true, MinRestartBackoff: tt.floor}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", UID: "u"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "debian", Command: []string{"/bin/false"}}}},
		}
		if tt.annotation != "" {
			p.Annotations = map[string]string{AnnotationRestartBackoff: tt.annotation}
		}
		data, err := c.translate(p, nil)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			var m manifest
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			got = m.RestartBackoff.Initial
		}
		if !strings.Contains(got, tt.want) || (err == nil) != !strings.Contains(tt.want, field) {
			t.Errorf("floor %s, annotation %q: %q, want %q", tt.floor, tt.annotation, got, tt.want)
		}
	}
}

// An init container with restartPolicy Always is a sidecar, with its
// probes; readiness and startup probes map to unitrun's; an init
// container's probes are refused.
func TestTranslateSidecarsAndProbes(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	c := &Config{Images: map[string]string{"debian": HostImage}, AllowPrivileged: true, StateDir: "/state"}
	tcp := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(15001)}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mesh", Namespace: "default", UID: "u"},
		Spec: corev1.PodSpec{
			HostNetwork: true,
			InitContainers: []corev1.Container{
				{Name: "setup", Image: "debian", Command: []string{"/bin/true"}},
				{Name: "proxy", Image: "debian", Command: []string{"/bin/proxy"}, RestartPolicy: &always,
					ReadinessProbe: &corev1.Probe{ProbeHandler: tcp, PeriodSeconds: 2}},
			},
			Containers: []corev1.Container{{
				Name: "api", Image: "debian", Command: []string{"/bin/api"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http"), Path: "/ready"}},
					FailureThreshold: 4,
				},
				StartupProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/started"}}},
					PeriodSeconds:    1,
					FailureThreshold: 30,
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:                  corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: new("api")}},
					TimeoutSeconds:                5,
					TerminationGracePeriodSeconds: new(int64(5)),
				},
			}},
		},
	}
	m := translated(t, c, p)
	setup, proxy, api := m.Apps[0], m.Apps[1], m.Apps[2]
	if !setup.Init || setup.Sidecar || proxy.Init || !proxy.Sidecar || api.Init || api.Sidecar {
		t.Errorf("kinds: setup %+v, proxy %+v, api %+v", setup, proxy, api)
	}
	if r := proxy.Readiness; r == nil || r.TCP == nil || r.TCP.Port != 15001 || r.PeriodSeconds != 2 || r.Action != "" {
		t.Errorf("sidecar readiness probe %+v", r)
	}
	if r := api.Readiness; r == nil || r.HTTP == nil || r.HTTP.Port != 8080 || r.HTTP.Path != "/ready" || r.FailureThreshold != 4 || r.Action != "" {
		t.Errorf("readiness probe %+v", r)
	}
	if s := api.Startup; s == nil || len(s.Exec) != 1 || s.Exec[0] != "/bin/started" || s.PeriodSeconds != 1 || s.FailureThreshold != 30 || s.Action != "restart" {
		t.Errorf("startup probe %+v", s)
	}
	if l := api.Probe; l == nil || l.GRPC == nil || *l.GRPC != (kube.GRPCProbe{Port: 9090, Service: "api"}) || l.TimeoutSeconds != 5 || l.Action != "restart" || l.StopTimeout != "5s" {
		t.Errorf("grpc liveness probe %+v", l)
	}
	// unitrun takes the manifest as it is.
	data, err := c.translate(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pod.Parse(data); err != nil {
		t.Errorf("pod.Parse of the translated manifest: %v", err)
	}
	p.Spec.InitContainers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: tcp}
	_, err = c.translate(p, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.initContainers[0].readinessProbe: an init container has no probes") {
		t.Errorf("error %v; want it to refuse the init container's readiness probe", err)
	}
}

func TestContainerPaths(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: make([]corev1.Container, 2)}}
	got := containerPaths(p, errString(`apps[1].user "x": no such user`+"\n"+`apps[2].workingDir "/n": no such directory`)).Error()
	want := `spec.initContainers[1].user "x": no such user; spec.containers[0].workingDir "/n": no such directory`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// A failed liveness or startup probe fails the Pod under restartPolicy
// Never, as the kubelet's kill does when the policy forbids a restart,
// and restarts the container under the other policies; a sidecar's
// probes restart it under every policy.
func TestTranslateProbeActions(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	c := &Config{Images: map[string]string{"debian": HostImage}, AllowPrivileged: true}
	fails := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/false"}}}}
	for policy, want := range map[corev1.RestartPolicy]string{corev1.RestartPolicyNever: "fail-pod", corev1.RestartPolicyOnFailure: "restart", corev1.RestartPolicyAlways: "restart"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "probed", Namespace: "default", UID: "u"},
			Spec: corev1.PodSpec{
				HostNetwork:    true,
				RestartPolicy:  policy,
				InitContainers: []corev1.Container{{Name: "proxy", Image: "debian", Command: []string{"/bin/proxy"}, RestartPolicy: &always, LivenessProbe: fails}},
				Containers:     []corev1.Container{{Name: "job", Image: "debian", Command: []string{"/bin/job"}, LivenessProbe: fails, StartupProbe: fails}},
			},
		}
		m := translated(t, c, p)
		proxy, job := m.Apps[0], m.Apps[1]
		if proxy.Probe.Action != "restart" || job.Probe.Action != want || job.Startup.Action != want {
			t.Errorf("restartPolicy %s: sidecar's liveness %q, container's liveness %q and startup %q; want restart, %s, %s",
				policy, proxy.Probe.Action, job.Probe.Action, job.Startup.Action, want, want)
		}
	}
}
