package provider

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod/kube"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

const (
	testNode  = "unitrun-test-node"
	testNS    = "default"
	testImage = "debian"
)

// testConfig is a node config whose state is in a new directory under
// the harness's runtime directory.
func testConfig(t *testing.T) Config {
	return Config{
		NodeName:        testNode,
		Images:          map[string]string{testImage: HostImage},
		AllowPrivileged: true,
		StateDir:        systemdtest.RunDir(t),
		Binary:          systemdtest.Binary(t),
		Poll:            100 * time.Millisecond,
		// The operator's choice that lets TestRestartCount restart fast.
		MinRestartBackoff: 100 * time.Millisecond,
	}
}

// node is a running provider and the pod controller that drives it.
type testNodeRun struct {
	p      *Provider
	cancel context.CancelFunc
	done   chan struct{}
}

// startNode starts a provider of cfg, on a connection of its own to the
// test manager, and a pod controller over client, as virtual-kubelet's own
// node tests wire them. stop stops both; the pods keep running.
func startNode(t *testing.T, cfg Config, client *fake.Clientset) *testNodeRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Client = client
	e := newEngine(systemdtest.Dial(t), cfg.StateDir, cfg.Binary, os.Getenv("UNITRUN_MANAGER"))
	p, err := newProvider(ctx, cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DropReplaced(ctx, client); err != nil {
		t.Fatal(err)
	}
	f := kubeinformers.NewSharedInformerFactory(client, time.Minute)
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient:                 p.PodClient(client.CoreV1()),
		PodInformer:               f.Core().V1().Pods(),
		EventRecorder:             &record.FakeRecorder{},
		Provider:                  p,
		ConfigMapInformer:         f.Core().V1().ConfigMaps(),
		SecretInformer:            f.Core().V1().Secrets(),
		ServiceInformer:           f.Core().V1().Services(),
		SkipDownwardAPIResolution: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	n := &testNodeRun{p: p, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		if err := pc.Run(ctx, 2); err != nil && ctx.Err() == nil {
			t.Errorf("pod controller: %v", err)
		}
	}()
	select {
	case <-pc.Ready():
	case <-n.done:
		t.Fatal("pod controller ended before it was ready")
	case <-time.After(30 * time.Second):
		t.Fatal("pod controller not ready after 30s")
	}
	t.Cleanup(n.stop)
	return n
}

func (n *testNodeRun) stop() {
	n.cancel()
	<-n.done
}

// newPod returns a Pod bound to the test node with containers of the test
// image, each running sh -c with its script.
func newPod(name string, policy corev1.RestartPolicy, init []string, apps ...string) *corev1.Pod {
	grace := int64(5)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-" + name), CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{
			NodeName: testNode, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
		},
	}
	ctr := func(i int, script string, prefix string) corev1.Container {
		return corev1.Container{Name: fmt.Sprintf("%s%d", prefix, i), Image: testImage, Command: []string{"/bin/sh", "-c"}, Args: []string{script}}
	}
	for i, s := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, ctr(i, s, "init"))
	}
	for i, s := range apps {
		p.Spec.Containers = append(p.Spec.Containers, ctr(i, s, "app"))
	}
	return p
}

