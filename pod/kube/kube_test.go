package kube

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// decodeOne decodes the one Pod of text, failing on a refusal.
func decodeOne(t *testing.T, text string) *Pod {
	t.Helper()
	docs, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || len(docs[0].Refusals) > 0 {
		t.Fatalf("Decode: %d documents, refusals %v", len(docs), docs[0].Refusals)
	}
	return docs[0].Pod
}

// podYAML is a Pod named web with spec, YAML lines under spec.
func podYAML(spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n" + spec
}

// translate maps text with options that run any image on the host.
func translate(t *testing.T, text string, o Options) (*Manifest, error) {
	t.Helper()
	if o.Images == nil {
		o.Images = map[string]string{"busybox": HostImage, "alpine": "/srv/alpine"}
	}
	if o.Name == "" {
		o.Name = "web"
	}
	return Translate(decodeOne(t, text), &o)
}

func TestIsPodYAML(t *testing.T) {
	for text, want := range map[string]bool{
		"apiVersion: v1\nkind: Pod\n":            true,
		"---\nkind: Pod\n":                       true,
		"name: web\napps: []\n":                  false,
		"name: kind\napps: [{name: apiVersion}]": false,
		"- a\n":                                  false,
		"":                                       false,
		"{\"apiVersion\": \"v1\", \"kind\": 1}":  true,
	} {
		if got := IsPodYAML([]byte(text)); got != want {
			t.Errorf("IsPodYAML(%q) = %v, want %v", text, got, want)
		}
	}
}

// Every field a Pod may not carry is named by its path; a null is unset;
// the API server's defaults are accepted.
func TestDecode(t *testing.T) {
	docs, err := Decode([]byte(`apiVersion: v1
kind: Pod
metadata: {name: a, creationTimestamp: null, managedFields: [{manager: kubectl}], resourceVersion: "7"}
spec:
  schedulerName: default-scheduler
  dnsPolicy: ClusterFirst
  tolerations: [{key: k, operator: Exists}]
  priority: 0
  enableServiceLinks: true
  securityContext: {}
  nodeSelector: null
  volumes:
  - name: v
    nfs: {server: s, path: /}
  containers:
  - name: c
    image: busybox
    comand: [x]
    imagePullPolicy: Always
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
    stdin: maybe
    ports: [{containerPort: eighty}]
    resources: {limits: {memory: lots}}
    livenessProbe: {httpGet: {port: http, path: /}, periodSeconds: 99999999999}
  - name: c
    command: true
status: {phase: Running}
---
---
apiVersion: apps/v1
kind: Deployment
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2 (an empty one skipped)", len(docs))
	}
	want := Refusals{
		{"spec.volumes[0].nfs", "not supported: unitrun mounts hostPath and emptyDir volumes (unitrun-node also configMap, secret, downwardAPI and projected ones)"},
		{"spec.containers[0].comand", "not a field of a Kubernetes Pod"},
		{"spec.containers[0].stdin", `"maybe": must be true or false`},
		{"spec.containers[0].ports[0].containerPort", `"eighty": must be an integer`},
		{"spec.containers[0].resources.limits[memory]", `"lots": not a quantity like "128Mi", "500m" or "2"`},
		{"spec.containers[0].livenessProbe.periodSeconds", `"99999999999": must be an integer`},
		{"spec.containers[1].command", "must be a list"},
	}
	if got := docs[0].Refusals; !reflect.DeepEqual(got, want) {
		t.Errorf("refusals:\n%v\nwant\n%v", got, want)
	}
	if p := docs[0].Pod; p.Metadata.Name != "a" || p.Spec.Containers[0].TerminationMessagePath != "/dev/termination-log" || p.Spec.Containers[0].LivenessProbe.HTTPGet.Port.Str != "http" {
		t.Errorf("decoded %+v", p)
	}
	if got := docs[1].Refusals; len(got) != 1 || got[0].Error() != `kind: "Deployment" of apiVersion "apps/v1": unitrun runs a Pod (apiVersion: v1, kind: Pod)` {
		t.Errorf("a Deployment: %v", got)
	}
	if _, err := Decode([]byte("---\n")); err == nil || err.Error() != "holds no Pod" {
		t.Errorf("no document: %v", err)
	}
}

func TestQuantity(t *testing.T) {
	for _, tt := range []struct {
		in           string
		value, milli int64
	}{
		{"128Mi", 128 << 20, 128 << 20 * 1000},
		{"500m", 1, 500},
		{"1", 1, 1000},
		{"1.5", 2, 1500},
		{"2e3", 2000, 2000000},
		{"1E", 1e18, 9223372036854775807},
		{"1k", 1000, 1000000},
		{"0.1", 1, 100},
		{"1n", 1, 1},
		{"1Gi", 1 << 30, 1 << 30 * 1000},
	} {
		q, err := ParseQuantity(tt.in)
		if err != nil || q.Value() != tt.value || q.MilliValue() != tt.milli || q.String() != tt.in {
			t.Errorf("%s: value %d, milli %d, %v; want %d, %d", tt.in, q.Value(), q.MilliValue(), err, tt.value, tt.milli)
		}
	}
	for _, bad := range []string{"", "1.2.3", "Mi", "1mi", "1e", "1Ki2", "1e99999"} {
		if _, err := ParseQuantity(bad); err == nil {
			t.Errorf("%q is read as a quantity", bad)
		}
	}
}

// Each mapped field lands where docs/kubernetes.md says.
func TestTranslateMapping(t *testing.T) {
	m, err := translate(t, `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: prod
  uid: u-1
  labels: {tier: front}
  annotations: {unitrun.io/restart-backoff: 30s}
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 7
  hostNetwork: true
  securityContext: {runAsUser: 1000}
  volumes:
  - {name: data, hostPath: {path: /srv/data}}
  - {name: scratch, emptyDir: {}}
  initContainers:
  - {name: setup, image: busybox, command: ["true"]}
  - name: proxy
    image: busybox
    restartPolicy: Always
    args: [/bin/proxy]
    readinessProbe: {tcpSocket: {port: 9000}}
  containers:
  - name: server
    image: alpine
    command: [/bin/server]
    args: ["--pod=$(POD)", "$$(POD)", "$(NONE)"]
    workingDir: /srv
    env:
    - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: LABELS, valueFrom: {fieldRef: {fieldPath: metadata.labels}}}
    - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: WHERE, value: "$(POD) in $(NONE)"}
    securityContext:
      runAsGroup: 100
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
    resources:
      limits: {memory: 64Mi, cpu: 1500m}
      requests: {cpu: "1", memory: 32Mi}
    ports: [{name: http, containerPort: 8080}]
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: true}
    - {name: scratch, mountPath: /tmp/x/, subPathExpr: $(POD)}
    livenessProbe:
      httpGet: {port: http, path: /healthz}
      periodSeconds: 5
      failureThreshold: 2
      terminationGracePeriodSeconds: 3
    startupProbe: {exec: {command: [/bin/check]}}
    readinessProbe: {grpc: {port: 9090, service: api}}
    lifecycle:
      postStart: {sleep: {seconds: 2}}
      preStop: {httpGet: {port: 8080, path: /quit}}
