package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The ported cases mostly wait on the node (probes' delays, restarts), so
// they all run at once unless -parallel says otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", "64")
	}
	os.Exit(m.Run())
}

// A ported case is one It(...) of Kubernetes' node end-to-end tests
// (test/e2e/common/node, test/e2e_node), its Pods as there and the
// kubelet's expectations checked through kubectl, with three
// substitutions: every image is debian, which the node maps to the host;
// an image's entrypoint, which the host has not, becomes the command that
// behaves the same (pause: /bin/sleep infinity); and a file a case writes
// in /tmp, which is the host's, is named after its Pod, since the cases
// run at once.
type ported struct {
	name string // the subtest's
	file string // the file it comes from, under test/e2e/common/node unless it says
	it   string // the It(...) text
	run  func(k *kcase)
}

// ported runs every ported case, each in a namespace of its own; the
// known wrong ones too if UNITRUN_E2E_RUN_KNOWN_WRONG is set.
func (c *cluster) ported(t *testing.T) {
	for i, p := range portedCases {
		t.Run(p.name, func(t *testing.T) {
			if finding, ok := knownWrong[p.name]; ok && os.Getenv("UNITRUN_E2E_RUN_KNOWN_WRONG") == "" {
				t.Skipf("known wrong: %s (%s: %s)", finding, p.file, p.it)
			}
			t.Parallel()
			k := &kcase{c: c, t: t, ns: fmt.Sprintf("ported-%02d", i)}
			if err := c.namespace(k.ns); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c.kubectl("delete", "pods", "--all", "-n", k.ns, "--wait=false")
				if t.Failed() {
					t.Logf("unitrun-node's output about %s:\n%s", k.ns, c.nodeLogOf(k.ns))
				}
			})
			t.Logf("%s: %s", p.file, p.it)
			p.run(k)
		})
	}
}

// nodeLogOf returns the lines of unitrun-node's output about the Pods of
// namespace ns, by their names or their unitrun pods': the whole node's
// last output, which a failed test prints, holds the other cases' lines
// mostly, as the cases run at once.
func (c *cluster) nodeLogOf(ns string) string {
	data, _ := os.ReadFile(c.path("unitrun-node.log"))
	lines := slices.Collect(strings.Lines(string(data)))
	names := []string{" pod=" + ns + "/"}
	for _, line := range lines {
		if m := unitrunPod.FindStringSubmatch(line); m != nil && strings.Contains(line, names[0]) {
			names = append(names, m[0])
		}
	}
	var b strings.Builder
	for _, line := range lines {
		if slices.ContainsFunc(names, func(n string) bool { return strings.Contains(line, n) }) {
			b.WriteString(line)
		}
	}
	return b.String()
}

var unitrunPod = regexp.MustCompile(` unitrun_pod=\S+`)

// kcase is one ported case's view of the cluster: its namespace.
type kcase struct {
	c  *cluster
	t  *testing.T
	ns string
}

type k8sPod struct {
	Metadata struct{ DeletionTimestamp string }
	Status   struct {
		Phase, Reason, Message, HostIP, PodIP string
		Conditions                            []struct{ Type, Status, Reason, Message string }
		InitContainerStatuses                 []k8sContainer
		ContainerStatuses                     []k8sContainer
	}
}

type k8sContainer struct {
	Name             string
	Ready            bool
	RestartCount     int
	State, LastState struct {
		Waiting    *struct{ Reason, Message string }
		Running    *struct{ StartedAt string }
		Terminated *struct {
			ExitCode                               int
			Reason, Message, StartedAt, FinishedAt string
		}
	}
}

func (p *k8sPod) condition(typ string) (status, reason, message string) {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status, c.Reason, c.Message
		}
	}
	return "", "", ""
}

func (p *k8sPod) ready() bool {
	s, _, _ := p.condition("Ready")
	return s == "True"
}

func (p *k8sPod) String() string {
	b, _ := json.Marshal(p.Status)
	return string(b)
}