func create(t *testing.T, client *fake.Clientset, p *corev1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deletePod(t *testing.T, client *fake.Clientset, p *corev1.Pod) {
	t.Helper()
	if err := client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPod waits, up to 90 s, until the Pod's status in the API satisfies
// ok, and returns it.
func waitPod(t *testing.T, client *fake.Clientset, p *corev1.Pod, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var got *corev1.Pod
	for time.Now().Before(deadline) {
		var err error
		got, err = client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ok(got) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s: not %s after 90s; status %+v", p.Name, what, got.Status)
	return nil
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == ph }
}

// waitGone waits until unitrun pod name has no state and no unit loaded
// and the provider has ended its deletion.
func waitGone(t *testing.T, n *testNodeRun, name string) {
	t.Helper()
	for range 300 {
		units, err := n.p.eng.loadedUnits(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if len(units) == 0 && !n.p.eng.exists(name) && !deleting(n.p, name) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	units, _ := n.p.eng.loadedUnits(context.Background(), name)
	t.Fatalf("unitrun pod %s: state exists %v, units loaded %v", name, n.p.eng.exists(name), units)
}

// deleting reports whether p still holds an entry of unitrun pod name:
// its deletion, which stops the pods' parent slices after the pod is gone,
// has not ended. A test that ended before it (and stopped its node, which
// cancels the deletion) left unitrun-pod.slice and unitrun.slice loaded.
func deleting(p *Provider, name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.pods {
		if e.name == name {
			return true
		}
	}
	return false
}

// containerLogs is what GetContainerLogs gives of p's container app0.
func containerLogs(t *testing.T, n *testNodeRun, p *corev1.Pod, opts api.ContainerLogOpts) string {
	t.Helper()
	logs, err := n.p.GetContainerLogs(context.Background(), testNS, p.Name, "app0", opts)
	if err != nil {
		t.Fatalf("logs %+v: %v", opts, err)
	}
	defer logs.Close()
	out, err := io.ReadAll(logs)
	if err != nil {
		t.Fatalf("logs %+v: %v", opts, err)
	}
	return string(out)
}

func wantTerminated(t *testing.T, cs corev1.ContainerStatus, code int32, signal int32, reason string) {
	t.Helper()
	tr := cs.State.Terminated
	if tr == nil {
		t.Errorf("container %s: %+v, want terminated", cs.Name, cs.State)
		return
	}
	if tr.ExitCode != code || tr.Signal != signal || tr.Reason != reason || cs.RestartCount != 0 {
		t.Errorf("container %s: exit code %d, signal %d, reason %s, restarts %d; want %d, %d, %s, 0",
			cs.Name, tr.ExitCode, tr.Signal, tr.Reason, cs.RestartCount, code, signal, reason)
	}
	if tr.StartedAt.IsZero() || tr.FinishedAt.Before(&tr.StartedAt) {
		t.Errorf("container %s: started at %v, finished at %v", cs.Name, tr.StartedAt, tr.FinishedAt)
	}
}

// A Pod whose init container succeeds, one app exits 3 and another runs
// on fails with exit codes 0, 3 and 143 (the app the failure stopped),
// none restarted; its logs are the app's output; after its deletion no
// unit of it is loaded and its state is gone.
func TestPodOutcomes(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("outcomes", corev1.RestartPolicyNever, []string{"exit 0"}, "echo one; echo two; sleep 0.5; exit 3", "exec sleep 600")
	create(t, client, p)
	got := waitPod(t, client, p, "Failed", phase(corev1.PodFailed))
	if len(got.Status.InitContainerStatuses) != 1 || len(got.Status.ContainerStatuses) != 2 {
		t.Fatalf("statuses: %+v", got.Status)
	}
	wantTerminated(t, got.Status.InitContainerStatuses[0], 0, 0, "Completed")
	wantTerminated(t, got.Status.ContainerStatuses[0], 3, 0, "Error")
	wantTerminated(t, got.Status.ContainerStatuses[1], 143, 15, "Error")
	for _, c := range got.Status.Conditions {
		want := corev1.ConditionFalse
		if c.Type == corev1.PodScheduled || c.Type == corev1.PodInitialized {
			want = corev1.ConditionTrue
		}
		if c.Status != want {
			t.Errorf("condition %s: %s, want %s", c.Type, c.Status, want)
		}
	}

	readLogs := func(opts api.ContainerLogOpts) string { return containerLogs(t, n, p, opts) }
	if out := readLogs(api.ContainerLogOpts{Tail: 1}); out != "two\n" {
		t.Errorf("logs with tail 1: %q, want %q", out, "two\n")
	}
	// The pod has ended: follow ends.
	if out := readLogs(api.ContainerLogOpts{Follow: true}); out != "one\ntwo\n" {
		t.Errorf("logs followed: %q, want %q", out, "one\ntwo\n")
	}
	if out := readLogs(api.ContainerLogOpts{SinceTime: time.Now()}); out != "" {
		t.Errorf("logs since now: %q, want none: every line is older", out)
	}
	if out := readLogs(api.ContainerLogOpts{SinceTime: got.CreationTimestamp.Add(-time.Second)}); out != "one\ntwo\n" {
		t.Errorf("logs since before the pod: %q, want every line", out)
	}
	if out := readLogs(api.ContainerLogOpts{LimitBytes: 5}); out != "one\nt" {
		t.Errorf("logs limited to 5 bytes: %q, want %q", out, "one\nt")
	}
	out := readLogs(api.ContainerLogOpts{Timestamps: true, Tail: 1})
	stamp, line, _ := strings.Cut(out, " ")
	if at, err := time.Parse(time.RFC3339Nano, stamp); err != nil || line != "two\n" || at.Before(got.CreationTimestamp.Add(-time.Second)) || at.After(time.Now()) {
		t.Errorf("logs with timestamps, tail 1: %q, want the time it was written (RFC 3339), a space, \"two\"", out)
	}
	if _, err := n.p.GetContainerLogs(context.Background(), testNS, p.Name, "app0", api.ContainerLogOpts{Previous: true}); err == nil || !strings.Contains(err.Error(), "previous") {
		t.Errorf("previous logs of an app that ran once: %v, want a refusal naming previous", err)
	}

	name := podName(p.Namespace, p.Name, string(p.UID))
	deletePod(t, client, p)
	waitGone(t, n, name)
}

// An OnFailure app that fails twice, then runs, has restartCount 2, which
// is systemd's NRestarts of its unit, and its last exit, with that run's
// start, as lastState; its previous logs are the lines of its run before
// this one.
func TestRestartCount(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	p := newPod("flaky", corev1.RestartPolicyOnFailure, nil,
		`n=$(cat `+dir+`/n 2>/dev/null || echo 0); n=$((n+1)); echo $n >`+dir+`/n; echo run $n; [ $n -gt 2 ] && exec sleep 600; exit 4`)
	p.Annotations = map[string]string{AnnotationRestartBackoff: "100ms"}
	create(t, client, p)
	got := waitPod(t, client, p, "running after 2 restarts", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil && cs[0].RestartCount == 2
	})
	cs := got.Status.ContainerStatuses[0]
	name := podName(p.Namespace, p.Name, string(p.UID))
	nr, ok := n.p.eng.nRestarts(context.Background(), name, "app0")
	if !ok || nr != 2 {
		t.Errorf("NRestarts %d (loaded %v), want 2 as restartCount", nr, ok)
	}
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 4 || lt.Reason != "Error" {
		t.Errorf("lastState %+v, want terminated with exit code 4", cs.LastTerminationState)
	} else if run := cs.State.Running; lt.StartedAt.IsZero() || lt.FinishedAt.Before(&lt.StartedAt) || run.StartedAt.Before(&lt.FinishedAt) {
		t.Errorf("lastState ran from %s to %s, this run started at %s: want the last run's start, then its exit, then this run's start",
			lt.StartedAt, lt.FinishedAt, run.StartedAt)
	}
	if !cs.Ready || got.Status.Phase != corev1.PodRunning {
		t.Errorf("ready %v, phase %s; want true, Running", cs.Ready, got.Status.Phase)
	}
	if out := containerLogs(t, n, p, api.ContainerLogOpts{Previous: true}); out != "run 2\n" {
		t.Errorf("previous logs: %q, want %q", out, "run 2\n")
	}
	deletePod(t, client, p)
	waitGone(t, n, name)
}

// A provider stopped while its Pods run, and a new one started on the same
// state, adopts them: it runs none twice, reports how they go on, and
// removes the pod of a Pod deleted while it was down.
func TestRestartAdopts(t *testing.T) {
	client := fake.NewClientset()
	cfg := testConfig(t)
	n := startNode(t, cfg, client)
	dir := t.TempDir()
	keep := newPod("keep", corev1.RestartPolicyNever, nil, `while [ ! -e `+dir+`/go ]; do sleep 0.1; done; exit 7`)
	gone := newPod("gone", corev1.RestartPolicyNever, nil, "exec sleep 600")
	replaced := newPod("replaced", corev1.RestartPolicyNever, nil, "exec sleep 600")
	for _, pod := range []*corev1.Pod{keep, gone, replaced} {
		create(t, client, pod)
	}
	running := func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodRunning && len(cs) == 1 && cs[0].State.Running != nil
	}
	before := waitPod(t, client, keep, "Running", running)
	waitPod(t, client, gone, "Running", running)
	old := waitPod(t, client, replaced, "Running", running)
	n.stop()

	// Deleted while no provider runs; and deleted and created again
	// under its name, as a StatefulSet does, with the same spec.
	deletePod(t, client, gone)
	deletePod(t, client, replaced)
	replaced.UID = "uid-replaced-again"
	create(t, client, replaced)
	n = startNode(t, cfg, client)
	waitGone(t, n, podName(gone.Namespace, gone.Name, string(gone.UID)))
	waitGone(t, n, podName(replaced.Namespace, replaced.Name, string(old.UID)))
	again := waitPod(t, client, replaced, "Running, the new Pod", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return running(p) && !cs[0].State.Running.StartedAt.Equal(&old.Status.ContainerStatuses[0].State.Running.StartedAt)
	})
	names, err := n.p.eng.names()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{podName(keep.Namespace, keep.Name, string(keep.UID)), podName(replaced.Namespace, replaced.Name, string(again.UID))}
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("unitrun pods %v, want %v", names, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	after := waitPod(t, client, keep, "Failed", phase(corev1.PodFailed))
	cs := after.Status.ContainerStatuses[0]
	wantTerminated(t, cs, 7, 0, "Error")
	if started := before.Status.ContainerStatuses[0].State.Running.StartedAt; !cs.State.Terminated.StartedAt.Equal(&started) {
		t.Errorf("the app ran again: started at %v, before the restart at %v", cs.State.Terminated.StartedAt, started)
	}
	for _, pod := range []*corev1.Pod{keep, replaced} {
		deletePod(t, client, pod)
	}
	for _, name := range names {
		waitGone(t, n, name)
	}
}

// A Pod that asks for what the node cannot give fails, its reason naming
// the field, and runs nothing.
func TestRefusesUnsupported(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("refused", corev1.RestartPolicyNever, nil, "exit 0")
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(9000), Scheme: corev1.URISchemeHTTPS}}}
	create(t, client, p)
	got := waitPod(t, client, p, "Failed", phase(corev1.PodFailed))
	if got.Status.Reason != "Unsupported" || !strings.Contains(got.Status.Message, "spec.containers[0].readinessProbe") {
		t.Errorf("reason %q, message %q; want Unsupported naming spec.containers[0].readinessProbe", got.Status.Reason, got.Status.Message)
	}
	if names, err := n.p.eng.names(); err != nil || len(names) != 0 {
		t.Errorf("unitrun pods %v, %v; want none", names, err)
	}
	wantWaitingToStart(t, n, p, "Unsupported")
	refusals := eventsOf(t, client, testNS, "Unsupported")
	if len(refusals) != 1 || refusals[0].Type != corev1.EventTypeWarning || refusals[0].Message != got.Status.Message ||
		refusals[0].InvolvedObject.Name != p.Name || refusals[0].InvolvedObject.UID != p.UID {
		t.Errorf("events %+v; want one Warning Unsupported on the Pod with its status message %q", refusals, got.Status.Message)
	}
	deletePod(t, client, p)
}

