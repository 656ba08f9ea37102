package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
)

// simplePod is a Pod as the API server returns it for the Kubernetes
// docs' pods/simple-pod.yaml, with every default it sets, and a command
// that a host image runs.
const simplePod = `apiVersion: v1
kind: Pod
metadata:
  name: kubesimple
  namespace: default
  labels:
    app: demo
spec:
  restartPolicy: Never
  dnsPolicy: ClusterFirst
  schedulerName: default-scheduler
  enableServiceLinks: true
  preemptionPolicy: PreemptLowerPriority
  priority: 0
  securityContext: {}
  serviceAccountName: default
  terminationGracePeriodSeconds: 30
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
  containers:
  - name: main
    image: busybox
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c"]
    args: ["echo hello $(WHO) from $POD; exit 3"]
    env:
    - name: WHO
      value: world
    - name: POD
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    ports:
    - containerPort: 80
      protocol: TCP
    resources: {}
    terminationMessagePolicy: File
status:
  phase: Pending
`

// A Pod's YAML runs as unitrun-node would run it: its output, its exit
// status and its record are the pod's.
func TestPodRunKubernetesPod(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "kubesimple")
	// The docs' Pod asks for a port on a pod network: hostNetwork gives
	// it the host's, as unitrun-node asks.
	path := manifestFile(t, strings.Replace(simplePod, "  restartPolicy: Never\n", "  restartPolicy: Never\n  hostNetwork: true\n", 1))
	out, errs, code := podCLI(t, dir, "run", "-q", "--image", "busybox=host", path)
	if code != 3 {
		t.Fatalf("pod run of a Pod: exit %d, want its container's 3 (stderr %q)", code, errs)
	}
	if out != "main | hello world from kubesimple\n" {
		t.Errorf("pod run of a Pod printed %q, want the container's line", out)
	}
	v := podStatus(t, dir, "kubesimple")
	if len(v.Apps) != 1 || v.Apps[0].Name != "main" || v.Apps[0].ExitCode == nil || *v.Apps[0].ExitCode != 3 || v.Phase != "Failed" {
		t.Errorf("record of the Pod's pod: %+v; want app main, exit 3, Failed", v)
	}
}

