package provider

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/unitrun/unitrun/internal/systemdtest"
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
		PodClient:                 client.CoreV1(),
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

// waitGone waits until unitrun pod name has no state and no unit loaded.
func waitGone(t *testing.T, n *testNodeRun, name string) {
	t.Helper()
	for range 300 {
		units, err := n.p.eng.loadedUnits(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if len(units) == 0 && !n.p.eng.exists(name) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	units, _ := n.p.eng.loadedUnits(context.Background(), name)
	t.Fatalf("unitrun pod %s: state exists %v, units loaded %v", name, n.p.eng.exists(name), units)
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

	logs, err := n.p.GetContainerLogs(context.Background(), testNS, p.Name, "app0", api.ContainerLogOpts{Tail: 1})
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(logs)
	logs.Close()
	if err != nil || string(out) != "two\n" {
		t.Errorf("logs with tail 1: %q, %v; want %q", out, err, "two\n")
	}
	logs, err = n.p.GetContainerLogs(context.Background(), testNS, p.Name, "app0", api.ContainerLogOpts{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err = io.ReadAll(logs) // the pod has ended: follow ends
	logs.Close()
	if err != nil || string(out) != "one\ntwo\n" {
		t.Errorf("logs followed: %q, %v; want %q", out, err, "one\ntwo\n")
	}
	if _, err := n.p.GetContainerLogs(context.Background(), testNS, p.Name, "app0", api.ContainerLogOpts{SinceTime: time.Now()}); err == nil || !strings.Contains(err.Error(), "since") {
		t.Errorf("logs since now: %v, want a refusal naming since", err)
	}

	name := podName(p.Namespace, p.Name, string(p.UID))
	deletePod(t, client, p)
	waitGone(t, n, name)
}

// An OnFailure app that fails twice, then runs, has restartCount 2, which
// is systemd's NRestarts of its unit, and its last exit, with that run's
// start, as lastState.
func TestRestartCount(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	p := newPod("flaky", corev1.RestartPolicyOnFailure, nil,
		`n=$(cat `+dir+`/n 2>/dev/null || echo 0); n=$((n+1)); echo $n >`+dir+`/n; [ $n -gt 2 ] && exec sleep 600; exit 4`)
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
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	create(t, client, p)
	got := waitPod(t, client, p, "Failed", phase(corev1.PodFailed))
	if got.Status.Reason != "Unsupported" || !strings.Contains(got.Status.Message, "spec.containers[0].readinessProbe") {
		t.Errorf("reason %q, message %q; want Unsupported naming spec.containers[0].readinessProbe", got.Status.Reason, got.Status.Message)
	}
	if names, err := n.p.eng.names(); err != nil || len(names) != 0 {
		t.Errorf("unitrun pods %v, %v; want none", names, err)
	}
	deletePod(t, client, p)
}

// A Pod whose user does not exist on the host is refused by unitrun's own
// checks, named by the container's path.
func TestRefusesUnknownUser(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("nouser", corev1.RestartPolicyNever, []string{"exit 0"}, "exit 0")
	uid := int64(4242)
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &uid}
	create(t, client, p)
	got := waitPod(t, client, p, "Failed", phase(corev1.PodFailed))
	if !strings.Contains(got.Status.Message, "spec.containers[0].user") {
		t.Errorf("message %q; want it to name spec.containers[0].user", got.Status.Message)
	}
	if names, _ := n.p.eng.names(); len(names) != 0 {
		t.Errorf("unitrun pods %v; want none", names)
	}
	deletePod(t, client, p)
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
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, p, "ready", ready(true))
	os.Remove(flag)
	got := waitPod(t, client, p, "not ready again", ready(false))
	if rc := got.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Errorf("restartCount %d, want 0: a readiness probe restarts nothing", rc)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// A sidecar (an init container with restartPolicy Always) runs beside the
// app container: running while it runs, stopped after it ends; the Pod's
// phase is the app's (Succeeded), not the sidecar's. The app waits for the
// sidecar's file: the app's unit starts after the sidecar's, but, as in
// Kubernetes without a startup probe, not after any line of the sidecar's
// command has run.
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