func (k *kcase) kubectl(args ...string) string {
	k.t.Helper()
	out, err := k.c.kubectl(append([]string{"-n", k.ns}, args...)...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

// create creates the objects of yaml in the case's namespace.
func (k *kcase) create(yaml string) {
	k.t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", k.c.kubeconfig, "-n", k.ns, "create", "-f", "-")
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		k.t.Fatalf("kubectl create: %v\n%s\n%s", err, out, yaml)
	}
}

// get returns Pod name as `kubectl get pod NAME -o json` prints it, read
// from the API server in this process ([cluster.getRaw]).
func (k *kcase) get(name string) *k8sPod {
	k.t.Helper()
	data, err := k.c.getRaw("/api/v1/namespaces/" + k.ns + "/pods/" + name)
	if err != nil {
		k.t.Fatal(err)
	}
	var p k8sPod
	if err := json.Unmarshal(data, &p); err != nil {
		k.t.Fatal(err)
	}
	return &p
}

// waitFor polls Pod name until ok says it is done, and returns it; an
// error from ok fails the case at once, as a failed watch condition does.
func (k *kcase) waitFor(name string, timeout time.Duration, what string, ok func(*k8sPod) (bool, error)) *k8sPod {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p := k.get(name)
		done, err := ok(p)
		if err != nil {
			k.t.Fatalf("pod %s: %v; status %s", name, err, p)
		}
		if done {
			return p
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("waited %s for pod %s %s; status %s", timeout, name, what, p)
		}
		time.Sleep(2 * time.Second)
	}
}

// podStartTimeout is the e2e framework's PodStartTimeout.
const podStartTimeout = 5 * time.Minute

func (k *kcase) waitPhase(name, phase string) *k8sPod {
	k.t.Helper()
	return k.waitFor(name, podStartTimeout, "to be "+phase, func(p *k8sPod) (bool, error) {
		return p.Status.Phase == phase, nil
	})
}

// waitEnded waits for Pod name to succeed or fail.
func (k *kcase) waitEnded(name string) *k8sPod {
	k.t.Helper()
	return k.waitFor(name, podStartTimeout, "to end", func(p *k8sPod) (bool, error) {
		return p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed", nil
	})
}

// refused checks that the node refused Pod name, naming each of fields
// with its rule, and that kubectl logs of it says, as of a kubelet's Pod
// whose container has not started, that its container waits to start.
func (k *kcase) refused(name string, fields ...string) {
	k.t.Helper()
	p := k.waitEnded(name)
	if p.Status.Phase != "Failed" || p.Status.Reason != "Unsupported" {
		k.t.Fatalf("pod %s: phase %s reason %s, want Failed, Unsupported; status %s", name, p.Status.Phase, p.Status.Reason, p)
	}
	for _, f := range fields {
		if !strings.Contains(p.Status.Message, f) {
			k.t.Errorf("pod %s: refusal %q does not say %q", name, p.Status.Message, f)
		}
	}
	want := fmt.Sprintf("in pod %q is waiting to start: Unsupported", name)
	if _, err := k.c.kubectl("-n", k.ns, "logs", name); err == nil || !strings.Contains(err.Error(), want) {
		k.t.Errorf("kubectl logs %s: %v; want an error saying %s", name, err, want)
	}
}

// logsOf is kubectl logs of the container, with its extra arguments.
func (k *kcase) logsOf(name, container string, args ...string) string {
	k.t.Helper()
	return k.kubectl(append([]string{"logs", name, "-c", container}, args...)...)
}

// expectOutput is the framework's TestContainerOutput: the Pod succeeds
// and the container's log matches every pattern.
func (k *kcase) expectOutput(name, container string, patterns ...string) {
	k.t.Helper()
	if p := k.waitEnded(name); p.Status.Phase != "Succeeded" {
		k.t.Fatalf("pod %s %s, want Succeeded; status %s", name, p.Status.Phase, p)
	}
	out := k.logsOf(name, container)
	for _, re := range patterns {
		if !regexp.MustCompile(re).MatchString(out) {
			k.t.Errorf("pod %s: log %q does not match %q", name, out, re)
		}
	}
}