// A Pod that cannot run is refused with exit 2, every field named by its
// Kubernetes path, and nothing is created: not the Pods of a file's
// other documents either.
func TestPodKubernetesRefusals(t *testing.T) {
	dir := t.TempDir()
	good := strings.Replace(simplePod, "    ports:\n    - containerPort: 80\n      protocol: TCP\n", "", 1)
	for _, tt := range []struct {
		name  string
		yaml  string
		flags []string
		want  []string
	}{
		{"unknown field", strings.Replace(good, "    command:", "    comand: [x]\n    command:", 1), []string{"--image", "busybox=host"},
			[]string{`spec.containers[0].comand: not a field of a Kubernetes Pod`}},
		{"refused field", strings.Replace(good, "    command:", "    volumeDevices: [{name: d, devicePath: /dev/xvda}]\n    command:", 1), []string{"--image", "busybox=host"},
			[]string{`spec.containers[0].volumeDevices: not supported: unitrun provides no block volumes`}},
		{"pod network", simplePod, []string{"--image", "busybox=host"},
			[]string{`spec.containers[0].ports[0]: port 80 on a pod network: unitrun has none; set hostNetwork: true`}},
		{"cluster objects", strings.Replace(good, "      value: world\n", "      valueFrom: {configMapKeyRef: {name: cm, key: who}}\n", 1), []string{"--image", "busybox=host"},
			[]string{`spec.containers[0].env[0].valueFrom.configMapKeyRef: a configmap is a cluster's object: it needs unitrun-node`}},
		{"host check", strings.Replace(good, "    command:", "    workingDir: /nonexistent-kube-dir\n    command:", 1), []string{"--image", "busybox=host"},
			[]string{`Pod kubesimple: spec.containers[0].workingDir "/nonexistent-kube-dir": `}},
		{"host check of a second Pod", good + "---\n" + strings.NewReplacer("kubesimple", "kubesecond", "    command:", "    workingDir: /nonexistent-kube-dir\n    command:").Replace(good), []string{"--image", "busybox=host"},
			[]string{`document 2: Pod kubesecond: spec.containers[0].workingDir "/nonexistent-kube-dir": `}},
		{"other kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", nil,
			[]string{`kind: "Deployment" of apiVersion "apps/v1": unitrun runs a Pod (apiVersion: v1, kind: Pod)`}},
		{"second document", good + "---\n" + strings.NewReplacer("kubesimple", "kubesecond", "    command:", "    stdin: true\n    command:").Replace(good), []string{"--image", "busybox=host"},
			[]string{`document 2: Pod kubesecond: spec.containers[0].stdin: stdin and tty are not supported`}},
		{"bad name", strings.Replace(good, "name: kubesimple", "name: Bad_Name", 1), []string{"--image", "busybox=host"},
			[]string{`Pod Bad_Name: metadata.name: name "Bad_Name": must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit`}},
		{"generateName", strings.Replace(good, "  name: kubesimple\n", "  generateName: kubesimple-\n", 1), []string{"--image", "busybox=host"},
			[]string{`Pod with no name: metadata.name: required: metadata.generateName is not supported, the pod is named after metadata.name`}},
		{"env name", strings.Replace(good, "    - name: WHO\n", "    - name: 1BAD\n", 1), []string{"--image", "busybox=host"},
			[]string{`Pod kubesimple: spec.containers[0].env["1BAD"]: must be one or more of a-z, A-Z, 0-9, _, - and ., not starting with a digit`}},
		{"same name", good + "---\n" + good, []string{"--image", "busybox=host"},
			[]string{`document 2: Pod kubesimple: metadata.name: "kubesimple" is the name of document 1's Pod too`}},
	} {
		path := manifestFile(t, tt.yaml)
		for _, args := range [][]string{{"run", "--detach"}, {"create"}} {
			_, errs, code := podCLI(t, dir, append(append(args, tt.flags...), path)...)
			if code != exitUsage {
				t.Errorf("%s: pod %s: exit %d, want 2 (stderr %q)", tt.name, args[0], code, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("%s: pod %s: stderr %q does not say %q", tt.name, args[0], errs, w)
				}
			}
			for _, name := range []string{"kubesimple", "kubesecond"} {
				if left := podLeft(t, dir, name); len(left) > 0 {
					t.Errorf("%s: pod %s left %v", tt.name, args[0], left)
				}
			}
		}
	}
}

// Every problem of a file of Pods found before anything is created
// comes in one error, exit 2, each line after its Pod (and document):
// the refusals of a Pod that cannot be mapped (hostAliases, a bad
// imagePullPolicy), the images of its other containers that cannot be
// had, and another Pod's; nothing is created, not the Pods that could be.
func TestPodKubernetesProblemsTogether(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("UNITRUN_IMAGE_DIR", t.TempDir())
	const missing = `spec.containers[0].image "registry.invalid/none:1": registry.invalid/none:1 is not in the store and the pull policy is Never: `
	refused := "apiVersion: v1\nkind: Pod\nmetadata: {name: refused}\nspec:\n  hostAliases: [{ip: 1.2.3.4, hostnames: [h]}]\n" +
		"  initContainers:\n  - {name: i, image: registry.invalid/none:2, imagePullPolicy: Never}\n" +
		"  containers:\n  - {name: a, image: registry.invalid/none:1, imagePullPolicy: Sometimes}\n  - {name: b, image: registry.invalid/none:3, imagePullPolicy: Never}\n"
	refusedImages := []string{
		`Pod refused: spec.initContainers[0].image "registry.invalid/none:2": registry.invalid/none:2 is not in the store and the pull policy is Never: `,
		`Pod refused: spec.containers[1].image "registry.invalid/none:3": registry.invalid/none:3 is not in the store and the pull policy is Never: `,
	}
	imageless := "apiVersion: v1\nkind: Pod\nmetadata: {name: imageless}\nspec:\n  containers:\n  - {name: a, image: registry.invalid/none:1, imagePullPolicy: Never}\n"
	good := "apiVersion: v1\nkind: Pod\nmetadata: {name: fine}\nspec:\n  hostNetwork: true\n  containers:\n  - {name: a, image: busybox, command: [sleep, '60']}\n"
	hostAliases := "spec.hostAliases: not supported by unitrun pod run, whose apps see the host's /etc/hosts (unitrun-node writes the Pod's own)"
	policy := `spec.containers[0].imagePullPolicy: "Sometimes": must be one of Always, IfNotPresent, Never`
	for _, tt := range []struct {
		name, yaml string
		want       []string // the lines, the first after "FILE: "; one ending in ": " is a prefix
	}{
		{"one Pod", refused, append([]string{"Pod refused: " + hostAliases, "Pod refused: " + policy}, refusedImages...)},
		{"three Pods", good + "---\n" + refused + "---\n" + imageless, []string{
			"document 2: Pod refused: " + hostAliases, "document 2: Pod refused: " + policy,
			"document 2: " + refusedImages[0], "document 2: " + refusedImages[1], "document 3: Pod imageless: " + missing}},
	} {
		file := manifestFile(t, tt.yaml)
		for _, args := range [][]string{{"run", "--detach"}, {"create"}} {
			_, errs, code := podCLI(t, dir, append(append(args, "--image", "busybox=host"), file)...)
			lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(errs, "unitrun: "+file+": "), "\n"), "\n")
			ok := code == exitUsage && len(lines) == len(tt.want)
			for i := 0; ok && i < len(lines); i++ {
				ok = lines[i] == tt.want[i] || strings.HasSuffix(tt.want[i], ": ") && strings.HasPrefix(lines[i], tt.want[i])
			}
			if !ok {
				t.Errorf("%s: pod %s: exit %d, %q; want 2, the lines after %s: %q", tt.name, args[0], code, errs, file, tt.want)
			}
			for _, name := range []string{"fine", "refused", "imageless"} {
				if left := podLeft(t, dir, name); len(left) > 0 {
					t.Errorf("%s: pod %s left %v", tt.name, args[0], left)
				}
			}
		}
	}
}