// The logs of a container that has not run yet are refused as the kubelet
// refuses them, with a message kubectl shows: the container waits for the
// init container that runs.
func TestLogsWaitingToStart(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("initializing", corev1.RestartPolicyNever, []string{"exec sleep 600"}, "exit 0")
	create(t, client, p)
	waitPod(t, client, p, "its init container running", func(p *corev1.Pod) bool {
		return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Running != nil
	})
	wantWaitingToStart(t, n, p, "PodInitializing")
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// wantWaitingToStart checks that the logs of p's container app0 are
// refused as invalid input (the kubelet API's 400, whose message the API
// server passes on to kubectl) saying it waits to start for reason.
func wantWaitingToStart(t *testing.T, n *testNodeRun, p *corev1.Pod, reason string) {
	t.Helper()
	_, err := n.p.GetContainerLogs(context.Background(), testNS, p.Name, "app0", api.ContainerLogOpts{})
	want := fmt.Sprintf("container \"app0\" in pod %q is waiting to start: %s", p.Name, reason)
	if err == nil || !errdefs.IsInvalidInput(err) || err.Error() != want {
		t.Errorf("logs of a container that has not run: %v (invalid input: %t), want invalid input %q", err, errdefs.IsInvalidInput(err), want)
	}
}

// A numeric runAsUser and runAsGroup without an entry in the host's
// passwd and group run all the same, as the kubelet runs any uid: the
// user with group 0 unless runAsGroup names one, HOME /, no supplementary
// groups.
func TestRunsUidWithoutEntry(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("nouser", corev1.RestartPolicyNever, nil,
		`[ "$(id -u):$(id -g):$(id -G):$HOME" = 4242:0:0:/ ] || exit 5`,
		`[ "$(id -u):$(id -g):$(id -G)" = 4242:4343:4343 ] || exit 6`)
	uid, gid := int64(4242), int64(4343)
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
	p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{RunAsGroup: &gid}
	create(t, client, p)
	got := waitPod(t, client, p, "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	for _, cs := range got.Status.ContainerStatuses {
		wantTerminated(t, cs, 0, 0, "Completed")
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A readiness probe sets the container's ready and the Pod's Ready and
// ContainersReady as its checks go, and never restarts the container.
func TestReadinessProbe(t *testing.T) {
	client := fake.NewSimpleClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	flag := filepath.Join(dir, "ready")
	p := newPod("ready", corev1.RestartPolicyNever, nil, "exec sleep 600")
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/test", "-e", flag}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	create(t, client, p)
	ready := func(want bool) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Running != nil && cs[0].Ready == want &&
				podCondition(p, corev1.PodReady) == want && podCondition(p, corev1.ContainersReady) == want
		}
	}
	waitPod(t, client, p, "running, not ready", ready(false))
	wrote := metav1.Now()
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, client, p, "ready", ready(true))
	// Ready since the probe passed, after the flag was written, not
	// since the container started.
	for _, c := range got.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && c.LastTransitionTime.Before(&wrote) {
			t.Errorf("%s since %v, before the readiness probe could pass (%v)", c.Type, c.LastTransitionTime, wrote)
		}
	}
	os.Remove(flag)
	got = waitPod(t, client, p, "not ready again", ready(false))
	if rc := got.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Errorf("restartCount %d, want 0: a readiness probe restarts nothing", rc)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A sidecar (an init container with restartPolicy Always) runs beside the