`, Options{
		AllowPrivileged: true,
		Address:         "10.0.0.5",
		Volumes:         map[string]*VolumeDir{"data": {Dir: "/srv/data"}, "scratch": {Dir: "/state/scratch", EmptyDir: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	all := func(c ...string) *[]string { return &c }
	weight, millis := 39, 1500
	caps := []string{}
	want := &Manifest{
		Name: "web", RestartPolicy: "OnFailure", RestartBackoff: &Backoff{Initial: "30s"},
		Isolation: "namespaces", Network: "host",
		Apps: []App{
			{Name: "setup", Exec: []string{"true"}, Env: map[string]string{}, User: "1000", StopTimeout: "7s", Init: true, RestartPolicy: "OnFailure",
				Capabilities: all(DefaultCapabilities...)},
			{Name: "proxy", Exec: []string{"/bin/proxy"}, Env: map[string]string{}, User: "1000", StopTimeout: "7s", Sidecar: true,
				Capabilities: all(DefaultCapabilities...), Readiness: &AppProbe{TCP: &TCPProbe{Port: 9000}}},
			{
				Name: "server", Exec: []string{"/bin/server", "--pod=web", "$(POD)", "$(NONE)"}, WorkingDir: "/srv", Rootfs: "/srv/alpine",
				Env:  map[string]string{"POD": "web", "LABELS": `tier="front"`, "TIER": "front", "IP": "10.0.0.5", "MEM": "64", "WHERE": "web in $(NONE)"},
				User: "1000", Group: "100", StopTimeout: "7s", NoNewPrivileges: true, ReadOnlyRoot: true, Capabilities: &caps,
				Resources: &Limits{Memory: "67108864", CPUWeight: &weight, CPUMillis: &millis},
				Mounts:    []Mount{{Source: "/srv/data", Path: "/data", ReadOnly: true}, {Source: "/state/scratch/web", Path: "/tmp/x"}},
				Probe:     &AppProbe{HTTP: &HTTPProbe{Port: 8080, Path: "/healthz"}, PeriodSeconds: 5, FailureThreshold: 2, Action: "restart", StopTimeout: "3s"},
				Startup:   &AppProbe{Exec: []string{"/bin/check"}, Action: "restart"},
				Readiness: &AppProbe{GRPC: &GRPCProbe{Port: 9090, Service: "api"}},
				PostStart: &Hook{Sleep: "2s"},
				PreStop:   &Hook{HTTP: &HTTPProbe{Port: 8080, Path: "/quit"}},
			},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("manifest\n%+v\nwant\n%+v", m, want)
		for i := range min(len(m.Apps), len(want.Apps)) {
			if !reflect.DeepEqual(m.Apps[i], want.Apps[i]) {
				t.Errorf("app %d:\n%+v\nwant\n%+v", i, m.Apps[i], want.Apps[i])
			}
		}
	}
}

// The defaults: restartPolicy Always, the kubelet's back-off, no
// isolation for host images, the runtime's capabilities, args as the
// command of a host image, probes that fail the pod under Never.
func TestTranslateDefaults(t *testing.T) {
	m, err := translate(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: main, image: busybox, args: [/bin/sh, -c, "echo hi"]}
`, Options{AllowPrivileged: true})
	if err != nil {
		t.Fatal(err)
	}
	want := &Manifest{Name: "web", RestartPolicy: "Always", RestartBackoff: &Backoff{Initial: "10s"}, Apps: []App{
		{Name: "main", Exec: []string{"/bin/sh", "-c", "echo hi"}, Env: map[string]string{}, StopTimeout: "30s", Capabilities: &DefaultCapabilities},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("manifest %+v, want %+v", m, want)
	}
	m, err = translate(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: busybox, command: [/bin/true], livenessProbe: {exec: {command: [/bin/true]}}}
`, Options{AllowPrivileged: true, MinRestartBackoff: 100_000_000})
	if err != nil || m.Apps[0].Probe.Action != "fail-pod" || m.RestartBackoff.Initial != "100ms" {
		t.Errorf("under Never: %+v, %v; want a probe that fails the pod, the floor's back-off", m, err)
	}
}

// TestTranslateGracePeriod checks that a container's stop timeout is the
// Pod's terminationGracePeriodSeconds as the kubelet applies it: 30 s,
// the API server's default, where the Pod sets none, and never under the
// kubelet's minimum of 2 s (0 is not an instant kill); a probe's own
// grace period has the same minimum.
func TestTranslateGracePeriod(t *testing.T) {
	for _, c := range []struct {
		grace, probeGrace string
		want, wantProbe   string
	}{
		{"", "", "30s", ""},
		{"terminationGracePeriodSeconds: 0", "terminationGracePeriodSeconds: 1", "2s", "2s"},
		{"terminationGracePeriodSeconds: 1", "", "2s", ""},
		{"terminationGracePeriodSeconds: 2", "terminationGracePeriodSeconds: 5", "2s", "5s"},
		{"terminationGracePeriodSeconds: 45", "", "45s", ""},
	} {
		m, err := translate(t, podYAML(`  `+c.grace+`
  containers:
  - name: main
    image: busybox
    command: [/bin/true]
    livenessProbe: {exec: {command: [/bin/true]}, `+c.probeGrace+`}
`), Options{Images: Images{"busybox": HostImage}, AllowPrivileged: true})
		if err != nil {
			t.Fatalf("%q: %v", c.grace, err)
		}
		if a := m.Apps[0]; a.StopTimeout != c.want || a.Probe.StopTimeout != c.wantProbe {
			t.Errorf("%q, probe's %q: stopTimeout %q, probe's %q; want %q, %q", c.grace, c.probeGrace, a.StopTimeout, a.Probe.StopTimeout, c.want, c.wantProbe)
		}
	}
}

// TestTranslateProbeExpansion checks that $(VAR) in an exec probe's
// command expands as the kubelet expands it
// (ExpandContainerCommandOnlyStatic): from the container's env as
// written, a value itself unexpanded, one set by valueFrom empty, an
// unknown one kept and $$ an escaped $; a lifecycle hook's command is not
// expanded at all, as the kubelet leaves it.
func TestTranslateProbeExpansion(t *testing.T) {
	m, err := translate(t, podYAML(`  containers:
  - name: main
    image: busybox
    command: [/bin/sleep, "600"]
    env:
    - {name: A, value: x}
    - {name: B, value: "$(A)-y"}
    - {name: C, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    livenessProbe: {exec: {command: [/bin/sh, -c, "echo $(A) $(B) [$(C)] $(NOPE) $$(A)"]}}
    readinessProbe: {exec: {command: [/bin/echo, "$(A)"]}}
    startupProbe: {exec: {command: [/bin/echo, "$(B)"]}}
    lifecycle:
      postStart: {exec: {command: [/bin/echo, "$(A)", "$$(A)"]}}
      preStop: {exec: {command: [/bin/echo, "$(A)"]}}
`), Options{AllowPrivileged: true})
	if err != nil {
		t.Fatal(err)
	}
	a := m.Apps[0]
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"livenessProbe", a.Probe.Exec, []string{"/bin/sh", "-c", "echo x $(A)-y [] $(NOPE) $(A)"}},
		{"readinessProbe", a.Readiness.Exec, []string{"/bin/echo", "x"}},
		{"startupProbe", a.Startup.Exec, []string{"/bin/echo", "$(A)-y"}},
		{"postStart", a.PostStart.Exec, []string{"/bin/echo", "$(A)", "$$(A)"}},
		{"preStop", a.PreStop.Exec, []string{"/bin/echo", "$(A)"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: exec %q, want %q", c.what, c.got, c.want)
		}
	}
}

// TestTranslateRegistryImage checks that, with RegistryImages, an image
// --image does not map is the app's image, its command and args kept
// apart for the merge with the image's config, its imagePullPolicy
// passed on, and the pod isolated unless its annotation says none;
// without, it is refused.
func TestTranslateRegistryImage(t *testing.T) {
	text := `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: main, image: "registry.test/app:1", args: ["$(X)", b], env: [{name: X, value: x}]}
  - {name: side, image: "registry.test/app:1", command: [/bin/run], imagePullPolicy: Never}
  - {name: host, image: busybox, command: [/bin/true]}
`
	m, err := translate(t, text, Options{AllowPrivileged: true, RegistryImages: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Isolation != "namespaces" {
		t.Errorf("isolation %q, want namespaces", m.Isolation)
	}
	main, side := m.Apps[0], m.Apps[1]
	if main.Image != "registry.test/app:1" || len(main.Exec) != 0 || !reflect.DeepEqual(main.Args, []string{"x", "b"}) || main.ImagePullPolicy != "" || main.Rootfs != "" {
		t.Errorf("main: %+v, want the image, no exec, args [x b]", main)
	}
	if !reflect.DeepEqual(side.Exec, []string{"/bin/run"}) || len(side.Args) != 0 || side.ImagePullPolicy != "Never" {
		t.Errorf("side: %+v, want exec [/bin/run], policy Never", side)
	}
	// The isolation annotation none makes it a host pod, its apps' images
	// mounted by their own services.
	if m, err := translate(t, strings.Replace(text, "metadata: {name: web}", "metadata: {name: web, annotations: {unitrun.io/isolation: none}}", 1), Options{AllowPrivileged: true, RegistryImages: true}); err != nil || m.Isolation != "none" {
		t.Errorf("with isolation none: %v, isolation %q; want a host pod", err, m.Isolation)
	}
	if _, err := translate(t, strings.Replace(text, "imagePullPolicy: Never", "imagePullPolicy: Often", 1), Options{AllowPrivileged: true, RegistryImages: true}); err == nil || !strings.Contains(err.Error(), `spec.containers[1].imagePullPolicy: "Often": must be one of Always, IfNotPresent, Never`) {
		t.Errorf("a bad imagePullPolicy: %v", err)
	}
	if _, err := translate(t, text, Options{AllowPrivileged: true}); err == nil || !strings.Contains(err.Error(), `spec.containers[0].image: "registry.test/app:1" is not mapped`) {
		t.Errorf("without RegistryImages: %v, want the image refused", err)
	}
	// runAsNonRoot without runAsUser: the kubelet looks at the image's
	// user, so the check is left to the pod's creation; a host image has
	// none to look at.
	nonRoot := strings.Replace(text, "spec:\n", "spec:\n  securityContext: {runAsNonRoot: true}\n", 1)
	if _, err := translate(t, nonRoot, Options{AllowPrivileged: true, RegistryImages: true}); err == nil || err.Error() != `spec.containers[2].securityContext.runAsNonRoot: true, but runAsUser is 0 or not set` {
		t.Errorf("runAsNonRoot: %v, want the host image's container alone refused", err)
	}
	m, err = translate(t, strings.Replace(nonRoot, "  - {name: host, image: busybox, command: [/bin/true]}\n", "", 1), Options{AllowPrivileged: true, RegistryImages: true})
	if err != nil || !m.Apps[0].RunAsNonRoot || !m.Apps[1].RunAsNonRoot {
		t.Errorf("runAsNonRoot of registry images: %v, %+v; want runAsNonRoot on each app", err, m)
	}
}

// Every field that cannot be honoured is refused with its rule.
func TestTranslateRefusals(t *testing.T) {
	pod := podYAML
	ctr := func(fields string) string {
		return pod("  containers:\n  - name: main\n    image: busybox\n    command: [/bin/true]\n" + fields)
	}
	for _, tt := range []struct {
		text string
		o    Options
		want string
	}{
		{ctr(""), Options{}, `spec.containers[0].securityContext.runAsUser: root (0 or not set) runs as root on the host, which this node does not allow`},
		{ctr("    securityContext: {runAsUser: 1, runAsGroup: 0}\n"), Options{}, `spec.containers[0].securityContext.runAsGroup: 0 is root's group on the host, which this node does not allow`},
		{ctr("    securityContext: {runAsUser: 1, privileged: true}\n"), Options{}, `spec.containers[0].securityContext.privileged: this node does not allow privileged containers`},
		{ctr("    securityContext: {runAsUser: 1, capabilities: {add: [SYS_ADMIN]}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].securityContext.capabilities.add: needs runAsUser 0: unitrun gives no capabilities to another user`},
		{ctr("    securityContext: {capabilities: {drop: [NOPE]}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].securityContext.capabilities.drop[0]: "NOPE" is not a Linux capability`},
		{ctr("    securityContext: {runAsNonRoot: true}\n"), Options{AllowPrivileged: true}, `spec.containers[0].securityContext.runAsNonRoot: true, but runAsUser is 0 or not set`},
		{ctr("    securityContext: {seccompProfile: {type: RuntimeDefault}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].securityContext: seLinuxOptions, seccompProfile, appArmorProfile, windowsOptions and procMount are not supported`},
		{pod("  restartPolicy: Sometimes\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.restartPolicy: "Sometimes" is not Always, OnFailure or Never`},
		{pod("  containers: []\n"), Options{}, `spec.containers: required: a Pod has at least one container`},
		{pod("  hostPID: true\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.hostPID: not supported`},
		{pod("  hostname: h\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.hostname: hostname, subdomain, setHostnameAsFQDN and hostnameOverride are not supported`},
		{pod("  securityContext: {fsGroup: 2}\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.securityContext.fsGroup: not supported`},
		{pod("  resources: {limits: {cpu: 1}}\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.resources: pod-level resources are not supported: set them on each container`},
		{pod("  ephemeralContainers: [{name: e}]\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.ephemeralContainers: not supported`},
		{pod("  volumes: [{name: v, hostPath: {path: /x, type: Directory}}]\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.volumes[0].hostPath.type: "Directory": not checked by unitrun; leave it unset`},
		{pod("  volumes: [{name: v, emptyDir: {medium: HugePages}}]\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.volumes[0].emptyDir.medium: "HugePages" is not supported`},
		{pod("  volumes: [{name: v, configMap: {name: c}}]\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.volumes[0]: volume "v": configMap, secret, downwardAPI and projected volumes hold a cluster's objects: they need unitrun-node`},
		{pod("  volumes: [{name: v}]\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.volumes[0]: volume "v": only hostPath, emptyDir, configMap, secret, downwardAPI and projected volumes are supported`},
		{pod("  initContainers: [{name: i, image: busybox, command: [x], restartPolicy: OnFailure}]\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.initContainers[0].restartPolicy: "OnFailure": an init container's restartPolicy can only be Always, which makes it a sidecar`},
		{pod("  initContainers: [{name: i, image: busybox, command: [x], livenessProbe: {exec: {command: [x]}}}]\n  containers: [{name: a, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.initContainers[0].livenessProbe: an init container has no probes`},
		{ctr("    restartPolicy: Always\n"), Options{AllowPrivileged: true}, `spec.containers[0].restartPolicy: a container's own restartPolicy is not supported`},
		{pod("  containers: [{name: a, image: nginx, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].image: "nginx" is not mapped to a root filesystem or to host (--image nginx=host or --image nginx=/path/to/rootfs)`},
		{pod("  containers: [{name: a, image: alpine}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].command: required: unitrun has no image metadata to take an entrypoint from`},
		{pod("  containers: [{name: a, image: busybox}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].command: required, or args: an image mapped to host has no entrypoint or default command`},
		{pod("  containers: [{name: Bad_Name, image: busybox, command: [x]}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].name: "Bad_Name": `},
		{ctr("    ports: [{containerPort: 80}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].ports[0]: port 80 on a pod network: unitrun has none; set hostNetwork: true`},
		{ctr("    volumeDevices: [{name: d, devicePath: /dev/x}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].volumeDevices: not supported: unitrun provides no block volumes`},
		{ctr("    volumeMounts: [{name: nope, mountPath: /x}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].volumeMounts[0].name: "nope" names no volume of the pod that unitrun provides`},
		{ctr("    lifecycle: {stopSignal: SIGUSR1}\n"), Options{AllowPrivileged: true}, `spec.containers[0].lifecycle.stopSignal: not supported: unitrun stops every container with SIGTERM, then SIGKILL`},
		{ctr("    lifecycle: {preStop: {tcpSocket: {port: 1}}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].lifecycle.preStop.tcpSocket: not supported: the kubelet does not run it either`},
		{ctr("    tty: true\n"), Options{AllowPrivileged: true}, `spec.containers[0].stdin: stdin and tty are not supported: an app gets no input and no terminal`},
		{ctr("    resizePolicy: [{resourceName: cpu}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].resizePolicy: not supported`},
		{ctr("    restartPolicyRules: [{action: Restart}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].restartPolicyRules: not supported`},
		{ctr("    resources: {limits: {nvidia.com/gpu: 1}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].resources.limits[nvidia.com/gpu]: not supported: unitrun pods limit memory and CPU only`},
		{ctr("    resources: {requests: {example.com/x: 1}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].resources.requests[example.com/x]: not supported: unitrun has CPU and memory only, no extended resources`},
		{ctr("    resources: {claims: [{name: gpu}]}\n"), Options{AllowPrivileged: true}, `spec.containers[0].resources.claims: not supported`},
		{ctr("    readinessProbe: {successThreshold: 2, exec: {command: [x]}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].readinessProbe.successThreshold: must be 1 for a readiness probe: unitrun counts one success`},
		{ctr("    livenessProbe: {periodSeconds: 1}\n"), Options{AllowPrivileged: true}, `spec.containers[0].livenessProbe: has no handler`},
		{ctr("    livenessProbe: {httpGet: {port: web}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].livenessProbe.httpGet.port: "web" names no port of the container`},
		{ctr("    livenessProbe: {httpGet: {port: 80, host: example.com}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].livenessProbe.httpGet.host: not supported: the probe checks the pod's localhost`},
		{ctr("    livenessProbe: {httpGet: {port: 80, scheme: HTTPS}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].livenessProbe.httpGet.scheme: HTTPS is not supported: only HTTP`},
		{ctr("    livenessProbe: {httpGet: {port: 80, httpHeaders: [{name: a, value: b}]}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].livenessProbe.httpGet.httpHeaders: not supported`},
		{ctr("    livenessProbe: {tcpSocket: {port: 80, host: example.com}}\n"), Options{AllowPrivileged: true}, `spec.containers[0].livenessProbe.tcpSocket.host: not supported: the probe checks the pod's localhost`},
		{ctr("    env: [{name: X, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: "status.podIP" has no value: this host has no address`},
		{ctr("    env: [{name: X, valueFrom: {fieldRef: {fieldPath: spec.hostname}}}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: "spec.hostname" is not supported`},
		{ctr("    env: [{name: X, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: "limits.cpu": the container sets no limit of cpu`},
		{ctr("    env: [{name: X, valueFrom: {resourceFieldRef: {resource: limits.gpu}}}]\n    resources: {limits: {memory: 1Gi}}\n"), Options{AllowPrivileged: true, Allocatable: func() (map[string]Quantity, error) { return nil, nil }}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: "limits.gpu" is not supported`},
		{ctr("    env: [{name: X, valueFrom: {resourceFieldRef: {resource: limits.cpu, containerName: other}}}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.containerName: "other" names no container of the pod`},
		{ctr("    env: [{name: X, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].env[0].valueFrom.secretKeyRef: a secret is a cluster's object: it needs unitrun-node`},
		{ctr("    envFrom: [{configMapRef: {name: c}}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].envFrom[0].configMapRef: a configmap is a cluster's object: it needs unitrun-node`},
		{ctr("    env: [{name: X, valueFrom: {fileKeyRef: {path: p}}}]\n"), Options{AllowPrivileged: true}, `spec.containers[0].env[0].valueFrom: only fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef are supported (not fileKeyRef)`},
		{ctr("    volumeMounts: [{name: v, mountPath: /x, subPath: ../up}]\n"), Options{AllowPrivileged: true, Volumes: map[string]*VolumeDir{"v": {Dir: "/v"}}}, `spec.containers[0].volumeMounts[0].subPath: "../up" must be a relative path inside the volume`},
		{ctr("    volumeMounts: [{name: v, mountPath: /x, mountPropagation: Bidirectional}]\n"), Options{AllowPrivileged: true, Volumes: map[string]*VolumeDir{"v": {Dir: "/v"}}}, `spec.containers[0].volumeMounts[0].mountPropagation: "Bidirectional" is not supported: a container's mounts are its own`},
		{strings.Replace(pod("  containers: [{name: a, image: alpine, command: [x]}]\n"), "metadata: {name: web}", "metadata: {name: web, annotations: {unitrun.io/isolation: none}}", 1), Options{AllowPrivileged: true}, `metadata.annotations[unitrun.io/isolation]: none cannot run an image that maps to a root filesystem: that needs namespaces`},
		{strings.Replace(pod("  containers: [{name: a, image: busybox, command: [x]}]\n"), "metadata: {name: web}", "metadata: {name: web, annotations: {unitrun.io/isolation: vm}}", 1), Options{AllowPrivileged: true}, `metadata.annotations[unitrun.io/isolation]: "vm" is not none or namespaces`},
		{strings.Replace(pod("  containers: [{name: a, image: busybox, command: [x]}]\n"), "metadata: {name: web}", "metadata: {name: web, annotations: {unitrun.io/restart-backoff: 1s}}", 1), Options{AllowPrivileged: true}, `metadata.annotations[unitrun.io/restart-backoff]: "1s" is shorter than the minimum restart back-off, 10s (the kubelet's, unless unitrun-node's operator set another)`},
		{strings.Replace(pod("  containers: [{name: a, image: busybox, command: [x]}]\n"), "metadata: {name: web}", "metadata: {name: web, annotations: {unitrun.io/restart-backoff: 6m}}", 1), Options{AllowPrivileged: true}, `metadata.annotations[unitrun.io/restart-backoff]: "6m" is not a duration above 0 and at most 5m0s`},
	} {
		_, err := translate(t, tt.text, tt.o)
		var rs Refusals
		if !errors.As(err, &rs) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want a refusal %q", tt.text, err, tt.want)
		}
	}
}

// What a Pod needs from its cluster that is not there is waited for,
// unless optional.
func TestTranslateWaits(t *testing.T) {
	data := map[string][]byte{"k": []byte("v"), "a=b": []byte("x")}
	get := func(name string) map[string][]byte {
		if name == "there" {
			return data
		}
		return nil
	}
	m, err := translate(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: a
    image: busybox
    command: [x]
    envFrom: [{configMapRef: {name: there}, prefix: P_}, {secretRef: {name: gone, optional: true}}]
    env:
    - {name: K, valueFrom: {secretKeyRef: {name: there, key: k}}}
    - {name: O, valueFrom: {configMapKeyRef: {name: gone, key: k, optional: true}}}
`, Options{AllowPrivileged: true, ConfigMap: get, Secret: get, ServiceEnv: map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"P_k": "v", "K": "v", "KUBERNETES_SERVICE_HOST": "10.0.0.1"}; !reflect.DeepEqual(m.Apps[0].Env, want) {
		t.Errorf("env %v, want %v", m.Apps[0].Env, want)
	}
	_, err = translate(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: a
    image: busybox
    command: [x]
    envFrom: [{configMapRef: {name: gone}}]
    env: [{name: K, valueFrom: {secretKeyRef: {name: there, key: other}}}]
`, Options{AllowPrivileged: true, ConfigMap: get, Secret: get})
	var w WaitError
	if !errors.As(err, &w) || err.Error() != `configmap "gone"; key "other" of secret "there"` {
		t.Errorf("waits: %v", err)
	}
}

// Plan maps each Pod of a file for unitrun pod run: named after it, its
// emptyDirs under the directory given, and refuses a name twice.
func TestPlan(t *testing.T) {
	one := "apiVersion: v1\nkind: Pod\nmetadata: {name: NAME}\nspec:\n  volumes: [{name: s, emptyDir: {}}]\n  containers: [{name: a, image: busybox, command: [x], volumeMounts: [{name: s, mountPath: /s, subPath: sub}]}]\n"
	plans, err := Plan([]byte(strings.ReplaceAll(one, "NAME", "a")+"---\n"+strings.ReplaceAll(one, "NAME", "b")), Options{Images: Images{"busybox": HostImage}, AllowPrivileged: true}, "/state")
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 2 || plans[1].Name != "b" || len(plans[1].EmptyDirs) != 1 || plans[1].EmptyDirs[0].Dir != "/state/pods/b/volumes/s" || !reflect.DeepEqual(plans[1].EmptyDirs[0].SubPaths, []string{"sub"}) {
		t.Errorf("plans %+v", plans)
	}
	if !strings.Contains(string(plans[0].Manifest), `"mounts":[{"source":"/state/pods/a/volumes/s/sub","path":"/s"}]`) {
		t.Errorf("manifest %s", plans[0].Manifest)
	}
	second := strings.NewReplacer("NAME", "a", "emptyDir: {}", "emptyDir: {medium: Memory, sizeLimit: 1Mi}",
		"spec:\n", "spec:\n  activeDeadlineSeconds: 5\n  readinessGates: [{conditionType: x}]\n  hostAliases: [{ip: 1.2.3.4}]\n  dnsConfig: {}\n").Replace(one)
	plans, err = Plan([]byte(strings.ReplaceAll(one, "NAME", "a")+"---\n"+second), Options{Images: Images{"busybox": HostImage}, AllowPrivileged: true}, "/state")
	if err != nil || len(plans) != 2 || plans[0].Err() != nil || plans[0].Manifest == nil || plans[1].Manifest != nil {
		t.Fatalf("Plan of a Pod and a refused one: %+v, %v; want both, the second refused", plans, err)
	}
	err = plans[1].Err()
	want := `document 2: Pod a: metadata.name: "a" is the name of document 1's Pod too
document 2: Pod a: spec.activeDeadlineSeconds: not supported by unitrun pod run: unitrun-node stops a Pod at its deadline
document 2: Pod a: spec.readinessGates: not supported by unitrun pod run: their conditions are set through a cluster's API
document 2: Pod a: spec.hostAliases: not supported by unitrun pod run, whose apps see the host's /etc/hosts (unitrun-node writes the Pod's own)
document 2: Pod a: spec.dnsConfig: not supported by unitrun pod run, whose apps see the host's /etc/resolv.conf (unitrun-node writes the Pod's own)
document 2: Pod a: spec.volumes[0].emptyDir.medium: Memory is not supported by unitrun pod run: its emptyDir is a directory of the pod's state (unitrun-node mounts a tmpfs)
document 2: Pod a: spec.volumes[0].emptyDir.sizeLimit: not supported by unitrun pod run, which does not measure a volume (unitrun-node evicts a Pod past it)`
	if err == nil || err.Error() != want {
		t.Errorf("Plan: %v\nwant\n%s", err, want)
	}
}

// A Pod's name, and its containers', are refused with the rule in words
// after the Pod, and a Pod with no name (generateName alone) is told so.
func TestPlanNames(t *testing.T) {
	one := "apiVersion: v1\nkind: Pod\nmetadata: {META}\nspec:\n  containers: [{name: CTR, image: busybox, command: [x]}]\n"
	for _, c := range []struct{ meta, ctr, want string }{
		{"name: Bad_Name", "a", `Pod Bad_Name: metadata.name: name "Bad_Name": must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit`},
		{"name: web", "Bad_Ctr", `Pod web: spec.containers[0].name: "Bad_Ctr": must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit`},
		{"generateName: web-", "a", `Pod with no name: metadata.name: required: metadata.generateName is not supported, the pod is named after metadata.name`},
		{"labels: {a: b}", "a", `Pod with no name: metadata.name: required: the pod is named after it`},
	} {
		doc := strings.NewReplacer("META", c.meta, "CTR", c.ctr).Replace(one)
		plans, err := Plan([]byte(doc), Options{Images: Images{"busybox": HostImage}, AllowPrivileged: true}, "/state")
		if err != nil || len(plans) != 1 || plans[0].Err() == nil || plans[0].Err().Error() != c.want {
			t.Errorf("%s: %+v, %v; want the refusal %q", c.meta, plans, err, c.want)
		}
	}
}

// A Pod of a file reads, through fieldRefs, the namespace, service
// account and node a Pod has on a node where it sets none: "default",
// "default" and this host's node name; those it sets where it does.
func TestPlanFieldRefDefaults(t *testing.T) {
	host, err := HostNodeName()
	if err != nil {
		t.Fatal(err)
	}
	one := "apiVersion: v1\nkind: Pod\nmetadata: {name: a META}\nspec:\n  SPEC\n  containers:\n  - name: a\n    image: busybox\n    command: [x]\n    env:\n" +
		"    - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}\n" +
		"    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n" +
		"    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}\n"
	for _, c := range []struct {
		meta, spec string
		want       map[string]string
	}{
		{"", "", map[string]string{"NS": "default", "NODE": host, "SA": "default"}},
		{", namespace: shop", "nodeName: n1\n  serviceAccountName: builder", map[string]string{"NS": "shop", "NODE": "n1", "SA": "builder"}},
	} {
		doc := strings.NewReplacer("META", c.meta, "SPEC", c.spec).Replace(one)
		plans, err := Plan([]byte(doc), Options{Images: Images{"busybox": HostImage}, AllowPrivileged: true}, "/state")
		if err != nil || len(plans) != 1 || plans[0].Err() != nil {
			t.Fatalf("%q %q: %+v, %v", c.meta, c.spec, plans, err)
		}
		var m Manifest
		if err := json.Unmarshal(plans[0].Manifest, &m); err != nil {
			t.Fatal(err)
		}
		if got := m.Apps[0].Env; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q %q: env %v, want %v", c.meta, c.spec, got, c.want)
		}
	}
}

func TestContainerPaths(t *testing.T) {
	got := ContainerPaths("apps[0].user \"x\": no such user\napps[2].workingDir \"/n\": no such directory", 1)
	if want := "spec.initContainers[0].user \"x\": no such user\nspec.containers[1].workingDir \"/n\": no such directory"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := ContainerPaths("apps[1].runAsNonRoot: true, but ...", 0), "spec.containers[1].securityContext.runAsNonRoot: true, but ..."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestImagesFlag(t *testing.T) {
	m := Images{}
	for _, s := range []string{"debian=host", "alpine=/srv/alpine"} {
		if err := m.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if m.String() != "alpine=/srv/alpine,debian=host" {
		t.Errorf("String() = %q", m.String())
	}
	for _, bad := range []string{"debian", "=host", "debian=rel/path"} {
		if err := m.Set(bad); err == nil || !strings.Contains(err.Error(), "want NAME=host or NAME=/absolute/rootfs") {
			t.Errorf("Set(%q): %v", bad, err)
		}
	}
}

// Near tells the --image mapping of an image's repository under another
// tag, a digest or none (Docker Hub's names compared normalized), and
// nothing for an image mapped itself, another repository's mapping or a
// name that is not a reference.
func TestImagesNear(t *testing.T) {
	for _, tt := range []struct {
		m         Images
		ref, want string
	}{
		{Images{"busybox": HostImage}, "busybox:1.36", "--image busybox=host maps busybox, not busybox:1.36"},
		{Images{"docker.io/library/busybox:1.28": "/srv/bb"}, "busybox", "--image docker.io/library/busybox:1.28=/srv/bb maps docker.io/library/busybox:1.28, not busybox"},
		{Images{"reg.example:5000/app:1": HostImage}, "reg.example:5000/app@sha256:" + strings.Repeat("a", 64), "--image reg.example:5000/app:1=host maps reg.example:5000/app:1, not reg.example:5000/app@sha256:" + strings.Repeat("a", 64)},
		{Images{"busybox": HostImage}, "busybox", ""},
		{Images{"alpine": HostImage}, "busybox:1.36", ""},
		{Images{"reg.example/busybox": HostImage}, "busybox:1.36", ""},
		{Images{"busybox": HostImage}, "Busybox:1.36", ""},
	} {
		if got := tt.m.Near(tt.ref); got != tt.want {
			t.Errorf("%v.Near(%q) = %q, want %q", tt.m, tt.ref, got, tt.want)
		}
	}
}

// YAML that is not YAML is refused at the line of the problem, in any
// document.
func TestDecodeSyntaxError(t *testing.T) {
	data := "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n   image: busybox\n"
	if _, err := Decode([]byte(data)); err == nil || err.Error() != "line 9: did not find expected key" {
		t.Errorf("Decode: %v, want line 9's error", err)
	}
}

// A document of another kind, a Deployment say, is refused for its kind
// alone: not for the fields a Pod lacks, nor for what a Pod would need.
func TestPlanOtherKind(t *testing.T) {
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  template:
    spec:
      containers: [{name: nginx, image: nginx}]
`
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: x, command: [/bin/true]}]}\n"
	kind := `kind: "Deployment" of apiVersion "apps/v1": unitrun runs a Pod (apiVersion: v1, kind: Pod)`
	o := Options{Images: Images{"x": "host"}, AllowPrivileged: true}
	refused := func(data string) error {
		plans, err := Plan([]byte(data), o, t.TempDir())
		if err != nil {
			return err
		}
		var errs []error
		for i := range plans {
			errs = append(errs, plans[i].Err())
		}
		return errors.Join(errs...)
	}
	if err := refused(deployment); err == nil || err.Error() != kind {
		t.Errorf("Plan of a Deployment: %v, want %q", err, kind)
	}
	if err := refused(pod + "---\n" + deployment); err == nil || err.Error() != "document 2: "+kind {
		t.Errorf("Plan of a Pod and a Deployment: %v, want %q", err, "document 2: "+kind)
	}
}