// A file of two Pods runs two pods; pod run follows one, so it wants
// --detach for two.
func TestPodRunTwoKubernetesPods(t *testing.T) {
	dir := t.TempDir()
	// Both with hostNetwork, for their ports.
	// Each ends only once the test has seen pod run return: pod run
	// --detach of a pod that has ended by then exits with its code.
	gate := filepath.Join(t.TempDir(), "gate")
	first := strings.NewReplacer("  restartPolicy: Never\n", "  restartPolicy: Never\n  hostNetwork: true\n",
		"; exit 3", "; until [ -e "+gate+" ]; do sleep 0.05; done; exit 3").Replace(simplePod)
	second := strings.NewReplacer("kubesimple", "kubesecond", "exit 3", "exit 0").Replace(first)
	path := manifestFile(t, first+"---\n"+second)
	if _, errs, code := podCLI(t, dir, "run", "--image", "busybox=host", path); code != exitUsage || !strings.Contains(errs, "holds 2 Pods: pod run follows one pod's output; run them with --detach") {
		t.Errorf("pod run of two Pods without --detach: exit %d, stderr %q; want 2 asking for --detach", code, errs)
	}
	for _, name := range []string{"kubesimple", "kubesecond"} {
		if left := podLeft(t, dir, name); len(left) > 0 {
			t.Errorf("the refused run left %v", left)
		}
	}
	rmPod(t, dir, "kubesimple")
	rmPod(t, dir, "kubesecond")
	out, errs, code := podCLI(t, dir, "run", "--detach", "--image", "busybox=host", path)
	if code != 0 || out != "kubesimple\nkubesecond\n" {
		t.Fatalf("pod run --detach of two Pods: exit %d, stdout %q, stderr %q; want both names", code, out, errs)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		exit int
	}{{"kubesimple", 3}, {"kubesecond", 0}} {
		// logs -f returns once the pod has ended.
		out, errs, code := podCLI(t, dir, "logs", "-f", tt.name)
		if code != 0 || out != "main | hello world from "+tt.name+"\n" {
			t.Errorf("pod logs -f %s: exit %d, %q, %q", tt.name, code, out, errs)
		}
		v := podStatus(t, dir, tt.name)
		if v.ExitCode == nil || *v.ExitCode != tt.exit {
			t.Errorf("pod %s: %+v, want exit %d", tt.name, v, tt.exit)
		}
	}
}