// app container: running while it runs, stopped after it ends; the Pod's
// phase is the app's (Succeeded), not the sidecar's. The app starts once
// the sidecar's command runs, as in Kubernetes without a startup probe,
// and waits for the sidecar's file itself.
func TestSidecarContainer(t *testing.T) {
	client := fake.NewSimpleClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	side := filepath.Join(dir, "side")
	p := newPod("sidecar", corev1.RestartPolicyNever, []string{"touch " + side + "; exec sleep 600"},
		"for i in $(seq 300); do test -e "+side+" && break; sleep 0.1; done; test -e "+side+" || exit 9; sleep 2")
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers[0].RestartPolicy = &always
	create(t, client, p)
	waitPod(t, client, p, "sidecar and app running, pod initialized", func(p *corev1.Pod) bool {
		is, cs := p.Status.InitContainerStatuses, p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodInitialized) &&
			len(is) == 1 && is[0].State.Running != nil && len(cs) == 1 && cs[0].State.Running != nil
	})
	got := waitPod(t, client, p, "succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	is, cs := got.Status.InitContainerStatuses, got.Status.ContainerStatuses
	app, sc := cs[0].State.Terminated, is[0].State.Terminated
	switch {
	case app == nil || app.ExitCode != 0:
		t.Errorf("app: %+v, want terminated with exit code 0", cs[0].State)
	case sc == nil || sc.Signal != int32(syscall.SIGTERM):
		t.Errorf("sidecar: %+v, want terminated by SIGTERM once the app ended", is[0].State)
	case sc.FinishedAt.Before(&app.FinishedAt):
		t.Errorf("sidecar ran %s to %s, app %s to %s: want the sidecar stopped after the app",
			sc.StartedAt, sc.FinishedAt, app.StartedAt, app.FinishedAt)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// podCondition reports whether p's condition t is True.
func podCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// A container's environment is what the Pod says plus what the kubelet
// adds: the kubernetes Service's variables, those of the Services of the
// Pod's namespace (enableServiceLinks), HOSTNAME, the node's address as
// status.podIP and status.hostIP; nothing of the manager's. The Pod's
// hostIP and podIP are the node's address.
func TestContainerEnvironment(t *testing.T) {
	client := fake.NewClientset()
	svc := func(ns, name, ip string, ports ...corev1.ServicePort) {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
		if _, err := client.CoreV1().Services(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
	svc("team", "foo-service", "10.96.0.9", corev1.ServicePort{Port: 8080}, corev1.ServicePort{Name: "udp-dns", Port: 53, Protocol: corev1.ProtocolUDP})
	svc("team", "headless", corev1.ClusterIPNone, corev1.ServicePort{Port: 80})
	svc("other", "bar", "10.96.0.10", corev1.ServicePort{Port: 80})
	cfg := testConfig(t)
	cfg.Address, cfg.Client = "192.0.2.7", client
	n := startNode(t, cfg, client)

	run := func(name string, links bool) map[string]string {
		p := newPod(name, corev1.RestartPolicyNever, nil, "env -0")
		p.Namespace = "team"
		p.Spec.EnableServiceLinks = &links
		p.Spec.Containers[0].Env = []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "API", Value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
		}
		create(t, client, p)
		got := waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
		if got.Status.HostIP != cfg.Address || got.Status.PodIP != cfg.Address || len(got.Status.PodIPs) != 1 || len(got.Status.HostIPs) != 1 {
			t.Errorf("pod %s: hostIP %q %v, podIP %q %v; want %s", name, got.Status.HostIP, got.Status.HostIPs, got.Status.PodIP, got.Status.PodIPs, cfg.Address)
		}
		data, err := os.ReadFile(n.p.eng.logFile(podName(p.Namespace, p.Name, string(p.UID)), "app0"))
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
		return env
	}
	host, _ := os.Hostname()
	common := map[string]string{
		"POD_IP": "192.0.2.7", "HOST_IP": "192.0.2.7", "API": "10.96.0.1:443", "HOSTNAME": host,
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
	}
	links := map[string]string{
		"FOO_SERVICE_SERVICE_HOST": "10.96.0.9", "FOO_SERVICE_SERVICE_PORT": "8080", "FOO_SERVICE_SERVICE_PORT_UDP_DNS": "53",
		"FOO_SERVICE_PORT": "tcp://10.96.0.9:8080", "FOO_SERVICE_PORT_8080_TCP": "tcp://10.96.0.9:8080", "FOO_SERVICE_PORT_53_UDP": "udp://10.96.0.9:53",
		"FOO_SERVICE_PORT_53_UDP_PROTO": "udp", "FOO_SERVICE_PORT_53_UDP_ADDR": "10.96.0.9",
	}
	for _, tc := range []struct {
		name  string
		links bool
	}{{"env-links", true}, {"env-nolinks", false}} {
		env := run(tc.name, tc.links)
		want := maps.Clone(common)
		if tc.links {
			maps.Copy(want, links)
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s: $%s = %q, want %q", tc.name, k, env[k], v)
			}
		}
		for k := range env {
			switch {
			case strings.HasPrefix(k, "FOO_SERVICE_") && !tc.links, strings.HasPrefix(k, "BAR_"), strings.HasPrefix(k, "HEADLESS_"):
				t.Errorf("%s: $%s is set: the Service is not the Pod's to see", tc.name, k)
			case slices.Contains([]string{"INVOCATION_ID", "MANAGERPID", "XDG_RUNTIME_DIR", "SYSTEMD_UNIT_PATH", "SYSTEMD_EXEC_PID"}, k):
				t.Errorf("%s: $%s is set: it is the manager's", tc.name, k)
			}
		}
	}
}

// A running Pod given an activeDeadlineSeconds (virtual-kubelet hands the
// changed Pod to UpdatePod) fails once it has been active that long, as
// the kubelet fails it: phase Failed, reason DeadlineExceeded, its
// container stopped.
func TestActiveDeadline(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("deadline", corev1.RestartPolicyAlways, nil, "exec sleep 600")
	create(t, client, p)
	got := waitPod(t, client, p, "Running", phase(corev1.PodRunning))
	deadline := int64(1)
	got.Spec.ActiveDeadlineSeconds = &deadline
	if err := n.p.UpdatePod(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	got = waitPod(t, client, p, "Failed with its container ended", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodFailed && len(cs) == 1 && cs[0].State.Terminated != nil
	})
	if got.Status.Reason != "DeadlineExceeded" {
		t.Errorf("reason %q, message %q; want DeadlineExceeded", got.Status.Reason, got.Status.Message)
	}
	if tr := got.Status.ContainerStatuses[0].State.Terminated; tr.Signal != int32(syscall.SIGTERM) {
		t.Errorf("container %+v, want stopped by SIGTERM", tr)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A container's termination message is what it wrote to its
// terminationMessagePath (here a non-root user's, at a path of /dev that
// the host does not have), or under FallbackToLogsOnError the tail of the
// log of a failed container, as the kubelet reports them.
func TestTerminationMessage(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	const path = "/dev/termination-unitrun-custom-log"
	t.Cleanup(func() { os.Remove(path) }) // the mount point systemd made
	p := newPod("lastword", corev1.RestartPolicyNever, nil, "echo -n DONE > "+path, "sleep 1; seq 100; exit 1")
	nobody := int64(65534)
	p.Spec.Containers[0].TerminationMessagePath = path
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &nobody}
	p.Spec.Containers[1].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	create(t, client, p)
	got := waitPod(t, client, p, "Failed", phase(corev1.PodFailed))
	var want strings.Builder
	for i := 21; i <= 100; i++ {
		fmt.Fprintln(&want, i)
	}
	for i, msg := range []string{"DONE", want.String()} {
		cs := got.Status.ContainerStatuses[i]
		if tr := cs.State.Terminated; tr == nil || tr.Message != msg {
			t.Errorf("container %s: %+v, want terminated with message %q", cs.Name, cs.State, msg)
		}
	}
	if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
		t.Errorf("the host's %s holds %q", path, data)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A root container that is not privileged holds the container runtime's
// default capabilities (no NET_ADMIN), less capabilities.drop, plus
// capabilities.add; a privileged one holds root's.
func TestCapabilities(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	show := "grep '^CapEff' /proc/self/status"
	p := newPod("caps", corev1.RestartPolicyNever, nil, show, show, show, show)
	no := false
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &no}
	p.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
		Drop: []corev1.Capability{"NET_RAW", "CAP_KILL"}, Add: []corev1.Capability{"NET_ADMIN"}}}
	p.Spec.Containers[2].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
		Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"net_bind_service"}}}
	yes := true
	p.Spec.Containers[3].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	create(t, client, p)
	waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
	mask := func(names ...string) uint64 {
		var m uint64
		for _, n := range names {
			m |= 1 << slices.Index(capabilityNames, n)
		}
		return m
	}
	def := mask(kube.DefaultCapabilities...)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	_, eff, _ := strings.Cut(string(status), "CapEff:\t")
	root, _ := strconv.ParseUint(eff[:16], 16, 64)
	name := podName(p.Namespace, p.Name, string(p.UID))
	for i, want := range []uint64{def, def&^mask("NET_RAW", "KILL") | mask("NET_ADMIN"), mask("NET_BIND_SERVICE"), root} {
		app := fmt.Sprintf("app%d", i)
		data, err := os.ReadFile(n.p.eng.logFile(name, app))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("CapEff:\t%016x\n", want); string(data) != got {
			t.Errorf("container %s: %q, want %q", app, data, got)
		}
	}
	deletePod(t, client, p)
	waitGone(t, n, name)
}

