package provider

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Under restartPolicy Always (and OnFailure, which the node translates
// alike) a failed init container runs
// again, with the back-off, counted in its restartCount, while the Pod
// stays Pending, not Initialized, and its containers wait, as the kubelet
// retries init containers (init_container.go: "should not start app
// containers if init containers fail on a RestartAlways pod"); once it
// succeeds, the next init container and then the containers run.
func TestInitContainerRetried(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	dir := t.TempDir()
	p := newPod("init-retried", corev1.RestartPolicyAlways, []string{
		`n=$(cat ` + dir + `/n 2>/dev/null || echo 0); n=$((n+1)); echo $n >` + dir + `/n; [ -e ` + dir + `/gate ] || exit 3`,
		`echo done >` + dir + `/init1`,
	}, `cat `+dir+`/init1; exec sleep 600`)
	p.Annotations = map[string]string{AnnotationRestartBackoff: "100ms"}
	create(t, client, p)
	got := waitPod(t, client, p, "init0 failed and waiting to run again", func(p *corev1.Pod) bool {
		cs := p.Status.InitContainerStatuses
		return len(cs) == 2 && cs[0].LastTerminationState.Terminated != nil && cs[0].RestartCount >= 1
	})
	if got.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s while init0 retries, want Pending", got.Status.Phase)
	}
	if c := initializedCondition(got); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotInitialized" {
		t.Errorf("Initialized %s (%s) while init0 retries, want False (ContainersNotInitialized)", c.Status, c.Reason)
	}
	if lt := got.Status.InitContainerStatuses[0].LastTerminationState.Terminated; lt.ExitCode != 3 {
		t.Errorf("init0's last termination: exit code %d, want 3", lt.ExitCode)
	}
	for _, cs := range append(got.Status.InitContainerStatuses[1:], got.Status.ContainerStatuses...) {
		if cs.State.Waiting == nil || cs.RestartCount != 0 {
			t.Errorf("%s ran before init0 succeeded: %+v", cs.Name, cs.State)
		}
	}
	// init0 fails until the gate is there, so that its retries last
	// until the status above has been seen.
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got = waitPod(t, client, p, "running once init0 succeeded", phase(corev1.PodRunning))
	data, _ := os.ReadFile(filepath.Join(dir, "n"))
	runs, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if cs := got.Status.InitContainerStatuses; int(cs[0].RestartCount) != runs-1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 ||
		cs[1].RestartCount != 0 || cs[1].State.Terminated == nil || cs[1].State.Terminated.ExitCode != 0 {
		t.Errorf("init containers %+v, want init0 restarted %d times (once a failed run) and both terminated with exit code 0", cs, runs-1)
	}
	deletePod(t, client, p)
	waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
}

// initializedCondition returns p's Initialized condition.
func initializedCondition(p *corev1.Pod) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodInitialized {
			return c
		}
	}
	return corev1.PodCondition{}
}