// A Pod's hostPath and emptyDir volumes are mounted where its containers
// ask, an emptyDir shared by its init container and its container and
// removed with the pod.
func TestPodRunKubernetesVolumes(t *testing.T) {
	dir := t.TempDir()
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "greeting"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rmPod(t, dir, "kubevols")
	path := manifestFile(t, `apiVersion: v1
kind: Pod
metadata: {name: kubevols}
spec:
  restartPolicy: Never
  volumes:
  - name: scratch
    emptyDir: {}
  - name: data
    hostPath: {path: `+host+`}
  initContainers:
  - name: setup
    image: busybox
    command: [/bin/sh, -c, 'echo made by setup > /scratch/sub/note']
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  containers:
  - name: main
    image: busybox
    command: [/bin/sh, -c, 'cat /in/note /data/greeting']
    volumeMounts:
    - {name: scratch, mountPath: /in, subPath: sub, readOnly: true}
    - {name: data, mountPath: /data}
`)
	out, errs, code := podCLI(t, dir, "run", "-q", "--image", "busybox=host", path)
	if code != 0 || out != "main | made by setup\nmain | hello from the host\n" {
		t.Errorf("pod run of a Pod with volumes: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// dependentEnvars is the Kubernetes docs' pods/inject/dependent-envars.yaml,
// unchanged.
const dependentEnvars = `apiVersion: v1
kind: Pod
metadata:
  name: dependent-envars-demo
spec:
  containers:
    - name: dependent-envars-demo
      args:
        - while true; do echo -en '\n'; printf UNCHANGED_REFERENCE=$UNCHANGED_REFERENCE'\n'; printf SERVICE_ADDRESS=$SERVICE_ADDRESS'\n';printf ESCAPED_REFERENCE=$ESCAPED_REFERENCE'\n'; sleep 30; done;
      command:
        - sh
        - -c
      image: busybox:1.28
      env:
        - name: SERVICE_PORT
          value: "80"
        - name: SERVICE_IP
          value: "172.17.0.1"
        - name: UNCHANGED_REFERENCE
          value: "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"
        - name: PROTOCOL
          value: "https"
        - name: SERVICE_ADDRESS
          value: "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"
        - name: ESCAPED_REFERENCE
          value: "$$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"
`

// A Pod of the Kubernetes docs runs unchanged, its variables expanded as
// Kubernetes expands them.
func TestPodRunKubernetesDocsPod(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "dependent-envars-demo")
	path := manifestFile(t, dependentEnvars)
	out, errs, code := podCLI(t, dir, "run", "--detach", "--image", "busybox:1.28=host", path)
	if code != 0 || out != "dependent-envars-demo\n" {
		t.Fatalf("pod run --detach: exit %d, %q, %q", code, out, errs)
	}
	want := "dependent-envars-demo | UNCHANGED_REFERENCE=$(PROTOCOL)://172.17.0.1:80\n" +
		"dependent-envars-demo | SERVICE_ADDRESS=https://172.17.0.1:80\n" +
		"dependent-envars-demo | ESCAPED_REFERENCE=$(PROTOCOL)://172.17.0.1:80\n"
	// The app prints its lines once it runs, then sleeps: wait for them.
	for i := 0; !strings.Contains(out, want); i++ {
		if i == 200 {
			t.Fatalf("pod logs: %q, want %q", out, want)
		}
		time.Sleep(50 * time.Millisecond)
		out, _, _ = podCLI(t, dir, "logs", "dependent-envars-demo")
	}
	if _, errs, code := podCLI(t, dir, "stop", "dependent-envars-demo"); code != 0 {
		t.Errorf("pod stop: exit %d, %q; want 0, the app's SIGTERM a success", code, errs)
	}
}

// pod graph of a file of one Kubernetes Pod draws the graph of the pod
// that pod create makes of it, its images mapped by --image as there (an
// image not mapped is a registry image, which the graph does not pull);
// a file of two Pods is refused with exit 2.
func TestPodGraphKubernetesPod(t *testing.T) {
	dir := t.TempDir()
	path := manifestFile(t, dependentEnvars)
	fromFile, errs, code := podCLI(t, dir, "graph", "--image", "busybox:1.28=host", path)
	if code != 0 || !strings.Contains(fromFile, `unitrun-pod-dependent\\x2denvars\\x2ddemo-dependent\\x2denvars\\x2ddemo.service`) {
		t.Fatalf("pod graph FILE: exit %d, %q, %q", code, fromFile, errs)
	}
	rmPod(t, dir, "dependent-envars-demo")
	if _, errs, code := podCLI(t, dir, "create", "--image", "busybox:1.28=host", path); code != 0 {
		t.Fatalf("pod create: exit %d, %q", code, errs)
	}
	if fromPod, _, _ := podCLI(t, dir, "graph", "dependent-envars-demo"); fromPod != fromFile {
		t.Errorf("pod graph of the Pod's file:\n%s\nof the pod created from it:\n%s", fromFile, fromPod)
	}
	if out, errs, code := podCLI(t, dir, "graph", path); code != 0 || !strings.Contains(out, `unitrun-pod-dependent\\x2denvars\\x2ddemo-dependent\\x2denvars\\x2ddemo.service`) {
		t.Errorf("pod graph of a registry image: exit %d, %q, %q; want the pod's graph", code, out, errs)
	}
	two := manifestFile(t, dependentEnvars+"---\n"+strings.Replace(dependentEnvars, "name: dependent-envars-demo\n", "name: other\n", 1))
	wantErr := "unitrun: " + two + " holds 2 Pods: pod graph draws one pod's graph; give a file of one Pod\n"
	if out, errs, code := podCLI(t, dir, "graph", "--image", "busybox:1.28=host", two); code != exitUsage || out != "" || errs != wantErr {
		t.Errorf("pod graph of two Pods: exit %d, %q, %q; want exit 2, %q", code, out, errs, wantErr)
	}
}

// A Pod's terminationGracePeriodSeconds bounds its containers' stop as
// the kubelet applies it: 0 still gives a container the kubelet's 2 s, so
// one that ends at SIGTERM has exited 0 and the Pod has succeeded (not a
// stop timeout); a Pod that sets none gets the API server's 30 s, not
// systemd's 90 s.
func TestPodRunKubernetesGracePeriod(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "kubegrace")
	rmPod(t, dir, "kubenograce")
	up := filepath.Join(t.TempDir(), "up")
	grace0 := `apiVersion: v1
kind: Pod
metadata: {name: kubegrace}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: busybox
    command: [/bin/sh, -c, "trap 'exit 0' TERM; touch ` + up + `; while :; do sleep 0.1; done"]
`
	if out, errs, code := podCLI(t, dir, "run", "--detach", "--image", "busybox=host", manifestFile(t, grace0)); code != 0 {
		t.Fatalf("pod run --detach: exit %d, %q, %q", code, out, errs)
	}
	waitFile(up)
	if got := showUnit(t, pod.AppUnit("kubegrace", "main"), "TimeoutStopUSec"); got != "TimeoutStopUSec=2s\n" {
		t.Errorf("terminationGracePeriodSeconds 0: the app's unit has %q, want the kubelet's minimum, 2s", got)
	}
	if _, errs, code := podCLI(t, dir, "stop", "kubegrace"); code != 0 {
		t.Errorf("pod stop of a container that exits 0 at SIGTERM: exit %d, %q; want 0", code, errs)
	}
	v := podStatus(t, dir, "kubegrace")
	if len(v.Apps) != 1 || v.Apps[0].ExitCode == nil || *v.Apps[0].ExitCode != 0 || v.Apps[0].Result == "timeout" || v.Phase != "Succeeded" {
		t.Errorf("after pod stop: %+v, apps %+v; want main exited 0 (no timeout), Succeeded", v, v.Apps)
	}
	noGrace := strings.NewReplacer("kubegrace", "kubenograce", "  terminationGracePeriodSeconds: 0\n", "").Replace(grace0)
	if _, errs, code := podCLI(t, dir, "create", "--image", "busybox=host", manifestFile(t, noGrace)); code != 0 {
		t.Fatalf("pod create: exit %d, %q", code, errs)
	}
	if got := showUnit(t, pod.AppUnit("kubenograce", "main"), "TimeoutStopUSec"); got != "TimeoutStopUSec=30s\n" {
		t.Errorf("no terminationGracePeriodSeconds: the app's unit has %q, want the API server's default, 30s", got)
	}
}