// A container whose name has 55 characters, a valid DNS label, runs and
// reports its exit under that name.
func TestLongContainerName(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("long-name", corev1.RestartPolicyNever, nil, "exit 0")
	long := strings.Repeat("container-", 5) + "named"
	p.Spec.Containers[0].Name = long
	create(t, client, p)
	got := waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
	if cs := got.Status.ContainerStatuses; len(cs) != 1 || cs[0].Name != long {
		t.Fatalf("container statuses %+v, want one of %s", cs, long)
	}
	wantTerminated(t, got.Status.ContainerStatuses[0], 0, 0, "Completed")
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// Commands and exec probes by name run, looked up in the container's PATH,
// and so do args without a command on an image mapped to host, as the
// Kubernetes docs' Pods give them (args: [/bin/sh, -c, ...]); a command
// found nowhere ends its container with 127, reason StartError and a
// message that says it was not found in $PATH.
func TestCommandByName(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	flag := filepath.Join(t.TempDir(), "health")
	if err := os.WriteFile(flag, []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newPod("by-name", corev1.RestartPolicyNever, nil, "exec sleep 600")
	p.Spec.Containers[0].Command = []string{"sh", "-c"}
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", flag}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	missing := newPod("not-found", corev1.RestartPolicyNever, nil, "")
	missing.Spec.Containers[0].Command, missing.Spec.Containers[0].Args = []string{"no-such-command-unitrun"}, nil
	argsOnly := newPod("args-only", corev1.RestartPolicyNever, nil, "")
	argsOnly.Spec.Containers[0].Command, argsOnly.Spec.Containers[0].Args = nil, []string{"sh", "-c", "echo from args"}
	create(t, client, p)
	create(t, client, missing)
	create(t, client, argsOnly)
	waitPod(t, client, p, "ready", func(p *corev1.Pod) bool { return podCondition(p, corev1.PodReady) })
	wantTerminated(t, waitPod(t, client, argsOnly, "Succeeded", phase(corev1.PodSucceeded)).Status.ContainerStatuses[0], 0, 0, "Completed")
	if out := containerLogs(t, n, argsOnly, api.ContainerLogOpts{}); out != "from args\n" {
		t.Errorf("logs of the args-only container: %q, want %q", out, "from args\n")
	}
	got := waitPod(t, client, missing, "Failed", phase(corev1.PodFailed))
	cs := got.Status.ContainerStatuses[0]
	wantTerminated(t, cs, 127, 0, "StartError")
	if tr := cs.State.Terminated; tr != nil && !strings.Contains(tr.Message, "executable file not found in $PATH") {
		t.Errorf("message %q, want it to say the command is not in $PATH", tr.Message)
	}
	for _, pod := range []*corev1.Pod{p, missing, argsOnly} {
		deletePod(t, client, pod)
		waitGone(t, n, podName(pod.Namespace, pod.Name, string(pod.UID)))
	}
}

// A deleted Pod whose containers end on SIGTERM is removed from the API
// as soon as they have ended, as the kubelet removes it, not at the end
// of its grace period (here 600 s, after which virtual-kubelet would
// remove it).
func TestDeleteEndsWithContainers(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("graceful", corev1.RestartPolicyAlways, nil, "exec sleep 600")
	grace := int64(600)
	p.Spec.TerminationGracePeriodSeconds = &grace
	create(t, client, p)
	got := waitPod(t, client, p, "Running", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Running != nil
	})
	deleteGracefully(t, client, got, grace)
	waitRemoved(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// deleteGracefully does what the API server does on a delete of Pod p
// with a grace period of grace seconds: the Pod stays, marked.
func deleteGracefully(t *testing.T, client *fake.Clientset, p *corev1.Pod, grace int64) {
	t.Helper()
	now := metav1.Now()
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := client.CoreV1().Pods(p.Namespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRemoved waits, up to 90 s, until Pod p is gone from the API.
func waitRemoved(t *testing.T, client *fake.Clientset, p *corev1.Pod) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still in the API 90s after its deletion: %v", p.Name, err)
		}
	}
}

// A deletion kills what is left of the containers at the deletion's grace
// period, else the Pod's, never before the kubelet's minimum of 2 s.
func TestGrace(t *testing.T) {
	sec := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		deletion, spec *int64
		want           time.Duration
	}{
		{sec(3), sec(30), 3 * time.Second},
		{nil, sec(30), 30 * time.Second},
		{sec(0), sec(30), 2 * time.Second},
		{nil, nil, 0},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionGracePeriodSeconds: c.deletion}}
		e := &entry{pod: &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: c.spec}}}
		if got := grace(pod, e); got != c.want {
			t.Errorf("grace(deletion %v, spec %v) = %v, want %v", c.deletion, c.spec, got, c.want)
		}
	}
}