// livenessTest is the framework's RunLivenessTest (for a sidecar,
// RunSidecarLivenessTest): once its container (its sidecar) no longer
// waits (it runs or has terminated), its restartCount is watched until it
// has restarted want times, or, for want 0, for the whole observation,
// and never goes down.
func (k *kcase) livenessTest(name string, sidecar bool, want int, observe time.Duration) {
	k.t.Helper()
	statuses := func(p *k8sPod) []k8sContainer {
		if sidecar {
			return p.Status.InitContainerStatuses
		}
		return p.Status.ContainerStatuses
	}
	p := k.waitFor(name, podStartTimeout, "its container not to wait", func(p *k8sPod) (bool, error) {
		cs := statuses(p)
		return len(cs) > 0 && (cs[0].State.Running != nil || cs[0].State.Terminated != nil), nil
	})
	if len(statuses(p)) != 1 {
		k.t.Fatalf("pod %s: %d statuses of the probed container, want 1; status %s", name, len(statuses(p)), p)
	}
	initial := statuses(p)[0].RestartCount
	last := initial
	deadline := time.Now().Add(observe + time.Duration(initial*10)*time.Second)
	for time.Now().Before(deadline) {
		p = k.get(name)
		n := statuses(p)[0].RestartCount
		if n < last {
			k.t.Fatalf("pod %s: restartCount went from %d to %d: it should only grow", name, last, n)
		}
		last = n
		if want > 0 && n-initial >= want {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if got := last - initial; (want == 0 && got > 0) || (want > 0 && got < want) {
		k.t.Fatalf("pod %s: %d restarts in %s, want %d; status %s", name, got, observe, want, p)
	}
	// Under restartPolicy Always the Pod runs on: one that failed
	// (refused, say) restarts no more either. A Pod whose sidecar has not
	// passed its startup probe is Pending, as the kubelet has it.
	if p.Status.Phase != "Running" && (!sidecar || p.Status.Phase != "Pending") {
		k.t.Fatalf("pod %s %s, want Running; status %s", name, p.Status.Phase, p)
	}
}

// neverReady is runReadinessFailTest's Consistently: the Pod is not ready
// at any look for d.
func (k *kcase) neverReady(name string, d time.Duration) {
	k.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(2 * time.Second) {
		if p := k.get(name); p.ready() {
			k.t.Fatalf("pod %s ready; status %s", name, p)
		}
	}
}

// observe is how long a case that expects nothing to happen watches: the
// framework's defaultObservationTimeout is 4 minutes, shortened here so
// that TestEndToEnd stays within its time.
const observe = 2 * time.Minute

// pod is a Pod manifest named name with labels (a YAML flow map, or
// empty), bound to the node and tolerating its taint, with spec (YAML at
// column 0) as its spec.
func pod(name, labels, spec string) string {
	if labels == "" {
		labels = "{}"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: %s
spec:
  nodeName: %s
  tolerations:
  - {key: virtual-kubelet.io/provider, operator: Exists, effect: NoSchedule}
  %s
`, name, labels, nodeName, strings.ReplaceAll(strings.TrimSpace(spec), "\n", "\n  "))
}

// kubectlRun runs kubectl with args in the case's namespace and in on its
// stdin, and returns its stdout, stderr and exit status.
func (k *kcase) kubectlRun(in string, args ...string) (string, string, int) {
	k.t.Helper()
	return k.runIn(in, "kubectl", append([]string{"--kubeconfig", k.c.kubeconfig, "-n", k.ns}, args...)...)
}

// runIn runs name with args and in on its stdin, and returns its stdout,
// stderr and exit status.
func (k *kcase) runIn(in, name string, args ...string) (string, string, int) {
	k.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(in)
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		k.t.Fatal(err)
	}
	return out.String(), errs.String(), cmd.ProcessState.ExitCode()
}