// A Pod whose sidecar never passes its startup probe does not hold up the
// others: the provider starts a pod and returns, as the kubelet does, so
// that the pod controller's workers (two here) are free for the next Pod.
// Two such Pods, then one that runs true: it succeeds while they wait.
func TestSidecarNeverStartedDoesNotBlock(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	always := corev1.ContainerRestartPolicyAlways
	var stuck []*corev1.Pod
	for _, name := range []string{"stuck-a", "stuck-b"} {
		p := newPod(name, corev1.RestartPolicyNever, []string{"exec sleep 600"}, "true")
		p.Spec.InitContainers[0].RestartPolicy = &always
		p.Spec.InitContainers[0].StartupProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/false"}}},
			PeriodSeconds:    1,
			FailureThreshold: 100000,
		}
		create(t, client, p)
		stuck = append(stuck, p)
	}
	for _, p := range stuck {
		waitPod(t, client, p, "sidecar running, pod not initialized", func(p *corev1.Pod) bool {
			is := p.Status.InitContainerStatuses
			return len(is) == 1 && is[0].State.Running != nil && !podCondition(p, corev1.PodInitialized)
		})
	}
	next := newPod("next", corev1.RestartPolicyNever, nil, "true")
	create(t, client, next)
	waitPod(t, client, next, "succeeded", phase(corev1.PodSucceeded))
	for _, p := range append(stuck, next) {
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	}
}

// A Pod's status is sent as soon as its unitrun pod's records change,
// not at the next poll: with a poll of an hour the Pod is seen Running
// with its container running, then Failed with the container's exit code.
func TestStatusSentOnRecordChange(t *testing.T) {
	client := fake.NewClientset()
	cfg := testConfig(t)
	cfg.Poll = time.Hour
	n := startNode(t, cfg, client)
	p := newPod("records", corev1.RestartPolicyNever, nil, "sleep 1; exit 3")
	create(t, client, p)
	waitPod(t, client, p, "Running with its container running", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	got := waitPod(t, client, p, "Failed", phase(corev1.PodFailed))
	wantTerminated(t, got.Status.ContainerStatuses[0], 3, 0, "Error")
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A workingDir that does not exist is made, as a container runtime makes
// it, and the container runs in it.
func TestWorkingDirMade(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := filepath.Join(t.TempDir(), "made", "deeper")
	p := newPod("workdir", corev1.RestartPolicyNever, nil, `[ "$(pwd)" = `+dir+` ] || exit 5`)
	p.Spec.Containers[0].WorkingDir = dir
	create(t, client, p)
	got := waitPod(t, client, p, "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded; status %+v", got.Status.Phase, got.Status)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("workingDir: %v, %v; want a directory of mode 0755", fi, err)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}
