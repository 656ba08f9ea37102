package e2e

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// portedCases are the cases of Kubernetes' node end-to-end tests ported
// here (see ported); docs/kubernetes.md lists each with its status.
var portedCases = append(append([]ported{
	// runtime.go
	{"RuntimeExpectedStatus", "runtime.go", "Container Runtime blackbox test when starting a container that exits should run with the expected status [NodeConformance]", func(k *kcase) {
		// It failed at the 1st run, then succeeded at the 2nd, then runs on.
		script := `f=/restart-count/restartCount
count=$(echo 'hello' >> $f ; wc -l $f | awk {'print $1'})
if [ $count -eq 1 ]; then
	exit 1
fi
if [ $count -eq 2 ]; then
	exit 0
fi
while true; do sleep 1; done`
		for _, name := range []string{"terminate-cmd-rpa", "terminate-cmd-rpof", "terminate-cmd-rpn"} {
			policy := map[string]string{"terminate-cmd-rpa": "Always", "terminate-cmd-rpof": "OnFailure", "terminate-cmd-rpn": "Never"}[name]
			k.create(pod(name, "", fmt.Sprintf(`restartPolicy: %s
containers:
- name: %s
  image: debian
  command: ["sh", "-c", %q]
  volumeMounts: [{name: restart-count, mountPath: /restart-count}]
volumes:
- {name: restart-count, emptyDir: {medium: Memory}}`, policy, name, script)))
		}
		for _, want := range []struct {
			name, phase, state string
			restarts           int
			ready              bool
		}{
			{"terminate-cmd-rpa", "Running", "running", 2, true},
			{"terminate-cmd-rpof", "Succeeded", "terminated", 1, false},
			{"terminate-cmd-rpn", "Failed", "terminated", 0, false},
		} {
			k.waitFor(want.name, podStartTimeout, fmt.Sprintf("to have restarted %d times", want.restarts), func(p *k8sPod) (bool, error) {
				cs := p.Status.ContainerStatuses
				return len(cs) == 1 && cs[0].RestartCount == want.restarts, nil
			})
			p := k.waitPhase(want.name, want.phase)
			if ready, _, _ := p.condition("Ready"); (ready == "True") != want.ready {
				k.t.Errorf("pod %s: Ready %s, want %v; status %s", want.name, ready, want.ready, p)
			}
			if st := p.Status.ContainerStatuses[0].State; want.state == "running" && st.Running == nil || want.state == "terminated" && st.Terminated == nil {
				k.t.Errorf("pod %s: container not %s; status %s", want.name, want.state, p)
			}
			k.kubectl("delete", "pod", want.name, "--wait=false")
			k.goneWithin(want.name, podStartTimeout)
		}
	}},
	{"RuntimeTerminationMessagePath", "runtime.go", "Container Runtime blackbox test on terminated container should report termination message if TerminationMessagePath is set [NodeConformance]", func(k *kcase) {
		k.terminationMessage("/bin/echo -n DONE > /dev/termination-log", `terminationMessagePath: /dev/termination-log, securityContext: {runAsUser: 0}`, "Succeeded", "DONE")
	}},
	{"RuntimeTerminationMessagePathNonRoot", "runtime.go", "Container Runtime blackbox test on terminated container should report termination message if TerminationMessagePath is set as non-root user and at a non-default path [NodeConformance]", func(k *kcase) {
		k.terminationMessage("/bin/echo -n DONE > /dev/termination-custom-log", `terminationMessagePath: /dev/termination-custom-log, securityContext: {runAsUser: 10000}`, "Succeeded", "DONE")
	}},
	{"RuntimeFallbackToLogsOnError", "runtime.go", "Container Runtime blackbox test on terminated container should report termination message from log output if TerminationMessagePolicy FallbackToLogsOnError is set [NodeConformance]", func(k *kcase) {
		k.terminationMessage("/bin/echo -n DONE; /bin/false", `terminationMessagePath: /dev/termination-log, terminationMessagePolicy: FallbackToLogsOnError`, "Failed", "DONE")
	}},
	{"RuntimeFallbackToLogsOnErrorSucceeds", "runtime.go", "Container Runtime blackbox test on terminated container should report termination message as empty when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is set [NodeConformance]", func(k *kcase) {
		k.terminationMessage("/bin/echo -n DONE; /bin/true", `terminationMessagePath: /dev/termination-log, terminationMessagePolicy: FallbackToLogsOnError`, "Succeeded", "")
	}},
	{"RuntimeFallbackToLogsOnErrorFromFile", "runtime.go", "Container Runtime blackbox test on terminated container should report termination message from file when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is set [NodeConformance]", func(k *kcase) {
		k.terminationMessage("/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true", `terminationMessagePath: /dev/termination-log, terminationMessagePolicy: FallbackToLogsOnError`, "Succeeded", "OK")
	}},
	{"RuntimeInvalidRegistry", "runtime.go", "Container Runtime blackbox test when running a container with a new image should not be able to pull image from invalid registry [NodeConformance]", func(k *kcase) {
		// The kubelet keeps it Pending with ErrImagePull or ImagePullBackOff.
		k.create(pod("image-pull-test", "", `restartPolicy: Never
containers:
- name: image-pull-test
  image: invalid.registry.k8s.io/invalid/alpine:3.1
  imagePullPolicy: Always
  command: ["/bin/sh", "-c", "while true; do sleep 1; done"]`))
		k.waitFor("image-pull-test", 2*time.Minute, "to be Pending, its container waiting in ErrImagePull or ImagePullBackOff", func(p *k8sPod) (bool, error) {
			cs := p.Status.ContainerStatuses
			if len(cs) != 1 || cs[0].State.Waiting == nil {
				return false, nil
			}
			r := cs[0].State.Waiting.Reason
			return p.Status.Phase == "Pending" && (r == "ErrImagePull" || r == "ImagePullBackOff"), nil
		})
	}},

	// init_container.go
	{"InitRestartNever", "init_container.go", "InitContainer [NodeConformance] should invoke init containers on a RestartNever pod", func(k *kcase) {
		k.create(initPod("pod-init-never", "Never", "/bin/true", "/bin/true", `["/bin/true"]`, false))
		p := k.waitEnded("pod-init-never")
		if p.Status.Phase != "Succeeded" {
			k.t.Fatalf("phase %s, want Succeeded; status %s", p.Status.Phase, p)
		}
		k.initialized(p)
	}},
	{"InitRestartAlways", "init_container.go", "InitContainer [NodeConformance] should invoke init containers on a RestartAlways pod", func(k *kcase) {
		k.create(initPod("pod-init-always", "", "/bin/true", "/bin/true", `["/bin/sleep", "infinity"]`, true))
		k.initialized(k.waitPhase("pod-init-always", "Running"))
	}},
	{"InitFailRestartAlways", "init_container.go", "InitContainer [NodeConformance] should not start app containers if init containers fail on a RestartAlways pod", func(k *kcase) {
		k.create(initPod("pod-init-fail-always", "", "/bin/false", "/bin/true", `["/bin/sleep", "infinity"]`, true))
		// Until init1 has restarted 3 times, nothing else runs and init1
		// never succeeds.
		p := k.waitFor("pod-init-fail-always", podStartTimeout, "to have restarted init1 3 times", func(p *k8sPod) (bool, error) {
			for _, s := range p.Status.ContainerStatuses {
				if s.State.Waiting == nil || s.State.Waiting.Reason != "PodInitializing" {
					return false, fmt.Errorf("container %s should wait, PodInitializing", s.Name)
				}
			}
			if len(p.Status.InitContainerStatuses) != 2 {
				return false, nil
			}
			if s := p.Status.InitContainerStatuses[1]; s.State.Waiting == nil || s.State.Waiting.Reason != "PodInitializing" {
				return false, fmt.Errorf("init2 should wait, PodInitializing")
			}
			s := p.Status.InitContainerStatuses[0]
			if t := s.State.Terminated; t != nil && t.ExitCode == 0 {
				return false, fmt.Errorf("init1 should not exit 0")
			}
			return s.RestartCount >= 3, nil
		})
		if p.Status.Phase != "Pending" {
			k.t.Errorf("phase %s, want Pending; status %s", p.Status.Phase, p)
		}
		if s, reason, msg := p.condition("Initialized"); s != "False" || reason != "ContainersNotInitialized" || msg != "containers with incomplete status: [init1 init2]" {
			k.t.Errorf("Initialized %s %s %q, want False ContainersNotInitialized \"containers with incomplete status: [init1 init2]\"; status %s", s, reason, msg, p)
		}
	}},
	{"InitFailRestartNever", "init_container.go", "InitContainer [NodeConformance] should not start app containers and fail the pod if init containers fail on a RestartNever pod", func(k *kcase) {
		k.create(initPod("pod-init-fail-never", "Never", "/bin/true", "/bin/false", `["/bin/true"]`, true))
		p := k.waitEnded("pod-init-fail-never")
		if p.Status.Phase != "Failed" {
			k.t.Errorf("phase %s, want Failed; status %s", p.Status.Phase, p)
		}
		if s, reason, msg := p.condition("Initialized"); s != "False" || reason != "ContainersNotInitialized" || msg != "containers with incomplete status: [init2]" {
			k.t.Errorf("Initialized %s %s %q, want False ContainersNotInitialized \"containers with incomplete status: [init2]\"; status %s", s, reason, msg, p)
		}
		if len(p.Status.InitContainerStatuses) != 2 || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			k.t.Errorf("want 2 init container statuses and run1 waiting; status %s", p)
		}
	}},

	// pods.go
	{"PodsHostIP", "pods.go", "Pods should get a host IP [NodeConformance]", func(k *kcase) {
		k.create(pod("pod-hostip", "", `containers:
- {name: test, image: debian, command: ["/bin/sleep", "infinity"]}`))
		p := k.waitPhase("pod-hostip", "Running")
		if p.Status.HostIP == "" {
			k.t.Fatalf("status.hostIP is empty; status %s", p)
		}
	}},
	{"PodsSubmittedAndRemoved", "pods.go", "Pods should be submitted and removed [NodeConformance]", func(k *kcase) {
		// nginx stops on SIGTERM, as sleep does.
		k.create(pod("pod-submit-remove", "{name: foo, time: '1'}", `containers:
- {name: nginx, image: debian, command: ["/bin/sleep", "infinity"]}`))
		k.waitPhase("pod-submit-remove", "Running")
		if out := k.kubectl("get", "pods", "-l", "time=1", "-o", "name"); strings.TrimSpace(out) != "pod/pod-submit-remove" {
			k.t.Fatalf("pods with the label: %q", out)
		}
		// The framework waits DefaultPodDeletionTimeout (3 min) for the
		// deletion to be observed.
		k.kubectl("delete", "pod", "pod-submit-remove", "--grace-period=30", "--wait=false")
		k.goneWithin("pod-submit-remove", 3*time.Minute)
		if out := k.kubectl("get", "pods", "-l", "time=1", "-o", "name"); out != "" {
			k.t.Fatalf("pods with the label after the delete: %q", out)
		}
	}},
	{"PodsUpdated", "pods.go", "Pods should be updated [NodeConformance]", func(k *kcase) {
		k.create(pod("pod-update", "{name: foo, time: '1'}", `containers:
- {name: nginx, image: debian, command: ["/bin/sleep", "infinity"]}`))
		k.waitPhase("pod-update", "Running")
		k.kubectl("label", "pod", "pod-update", "--overwrite", "time=2")
		if out := k.kubectl("get", "pods", "-l", "time=2", "-o", "name"); strings.TrimSpace(out) != "pod/pod-update" {
			k.t.Fatalf("pods with the updated label: %q", out)
		}
	}},
	{"PodsActiveDeadlineUpdated", "pods.go", "Pods should allow activeDeadlineSeconds to be updated [NodeConformance]", func(k *kcase) {
		k.create(pod("pod-update-activedeadlineseconds", "{name: foo, time: '1'}", `containers:
- {name: nginx, image: debian, command: ["/bin/sleep", "infinity"]}`))
		k.waitPhase("pod-update-activedeadlineseconds", "Running")
		k.kubectl("patch", "pod", "pod-update-activedeadlineseconds", "-p", `{"spec":{"activeDeadlineSeconds":5}}`)
		p := k.waitPhase("pod-update-activedeadlineseconds", "Failed")
		if p.Status.Reason != "DeadlineExceeded" {
			k.t.Fatalf("reason %q, want DeadlineExceeded; status %s", p.Status.Reason, p)
		}
	}},
	{"PodsServiceEnv", "pods.go", "Pods should contain environment variables for services [NodeConformance]", func(k *kcase) {
		// The server Pod behind the Service (agnhost serve-hostname on a
		// pod network's port 8080) is left out: the variables come from
		// the Service alone.
		k.create(`apiVersion: v1
kind: Service
metadata:
  name: fooservice
  labels: {name: fooservice}
spec:
  selector: {name: server-envvars}
  ports: [{port: 8765, targetPort: 8080}]
`)
		k.create(pod("client-envvars", "", `restartPolicy: Never
containers:
- {name: env3cont, image: debian, command: ["sh", "-c", "env"]}`))
		k.expectOutput("client-envvars", "env3cont",
			"FOOSERVICE_SERVICE_HOST=", "FOOSERVICE_SERVICE_PORT=", "FOOSERVICE_PORT=",
			"FOOSERVICE_PORT_8765_TCP_PORT=", "FOOSERVICE_PORT_8765_TCP_PROTO=", "FOOSERVICE_PORT_8765_TCP=", "FOOSERVICE_PORT_8765_TCP_ADDR=")
	}},
	{"PodsLogsWebsockets", "pods.go", "Pods should support retrieving logs from the container over websockets [NodeConformance]", func(k *kcase) {
		k.create(pod("pod-logs-websocket", "{name: foo, time: '1'}", `containers:
- {name: main, image: debian, command: ["/bin/sh", "-c", "echo container is alive; sleep 10000"]}`))
		k.waitPhase("pod-logs-websocket", "Running")
		k.eventuallyLog("pod-logs-websocket", "main", "container is alive\n")
	}},
	{"PodsExecWebsockets", "pods.go", "Pods should support remote command execution over websockets [NodeConformance]", func(k *kcase) {
		k.create(pod("pod-exec-websocket", "{name: foo, time: '1'}", `containers:
- {name: main, image: debian, command: ["/bin/sh", "-c", "echo container is alive; sleep 600"]}`))
		k.waitPhase("pod-exec-websocket", "Running")
		// The case runs cat /etc/resolv.conf in the container over the
		// exec websocket, as kubectl exec does, and wants a nameserver.
		out := k.kubectl("exec", "pod-exec-websocket", "-c", "main", "--", "cat", "/etc/resolv.conf")
		if !strings.Contains(out, "nameserver") {
			k.t.Fatalf("kubectl exec cat /etc/resolv.conf: %q, want a nameserver", out)
		}
	}},
	{"PodsReadinessGates", "pods.go", "Pods should support pod readiness gates [NodeConformance]", func(k *kcase) {
		k.create(pod("pod-ready", "", `readinessGates: [{conditionType: k8s.io/test-condition1}, {conditionType: k8s.io/test-condition2}]
containers:
- {name: pod-readiness-gate, image: debian, command: ["/bin/sh", "-c", "echo container is alive; sleep 10000"]}`))
		k.waitPhase("pod-ready", "Running")
		ready := func() bool {
			s, _, _ := k.get("pod-ready").condition("Ready")
			return s == "True"
		}
		patch := func(gate, status string) {
			k.kubectl("patch", "pod", "pod-ready", "--subresource=status", "--type=strategic", "-p",
				fmt.Sprintf(`{"status":{"conditions":[{"type":%q, "status":%q}]}}`, gate, status))
		}
		// validatePodReadiness: a minute for the Pod to be (not) ready.
		want := func(r bool) {
			for end := time.Now().Add(time.Minute); ready() != r; time.Sleep(time.Second) {
				if time.Now().After(end) {
					k.t.Fatalf("pod-ready: Ready %v after a minute, want %v; status %s", !r, r, k.get("pod-ready"))
				}
			}
		}
		if ready() {
			k.t.Fatalf("pod-ready is Ready before its gates are met; status %s", k.get("pod-ready"))
		}
		patch("k8s.io/test-condition1", "True")
		time.Sleep(10 * time.Second) // the case's syncLoopFrequency
		if ready() {
			k.t.Fatalf("pod-ready is Ready with one gate of two met; status %s", k.get("pod-ready"))
		}
		patch("k8s.io/test-condition2", "True")
		want(true)
		patch("k8s.io/test-condition1", "False")
		want(false)
	}},
	{"PodsDeleteCollection", "pods.go", "Pods should delete a collection of pods [Conformance]", func(k *kcase) {
		for i := 1; i <= 3; i++ {
			k.create(pod(fmt.Sprintf("test-pod-%d", i), "{type: Testing}", `containers:
- {name: token-test, image: debian, command: ["/bin/sleep", "infinity"]}`))
		}
		for i := 1; i <= 3; i++ {
			k.waitPhase(fmt.Sprintf("test-pod-%d", i), "Running")
		}
		k.kubectl("delete", "pods", "-l", "type=Testing", "--wait=false")
		for i := 1; i <= 3; i++ {
			k.goneWithin(fmt.Sprintf("test-pod-%d", i), 5*time.Minute)
		}
	}},

	// container_probe.go: the cases repeated on sidecars are in probeCases
	{"ProbeGRPCLivenessNoRestart", "container_probe.go", "Probing container should *not* be restarted with a GRPC liveness probe [NodeConformance] [Conformance]", func(k *kcase) {
		port := freePort(k.t)
		k.create(grpcPod(k, "grpc-ok", port, port, 15))
		k.livenessTest("grpc-ok", false, 0, observe)
	}},
	{"ProbeGRPCLivenessRestart", "container_probe.go", "Probing container should be restarted with a GRPC liveness probe [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(grpcPod(k, "grpc-wrong-port", freePort(k.t), freePort(k.t), 60))
		k.livenessTest("grpc-wrong-port", false, 1, 4*time.Minute)
	}},
	{"ProbeLivenessGracePeriod", "container_probe.go", "Probing container should override timeoutGracePeriodSeconds when LivenessProbe field is set [NodeConformance]", func(k *kcase) {
		k.create(probing{}.pod("liveness-grace", "", `livenessProbe: {httpGet: {path: /healthz, port: 8080}, initialDelaySeconds: 10, failureThreshold: 1, terminationGracePeriodSeconds: 5}`,
			ignoresTERM+"sleep 1000", "terminationGracePeriodSeconds: 500"))
		k.livenessTest("liveness-grace", false, 1, 40*time.Second+4*time.Minute)
		k.kubectl("delete", "pod", "liveness-grace", "--grace-period=1", "--wait=false")
	}},
	{"ProbeStartupGracePeriod", "container_probe.go", "Probing container should override timeoutGracePeriodSeconds when StartupProbe field is set [NodeConformance]", func(k *kcase) {
		k.create(probing{}.pod("startup-grace", "", `livenessProbe: {exec: {command: ["/bin/true"]}, initialDelaySeconds: 15, failureThreshold: 1}
  startupProbe: {exec: {command: ["/bin/cat", "/tmp/startup-grace-startup"]}, initialDelaySeconds: 10, failureThreshold: 1, terminationGracePeriodSeconds: 5}`,
			ignoresTERM+"sleep 1000", "terminationGracePeriodSeconds: 500"))
		k.livenessTest("startup-grace", false, 1, 40*time.Second+4*time.Minute)
		k.kubectl("delete", "pod", "startup-grace", "--grace-period=1", "--wait=false")
	}},

	// expansion.go
	{"ExpansionComposeEnv", "expansion.go", "Variable Expansion should allow composing env vars into new env vars [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(dapiPod("var-expansion", "", `command: ["sh", "-c", "env"]
  env:
  - {name: FOO, value: foo-value}
  - {name: BAR, value: bar-value}
  - {name: FOOBAR, value: "$(FOO);;$(BAR)"}`))
		k.expectOutput("var-expansion", "dapi-container", "FOO=foo-value", "BAR=bar-value", "FOOBAR=foo-value;;bar-value")
	}},
	{"ExpansionCommand", "expansion.go", "Variable Expansion should allow substituting values in a container's command [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(dapiPod("var-expansion-command", "", `command: ["sh", "-c", "TEST_VAR=wrong echo \"$(TEST_VAR)\""]
  env: [{name: TEST_VAR, value: test-value}]`))
		k.expectOutput("var-expansion-command", "dapi-container", "test-value")
	}},
	{"ExpansionArgs", "expansion.go", "Variable Expansion should allow substituting values in a container's args [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(dapiPod("var-expansion-args", "", `command: ["sh", "-c"]
  args: ["TEST_VAR=wrong echo \"$(TEST_VAR)\""]
  env: [{name: TEST_VAR, value: test-value}]`))
		k.expectOutput("var-expansion-args", "dapi-container", "test-value")
	}},
	{"ExpansionSubpathExpr", "expansion.go", "Variable Expansion should allow substituting values in a volume subpath [Conformance]", func(k *kcase) {
		k.create(dapiPod("var-expansion-subpath", "", `command: ["sh", "-c", "test -d /testcontainer/var-expansion-subpath;echo $?"]
  env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
  volumeMounts:
  - {name: workdir1, mountPath: /logscontainer, subPathExpr: "$(POD_NAME)"}
  - {name: workdir1, mountPath: /testcontainer}
volumes:
- {name: workdir1, emptyDir: {}}`))
		k.expectOutput("var-expansion-subpath", "dapi-container", "0")
	}},

	// downwardapi.go
	{"DownwardPodNameNamespaceIP", "downwardapi.go", "Downward API should provide pod name, namespace and IP address as env vars [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(envPod("downward-api-names", "", `- {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
  - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
  - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}`))
		k.expectOutput("downward-api-names", "dapi-container", "POD_NAME=downward-api-names", "POD_NAMESPACE="+k.ns,
			`POD_IP=(?:\d+)\.(?:\d+)\.(?:\d+)\.(?:\d+)`)
	}},
	{"DownwardHostIP", "downwardapi.go", "Downward API should provide host IP as an env var [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(envPod("downward-api-hostip", "", `- {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}`))
		k.expectOutput("downward-api-hostip", "dapi-container", `HOST_IP=(?:\d+)\.(?:\d+)\.(?:\d+)\.(?:\d+)`)
	}},
	{"DownwardHostNetworkIPs", "downwardapi.go", "Downward API should provide host IP and pod IP as an env var if pod uses host network [LinuxOnly]", func(k *kcase) {
		k.create(envPod("downward-api-hostnet", "hostNetwork: true", `- {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
  - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}`))
		k.expectOutput("downward-api-hostnet", "dapi-container", `HOST_IP=(?:\d+)\.(?:\d+)\.(?:\d+)\.(?:\d+)`, `POD_IP=(?:\d+)\.(?:\d+)\.(?:\d+)\.(?:\d+)`)
	}},
	{"DownwardResources", "downwardapi.go", "Downward API should provide container's limits.cpu/memory and requests.cpu/memory as env vars [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(envPod("downward-api-resources", "", `- {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
  - {name: MEMORY_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
  - {name: CPU_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.cpu}}}
  - {name: MEMORY_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.memory}}}
  resources: {requests: {cpu: 250m, memory: 32Mi}, limits: {cpu: 1250m, memory: 64Mi}}`))
		k.expectOutput("downward-api-resources", "dapi-container", "(?m)^CPU_LIMIT=2$", "(?m)^MEMORY_LIMIT=67108864$", "(?m)^CPU_REQUEST=1$", "(?m)^MEMORY_REQUEST=33554432$")
	}},
	{"DownwardDefaultResources", "downwardapi.go", "Downward API should provide default limits.cpu/memory from node allocatable [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(envPod("downward-api-default", "", `- {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
  - {name: MEMORY_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory}}}`))
		k.expectOutput("downward-api-default", "dapi-container", "CPU_LIMIT=[1-9]", "MEMORY_LIMIT=[1-9]")
	}},
	{"DownwardPodUID", "downwardapi.go", "Downward API should provide pod UID as env vars [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(envPod("downward-api-uid", "", `- {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}`))
		k.expectOutput("downward-api-uid", "dapi-container", "POD_UID=[a-z0-9]{8}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{12}")
	}},

	// lifecycle_hook.go
	{"LifecyclePostStartExec", "lifecycle_hook.go", "Container Lifecycle Hook when create a pod with lifecycle hook should execute poststart exec hook properly [NodeConformance] [Conformance]", func(k *kcase) {
		k.hookTest("pod-with-poststart-exec-hook", "18181", `postStart: {exec: {command: ["sh", "-c", "curl http://127.0.0.1:PORT/echo?msg=poststart"]}}`)
	}},
	{"LifecyclePreStopExec", "lifecycle_hook.go", "Container Lifecycle Hook when create a pod with lifecycle hook should execute prestop exec hook properly [NodeConformance] [Conformance]", func(k *kcase) {
		k.hookTest("pod-with-prestop-exec-hook", "18182", `preStop: {exec: {command: ["sh", "-c", "curl http://127.0.0.1:PORT/echo?msg=prestop"]}}`)
	}},
	{"LifecyclePostStartHTTP", "lifecycle_hook.go", "Container Lifecycle Hook when create a pod with lifecycle hook should execute poststart http hook properly [NodeConformance] [Conformance]", func(k *kcase) {
		k.hookTest("pod-with-poststart-http-hook", "18183", `postStart: {httpGet: {path: "/echo?msg=poststart", host: 127.0.0.1, port: PORT}}`)
	}},
	{"LifecyclePreStopHTTP", "lifecycle_hook.go", "Container Lifecycle Hook when create a pod with lifecycle hook should execute prestop http hook properly [NodeConformance] [Conformance]", func(k *kcase) {
		k.hookTest("pod-with-prestop-http-hook", "18184", `preStop: {httpGet: {path: "/echo?msg=prestop", host: 127.0.0.1, port: PORT}}`)
	}},
	{"LifecycleSleepPreStop", "lifecycle_hook.go", "Lifecycle Sleep Hook when create a pod with lifecycle hook using sleep action valid prestop hook using sleep action", func(k *kcase) {
		// sleep_duration = (delete_time + sleep_duration) - (delete_time + tgps) + tgps
		k.sleepTest(50, 100, "", 50, 100)
	}},
	{"LifecycleSleepReduceGrace", "lifecycle_hook.go", "Lifecycle Sleep Hook when create a pod with lifecycle hook using sleep action reduce GracePeriodSeconds during runtime", func(k *kcase) {
		k.sleepTest(50, 100, "30", 30, 50)
	}},
	{"LifecycleSleepIgnoreTerminated", "lifecycle_hook.go", "Lifecycle Sleep Hook when create a pod with lifecycle hook using sleep action ignore terminated container", func(k *kcase) {
		const name = "pod-with-prestop-sleep-hook"
		k.create(pod(name, "", `terminationGracePeriodSeconds: 30
restartPolicy: Never
containers:
- name: `+name+`
  image: debian
  command: ["/bin/sh"]
  args: ["-c", "sleep 3"]
  lifecycle: {preStop: {sleep: {seconds: 10}}}`))
		t := k.waitFor(name, 30*time.Second, "its container to be terminated", containerEnded).Status.ContainerStatuses[0].State.Terminated
		// The container ended on its own: no sleep.
		if cost := k.since(t.StartedAt, t.FinishedAt); cost < 0 || cost > 10*time.Second {
			k.t.Fatalf("container ran from %s to %s, want at most the 10 s of the sleep it must not have slept", t.StartedAt, t.FinishedAt)
		}
		k.kubectl("delete", "pod", name)
	}},
	{"LifecycleSleepZero", "lifecycle_hook.go", "Lifecycle sleep action zero value when create a pod with lifecycle hook using sleep action with a duration of zero seconds prestop hook using sleep action with zero duration", func(k *kcase) {
		// The Pod's delete within its grace period (30 s, the default):
		// upstream times DeleteSync. Here the container's end is timed
		// from the deletion's request by the API's own times, as the
		// other sleep cases time it, which a kubectl process's wait on a
		// loaded machine does not stretch. The times are whole seconds,
		// so "within" is at most 29: a container killed at the grace
		// period's end would read 30.
		k.sleepTest(0, 30, "", 0, 29)
	}},

	// security_context.go
	{"SecurityRunAsUser65534", "security_context.go", "Security Context When creating a container with runAsUser should run the container with uid 65534 [LinuxOnly] [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(onePod("busybox-user-65534", `["sh", "-c", "test $(id -u) -eq 65534"]`, `securityContext: {runAsUser: 65534}`))
		if p := k.waitEnded("busybox-user-65534"); p.Status.Phase != "Succeeded" {
			k.t.Fatalf("phase %s, want Succeeded; status %s", p.Status.Phase, p)
		}
	}},
	{"SecurityRunAsUser0", "security_context.go", "Security Context When creating a container with runAsUser should run the container with uid 0 [LinuxOnly] [NodeConformance]", func(k *kcase) {
		k.create(onePod("busybox-user-0", `["sh", "-c", "test $(id -u) -eq 0"]`, `securityContext: {runAsUser: 0}`))
		if p := k.waitEnded("busybox-user-0"); p.Status.Phase != "Succeeded" {
			k.t.Fatalf("phase %s, want Succeeded; status %s", p.Status.Phase, p)
		}
	}},
	{"SecurityRunAsNonRootExplicitUser", "security_context.go", "Security Context When creating a container with runAsNonRoot should run with an explicit non-root user ID [LinuxOnly]", func(k *kcase) {
		k.create(onePod("explicit-nonroot-uid", `["id", "-u"]`, `securityContext: {runAsNonRoot: true, runAsUser: 1234}`))
		k.expectOutput("explicit-nonroot-uid", "explicit-nonroot-uid", "1234")
	}},
	{"SecurityRunAsNonRootRootUser", "security_context.go", "Security Context When creating a container with runAsNonRoot should not run with an explicit root user ID [LinuxOnly]", func(k *kcase) {
		// The kubelet does not start it either: CreateContainerConfigError.
		k.create(onePod("explicit-root-uid", `["id", "-u"]`, `securityContext: {runAsNonRoot: true, runAsUser: 0}`))
		k.refused("explicit-root-uid", "spec.containers[0].securityContext.runAsNonRoot: true, but runAsUser is 0 or not set")
	}},
	{"SecurityRunAsNonRootNoUser", "security_context.go", "Security Context When creating a container with runAsNonRoot should not run without a specified user ID", func(k *kcase) {
		// The kubelet does not start it either: the image's user is root.
		k.create(onePod("implicit-root-uid", `["id", "-u"]`, `securityContext: {runAsNonRoot: true}`))
		k.refused("implicit-root-uid", "spec.containers[0].securityContext.runAsNonRoot: true, but runAsUser is 0 or not set")
	}},
	{"SecurityReadOnlyRootfs", "security_context.go", "Security Context When creating a pod with readOnlyRootFilesystem should run the container with readonly rootfs when readOnlyRootFilesystem=true [LinuxOnly] [NodeConformance]", func(k *kcase) {
		k.create(onePod("busybox-readonly-true", `["/bin/sh", "-c", "touch checkfile"]`, `securityContext: {readOnlyRootFilesystem: true}`))
		if p := k.waitEnded("busybox-readonly-true"); p.Status.Phase != "Failed" {
			k.t.Fatalf("phase %s, want Failed; status %s", p.Status.Phase, p)
		}
	}},
	{"SecurityUnprivileged", "security_context.go", "Security Context When creating a pod with privileged should run the container as unprivileged when false [LinuxOnly] [NodeConformance] [Conformance]", func(k *kcase) {
		k.create(onePod("busybox-privileged-false", `["/bin/sh", "-c", "ip link add dummy0 type dummy || true"]`, `securityContext: {privileged: false}`))
		k.expectOutput("busybox-privileged-false", "busybox-privileged-false", "Operation not permitted")
	}},
	{"SecurityNoPrivilegeEscalation", "security_context.go", "Security Context when creating containers with AllowPrivilegeEscalation should not allow privilege escalation when false [LinuxOnly] [NodeConformance] [Conformance]", func(k *kcase) {
		// agnhost's nonewprivs, a setuid-root program, prints the uid it
		// runs as: 1000 unless it gained root's. The host has no such
		// program; id -u prints the same, and the kernel's no_new_privs
		// flag, which keeps a setuid program from gaining privileges,
		// is checked too.
		k.create(onePod("alpine-nnp-false", `["/bin/sh", "-c", "id -u; grep NoNewPrivs /proc/self/status"]`, `securityContext: {allowPrivilegeEscalation: false, runAsUser: 1000}`))
		k.expectOutput("alpine-nnp-false", "alpine-nnp-false", "1000", "NoNewPrivs:\t1")
	}},

	// kubelet.go
	{"KubeletPrintOutput", "kubelet.go", "Kubelet when scheduling a busybox command in a pod should print the output to logs [NodeConformance] [Conformance]", func(k *kcase) {
		name := "busybox-scheduling-" + uuid
		k.create(onePod(name, `["sh", "-c", "echo 'Hello World' ; sleep 240"]`, ""))
		k.waitPhase(name, "Running")
		k.eventuallyLog(name, name, "Hello World\n", "--since-time="+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	}},
	{"KubeletTerminatedReason", "kubelet.go", "Kubelet when scheduling a busybox command that always fails in a pod should have an terminated reason [NodeConformance] [Conformance]", func(k *kcase) {
		name := "bin-false" + uuid
		k.create(onePod(name, `["/bin/false"]`, ""))
		k.waitFor(name, podStartTimeout, "to have a terminated container", func(p *k8sPod) (bool, error) {
			if len(p.Status.ContainerStatuses) != 1 {
				return false, nil
			}
			t := p.Status.ContainerStatuses[0].State.Terminated
			return t != nil && t.ExitCode != 0 && t.Reason != "", nil
		})
	}},
	{"KubeletDeleteFailed", "kubelet.go", "Kubelet when scheduling a busybox command that always fails in a pod should be possible to delete [NodeConformance] [Conformance]", func(k *kcase) {
		name := "bin-false" + uuid
		k.create(onePod(name, `["/bin/false"]`, ""))
		k.kubectl("delete", "pod", name, "--wait=false")
	}},
	{"KubeletHostAliases", "kubelet.go", "Kubelet when scheduling an agnhost Pod with hostAliases should write entries to /etc/hosts [NodeConformance] [Conformance]", func(k *kcase) {
		// agnhost etc-hosts prints /etc/hosts.
		k.create(pod("agnhost-host-aliases", "", `restartPolicy: Never
hostAliases: [{ip: 123.45.67.89, hostnames: [foo, bar]}]
containers:
- {name: agnhost-container, image: debian, command: ["/bin/cat", "/etc/hosts"]}`))
		k.waitEnded("agnhost-host-aliases")
		if out := k.logsOf("agnhost-host-aliases", "agnhost-container"); !strings.Contains(out, "123.45.67.89\tfoo\tbar") {
			k.t.Errorf("expected hosts file to contain entries from HostAliases. Got:\n%s", out)
		}
	}},
	{"KubeletReadOnlyRootfs", "kubelet.go", "Kubelet when scheduling a read only busybox container should not write to root filesystem [LinuxOnly] [NodeConformance] [Conformance]", func(k *kcase) {
		name := "busybox-readonly-fs" + uuid
		k.create(onePod(name, `["/bin/sh", "-c", "echo test > /file; sleep 240"]`, `securityContext: {readOnlyRootFilesystem: true}`))
		k.waitPhase(name, "Running")
		// busybox's sh says "/bin/sh: can't create /file: Read-only
		// file system"; the host's, dash, says it so.
		k.eventuallyLog(name, name, "/bin/sh: 1: cannot create /file: Read-only file system\n")
	}},

	// test/e2e/kubectl/logs.go
	{"KubectlLogsFilter", "kubectl/logs.go", "Kubectl logs logs should be able to retrieve and filter logs [Conformance]", func(k *kcase) {
		// agnhost's logs-generator prints 100 lines over 20 s, some
		// naming /api/v1/namespaces/kube-system; here a shell loop.
		name := "logs-generator"
		k.create(onePod(name, `["sh", "-c", "i=0; while [ $i -lt 100 ]; do echo \"$i GET /api/v1/namespaces/kube-system/pods/p$i 200\"; i=$((i+1)); sleep 0.2; done"]`, ""))
		k.waitPhase(name, "Running")
		k.eventuallyLogHas(name, name, "/api/v1/namespaces/kube-system")
		lines := func(out string) []string { return strings.Split(strings.TrimRight(out, "\n"), "\n") }
		if out := k.logsOf(name, name, "--tail=1"); out == "" || len(lines(out)) != 1 {
			k.t.Errorf("logs --tail=1: %q, want one line", out)
		}
		if out := k.logsOf(name, name, "--limit-bytes=1"); len(out) != 1 {
			k.t.Errorf("logs --limit-bytes=1: %q, want one byte", out)
		}
		out := k.logsOf(name, name, "--tail=1", "--timestamps")
		l := lines(out)
		if words := strings.Split(l[0], " "); len(l) != 1 || len(words) < 2 {
			k.t.Errorf("logs --tail=1 --timestamps: %q, want one line of a time and words", out)
		} else if _, err := time.Parse(time.RFC3339Nano, words[0]); err != nil {
			k.t.Errorf("logs --tail=1 --timestamps: %q does not begin with an RFC 3339 time", out)
		}
		// The case's own wait: the lines written so far must be older
		// than 1 s.
		time.Sleep(2500 * time.Millisecond)
		recentOut := k.logsOf(name, name, "--since=1s")
		olderOut := k.logsOf(name, name, "--since=24h")
		if recent, older := len(strings.Split(recentOut, "\n")), len(strings.Split(olderOut, "\n")); recent >= older {
			k.t.Errorf("logs --since=1s has %d lines, --since=24h %d: want fewer\nrecent:\n%s\nolder:\n%s", recent, older, recentOut, olderOut)
		}
	}},

	// test/e2e/kubectl/kubectl.go, "Simple pod": its httpd, with a
	// readiness probe, is a shell that stays up.
	{"KubectlExec", "kubectl/kubectl.go", "Kubectl client Simple pod should support exec", func(k *kcase) {
		k.create(onePod("httpd", `["sh", "-c", "exec sleep 600"]`, ""))
		k.waitPhase("httpd", "Running")
		if out := k.kubectl("exec", "httpd", "--", "echo", "running", "in", "container"); strings.TrimSpace(out) != "running in container" {
			k.t.Errorf("kubectl exec echo: %q", out)
		}
		veryLongData := strings.Repeat("a", 20000)
		if out := k.kubectl("exec", "httpd", "--", "echo", veryLongData); strings.TrimSpace(out) != veryLongData {
			k.t.Errorf("kubectl exec echo of 20000 bytes: %d bytes back", len(out))
		}
		if out, errs, code := k.kubectlRun("abcd1234", "exec", "-i", "httpd", "--", "cat"); out != "abcd1234" || code != 0 {
			k.t.Errorf("kubectl exec -i cat (noninteractive stdin): %q, exit %d: %s", out, code, errs)
		}
		if out, errs, code := k.kubectlRun("echo hi\nexit\n", "exec", "-i", "httpd", "--", "sh"); strings.TrimSpace(out) != "hi" || code != 0 {
			k.t.Errorf("kubectl exec -i sh (pseudo-interactive stdin): %q, exit %d: %s", out, code, errs)
		}
	}},
	{"KubectlExecResourceName", "kubectl/kubectl.go", "Kubectl client Simple pod should support exec using resource/name", func(k *kcase) {
		k.create(onePod("httpd", `["sh", "-c", "exec sleep 600"]`, ""))
		k.waitPhase("httpd", "Running")
		if out := k.kubectl("exec", "pod/httpd", "--", "echo", "running", "in", "container"); strings.TrimSpace(out) != "running in container" {
			k.t.Errorf("kubectl exec pod/httpd echo: %q", out)
		}
	}},
	{"KubectlExecExitCodes", "kubectl/kubectl.go", "Kubectl client Simple pod should return command exit codes", func(k *kcase) {
		// The case's exec steps; its kubectl run steps need a Pod
		// without the node's toleration.
		k.create(onePod("httpd", `["sh", "-c", "exec sleep 600"]`, ""))
		k.waitPhase("httpd", "Running")
		if _, errs, code := k.kubectlRun("", "exec", "httpd", "--", "/bin/sh", "-c", "exit 0"); code != 0 {
			k.t.Errorf("kubectl exec sh -c 'exit 0': exit %d: %s", code, errs)
		}
		if _, errs, code := k.kubectlRun("", "exec", "httpd", "--", "/bin/sh", "-c", "exit 42"); code != 42 || !strings.Contains(errs, "command terminated with exit code 42") {
			k.t.Errorf("kubectl exec sh -c 'exit 42': exit %d, %q; want 42, command terminated with exit code 42", code, errs)
		}
	}},
	// kubectl exec -it, which Kubernetes' e2e tests do not run (they
	// have no terminal): kubectl on a terminal of script(1)'s, the
	// command on one of its own, its controlling terminal.
	{"KubectlExecTTY", "kubectl/kubectl.go", "kubectl exec -it into a running container (the steps of Kubectl client Simple pod should support exec, on a terminal)", func(k *kcase) {
		k.create(onePod("httpd", `["sh", "-c", "exec sleep 600"]`, ""))
		k.waitPhase("httpd", "Running")
		kubectl := fmt.Sprintf("kubectl --kubeconfig %s -n %s exec -it httpd -- sh -c 'read line; echo \"[$line] $(ps -o tpgid= -p $$ | tr -d \" \") $$\"; exit 3'", k.c.kubeconfig, k.ns)
		out, errs, code := k.runIn("typed\r", "script", "-qec", kubectl, "/dev/null")
		fields := strings.Fields(out[max(strings.Index(out, "[typed]"), 0):])
		if code != 3 || len(fields) < 3 || fields[0] != "[typed]" || fields[1] != fields[2] {
			k.t.Errorf("kubectl exec -it: exit %d, %q, %s; want 3, [typed] and the shell leading its terminal's foreground group", code, out, errs)
		}
	}},
	// kubectl attach, which Kubernetes' e2e tests reach only through
	// kubectl run --attach (a Pod without the node's toleration): the
	// container's output from the attach on; no stdin to attach to.
	{"KubectlAttach", "kubectl/kubectl.go", "kubectl attach to a running container's output (the attach steps of Kubectl client Simple pod should support inline execution and attach)", func(k *kcase) {
		// Long enough (150 s) for the attach to come while it runs on
		// a loaded machine; the attach returns when it ends.
		k.create(onePod("ticker", `["sh", "-c", "i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo tick $i; sleep 0.5; done"]`, ""))
		k.waitPhase("ticker", "Running")
		k.eventuallyLogHas("ticker", "ticker", "tick 2\n")
		out, errs, code := k.kubectlRun("", "attach", "ticker", "-c", "ticker")
		if code != 0 || !strings.Contains(out, "tick 300\n") || strings.Contains(out, "tick 1\n") {
			k.t.Errorf("kubectl attach: exit %d, %q, %s; want the ticks after the attach, to the last", code, out, errs)
		}
		k.create(onePod("sleeper", `["sh", "-c", "exec sleep 600"]`, ""))
		k.waitPhase("sleeper", "Running")
		if _, errs, code := k.kubectlRun("x", "attach", "-i", "sleeper", "-c", "sleeper"); code == 0 || !strings.Contains(errs, "no stdin to attach to") {
			k.t.Errorf("kubectl attach -i: exit %d, %q; want it refused: no stdin", code, errs)
		}
	}},
}, probeCases(probing{})...), probeCases(probing{sidecar: true})...)

// knownWrong names the ported cases the node fails today, each with what
// is wrong: their subtests skip, saying so. This list is what remains to
// fix.
var knownWrong = map[string]string{}

// probeCases are container_probe.go's cases that "Probing container"
// runs on a container and "Probing restartable init container" repeats on
// a sidecar (see probing).
func probeCases(p probing) []ported {
	prefix, describe := "Probe", "Probing container "
	if p.sidecar {
		prefix, describe = "SidecarProbe", "Probing restartable init container "
	}
	// tags are the container case's; the sidecar's have none.
	c := func(name, it, tags string, run func(k *kcase)) ported {
		if !p.sidecar {
			it += tags
		}
		return ported{prefix + name, "container_probe.go", describe + it, run}
	}
	return []ported{
		c("ExecLivenessRestart", `should be restarted with a exec "cat /tmp/health" liveness probe`, " [NodeConformance] [Conformance]", func(k *kcase) {
			k.create(p.pod("liveness-exec", "", `livenessProbe: {exec: {command: ["cat", "/tmp/`+p.tmp("liveness-exec")+`-health"]}, initialDelaySeconds: 15, timeoutSeconds: 5, failureThreshold: 1}`,
				"echo ok >/tmp/"+p.tmp("liveness-exec")+"-health; sleep 10; rm -rf /tmp/"+p.tmp("liveness-exec")+"-health; sleep 600"))
			p.livenessTest(k, "liveness-exec", 1, 4*time.Minute)
		}),
		c("ExecLivenessNoRestart", `should *not* be restarted with a exec "cat /tmp/health" liveness probe`, " [NodeConformance] [Conformance]", func(k *kcase) {
			k.create(p.pod("liveness-exec-ok", "", `livenessProbe: {exec: {command: ["cat", "/tmp/`+p.tmp("liveness-exec-ok")+`-health"]}, initialDelaySeconds: 15, timeoutSeconds: 5, failureThreshold: 1}`,
				"echo ok >/tmp/"+p.tmp("liveness-exec-ok")+"-health; sleep 600"))
			p.livenessTest(k, "liveness-exec-ok", 0, observe)
		}),
		c("ExecLivenessTimeout", "should be restarted with an exec liveness probe with timeout [MinimumKubeletVersion:1.20]", " [NodeConformance]", func(k *kcase) {
			k.create(p.pod("liveness-timeout", "", `livenessProbe: {exec: {command: ["/bin/sh", "-c", "sleep 10"]}, initialDelaySeconds: 15, timeoutSeconds: 1, failureThreshold: 1}`, "sleep 600"))
			p.livenessTest(k, "liveness-timeout", 1, 4*time.Minute)
		}),
		c("ExecReadinessTimeout", "should not be ready with an exec readiness probe timeout [MinimumKubeletVersion:1.20]", " [NodeConformance]", func(k *kcase) {
			k.create(p.pod("readiness-timeout", `readinessProbe: {exec: {command: ["/bin/sh", "-c", "sleep 10"]}, initialDelaySeconds: 15, timeoutSeconds: 1, failureThreshold: 1}`, "", "sleep 600"))
			if !p.sidecar {
				k.waitFor("readiness-timeout", podStartTimeout, "not to be Pending", func(p *k8sPod) (bool, error) { return p.Status.Phase != "Pending", nil })
			}
			k.neverReady("readiness-timeout", time.Minute)
		}),
		c("FailingExecLivenessLongerThanTimeout", "should be restarted with a failing exec liveness probe that took longer than the timeout", "", func(k *kcase) {
			k.create(p.pod("liveness-fail-timeout", "", `livenessProbe: {exec: {command: ["/bin/sh", "-c", "sleep 10 & exit 1"]}, initialDelaySeconds: 15, timeoutSeconds: 1, failureThreshold: 1}`, "sleep 600"))
			p.livenessTest(k, "liveness-fail-timeout", 1, 4*time.Minute)
		}),
		c("StartupFails", "should be restarted startup probe fails", "", func(k *kcase) {
			k.create(p.pod("startup-fails", "", `livenessProbe: {exec: {command: ["/bin/true"]}, initialDelaySeconds: 15, failureThreshold: 1}
  startupProbe: {exec: {command: ["/bin/false"]}, initialDelaySeconds: 15, failureThreshold: 3}`, "sleep 600"))
			p.livenessTest(k, "startup-fails", 1, 4*time.Minute)
		}),
		c("StartupDelaysLiveness", "should *not* be restarted by liveness probe because startup probe delays it", "", func(k *kcase) {
			k.create(p.pod("startup-delays", "", `livenessProbe: {exec: {command: ["/bin/false"]}, initialDelaySeconds: 15, failureThreshold: 1}
  startupProbe: {exec: {command: ["/bin/false"]}, initialDelaySeconds: 15, failureThreshold: 60}`, "sleep 600"))
			p.livenessTest(k, "startup-delays", 0, observe)
		}),
		c("LivenessAfterStartup", "should be restarted by liveness probe after startup probe enables it", "", func(k *kcase) {
			k.create(p.pod("startup-enables", "", `livenessProbe: {exec: {command: ["/bin/false"]}, initialDelaySeconds: 15, failureThreshold: 1}
  startupProbe: {exec: {command: ["cat", "/tmp/`+p.tmp("startup-enables")+`-startup"]}, initialDelaySeconds: 15, failureThreshold: 60}`,
				"sleep 10; echo ok >/tmp/"+p.tmp("startup-enables")+"-startup; sleep 600"))
			p.livenessTest(k, "startup-enables", 1, 4*time.Minute)
		}),
		c("HTTPLivenessRestart", "should be restarted with a /healthz http liveness probe", " [NodeConformance] [Conformance]", func(k *kcase) {
			port := freePort(k.t)
			k.create(p.liveness("liveness-http", port, `livenessProbe: {httpGet: {path: /healthz, port: `+port+`}, initialDelaySeconds: 15, failureThreshold: 1`+p.timeout5()+`}`))
			p.livenessTest(k, "liveness-http", 1, 4*time.Minute)
		}),
		c("TCPLivenessNoRestart", "should *not* be restarted with a tcp:8080 liveness probe", " [NodeConformance] [Conformance]", func(k *kcase) {
			port := freePort(k.t)
			k.create(p.liveness("liveness-tcp", port, `livenessProbe: {tcpSocket: {port: `+port+`}, initialDelaySeconds: 15, failureThreshold: 1`+p.timeout5()+`}`))
			p.livenessTest(k, "liveness-tcp", 0, observe)
		}),
		c("LocalRedirectLivenessRestart", "should be restarted with a local redirect http liveness probe", "", func(k *kcase) {
			port := freePort(k.t)
			k.create(p.liveness("liveness-redirect", port, `livenessProbe: {httpGet: {path: "/redirect?loc=%2Fhealthz", port: `+port+`}, initialDelaySeconds: 15, failureThreshold: 1}`))
			p.livenessTest(k, "liveness-redirect", 1, 4*time.Minute)
		}),
		c("NonLocalRedirectLivenessNoRestart", "should *not* be restarted with a non-local redirect http liveness probe", "", func(k *kcase) {
			port := freePort(k.t)
			k.create(p.liveness("liveness-nonlocal", port, `livenessProbe: {httpGet: {path: "/redirect?loc=http%3A%2F%2F0.0.0.0%2F", port: `+port+`}, initialDelaySeconds: 15, failureThreshold: 1}`))
			p.livenessTest(k, "liveness-nonlocal", 0, observe)
			// The kubelet records a ProbeWarning event (within the
			// framework's PodEventTimeout, 2 minutes).
			want := `Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`
			var out string
			for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(2 * time.Second) {
				if out = k.kubectl("get", "events", "--field-selector", "involvedObject.kind=Pod,involvedObject.name=liveness-nonlocal,reason=ProbeWarning", "-o", "jsonpath={.items[*].message}"); strings.Contains(out, want) {
					return
				}
			}
			k.t.Fatalf("no ProbeWarning event saying %q; events: %q", want, out)
		}),
		c("ReadinessInitialDelay", "with readiness probe should not be ready before initial delay and never restart", " [NodeConformance] [Conformance]", func(k *kcase) {
			k.create(p.webserver("test-webserver-delay", `readinessProbe: {httpGet: {path: /, port: 80}, initialDelaySeconds: 15}`))
			k.refused("test-webserver-delay", p.path()+".ports[0]: port 80 on a pod network")
		}),
		c("ReadinessFails", "with readiness probe that fails should never be ready and never restart", " [NodeConformance] [Conformance]", func(k *kcase) {
			k.create(p.webserver("test-webserver-fails", `readinessProbe: {exec: {command: ["/bin/false"]}, initialDelaySeconds: 0}`))
			k.refused("test-webserver-fails", p.path()+".ports[0]: port 80 on a pod network")
		}),
		c("HTTPLivenessNoRestart", "should *not* be restarted with a /healthz http liveness probe", " [NodeConformance] [Conformance]", func(k *kcase) {
			k.create(p.webserver("test-webserver-live", `livenessProbe: {httpGet: {path: /, port: 80}, initialDelaySeconds: 15, timeoutSeconds: 5, failureThreshold: 5}`))
			k.refused("test-webserver-live", p.path()+".ports[0]: port 80 on a pod network")
		}),
	}
}

// probing makes container_probe.go's Pods: the probed container is a
// container, or with sidecar a sidecar (an init container with
// restartPolicy Always) beside container main, which pauses.
type probing struct{ sidecar bool }

// path is the probed container's in the Pod's spec.
func (p probing) path() string {
	if p.sidecar {
		return "spec.initContainers[0]"
	}
	return "spec.containers[0]"
}

// tmp names a case's file in /tmp, the host's, after its Pod (and the
// sidecar's after the sidecar case's).
func (p probing) tmp(name string) string {
	if p.sidecar {
		return "sidecar-" + name
	}
	return name
}

// around puts the probed container (YAML list item) where it goes.
func (p probing) around(ctr string) string {
	if p.sidecar {
		return `
initContainers:
` + ctr + `
  restartPolicy: Always
containers:
- {name: main, image: debian, command: ["/bin/sleep", "infinity"]}`
	}
	return "\ncontainers:\n" + ctr
}

// pod is busyBoxPodSpec and startupPodSpec, or busyBoxSidecarPodSpec and
// startupSidecarPodSpec: container busybox running /bin/sh -c cmd with the
// probes (YAML lines of the container), and more of the Pod's spec.
func (p probing) pod(name, readiness, liveness, cmd string, spec ...string) string {
	var probes []string
	for _, pr := range []string{readiness, liveness} {
		if pr != "" {
			probes = append(probes, pr)
		}
	}
	return pod(name, "{test: liveness}", strings.Join(spec, "\n")+p.around(fmt.Sprintf(`- name: busybox
  image: debian
  command: ["/bin/sh", "-c", %q]
  %s`, cmd, strings.Join(probes, "\n  "))))
}

// webserver is testWebServerPodSpec or testWebServerSidecarPodSpec: the
// test-webserver image serves HTTP on the container's port 80.
func (p probing) webserver(name, probe string) string {
	return pod(name, "{test: webserver}", p.around(`- name: test-webserver
  image: debian
  command: ["/usr/bin/python3", "-m", "http.server", "80"]
  ports: [{containerPort: 80}]
  `+probe))
}

// timeout5 is the timeoutSeconds: 5 the sidecar's copies of some cases
// add.
func (p probing) timeout5() string {
	if p.sidecar {
		return ", timeoutSeconds: 5"
	}
	return ""
}

// liveness is livenessPodSpec or livenessSidecarPodSpec: agnhost's
// liveness server, whose /healthz answers 200 for 10 s and 500 after, and
// whose /redirect?loc=L redirects to L (302), with probe. It serves on
// port, not 8080: the cases run at once on the host's network.
func (p probing) liveness(name, port, probe string) string {
	return pod(name, "{test: liveness}", p.around(fmt.Sprintf(`- name: agnhost-container
  image: debian
  command: ["/usr/bin/python3", "-c", %q, %q]
  %s`, livenessServer, port, probe)))
}

// livenessServer behaves as agnhost liveness does, on the port in argv.
const livenessServer = `import http.server, sys, time, urllib.parse
start = time.time()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/redirect":
            loc = urllib.parse.parse_qs(url.query)["loc"][0]
            self.send_response(302)
            self.send_header("Location", loc)
            self.end_headers()
            self.wfile.write(('<a href="%s">Found</a>.' % loc).encode())
        elif url.path == "/healthz" and time.time() - start <= 10:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")
        elif url.path == "/healthz":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(("error: %d" % (time.time() - start)).encode())
        else:
            self.send_response(404)
            self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("", int(sys.argv[1])), Handler).serve_forever()
`

// livenessTest is RunLivenessTest, or for a sidecar RunSidecarLivenessTest.
func (p probing) livenessTest(k *kcase, name string, want int, observe time.Duration) {
	k.t.Helper()
	k.livenessTest(name, p.sidecar, want, observe)
}

// ignoresTERM makes sh ignore SIGTERM, and the command it runs after
// it, as sh does as a container's PID 1 (which the kernel sends no
// signal it has no handler for): the probe-level
// terminationGracePeriodSeconds cases count on it, so that only the
// SIGKILL at the end of the grace period ends the container. Here sh is
// not PID 1, and a stop's SIGTERM would end it at once, whatever the
// grace period.
const ignoresTERM = `trap "" TERM; `

// uuid stands for the uuid.NewUUID() a case adds to its Pod's name.
const uuid = "6f1c2e0a-8b3d-4c5e-9f7a-1b2c3d4e5f60"

// terminationMessage is runtime.go's matchTerminationMessage: a container
// running /bin/sh -c script, with fields (more of the container's, in
// YAML flow style), in a Pod that never restarts ends in phase with its
// termination message msg.
func (k *kcase) terminationMessage(script, fields, phase, msg string) {
	k.create(pod("termination-message", "", fmt.Sprintf(`restartPolicy: Never
containers:
- {name: termination-message-container, image: debian, command: ["/bin/sh", "-c"], args: [%q], %s}`, script, fields)))
	p := k.waitEnded("termination-message")
	if p.Status.Phase != phase {
		k.t.Fatalf("phase %s, want %s; status %s", p.Status.Phase, phase, p)
	}
	t := p.Status.ContainerStatuses[0].State.Terminated
	if t == nil || t.Message != msg {
		k.t.Fatalf("termination message of %s, want %q; status %s", p.Status.ContainerStatuses[0].Name, msg, p)
	}
}

// initialized checks init_container.go's end: condition Initialized True,
// two init containers ready and terminated with exit code 0.
func (k *kcase) initialized(p *k8sPod) {
	if s, _, _ := p.condition("Initialized"); s != "True" {
		k.t.Errorf("condition Initialized %q, want True; status %s", s, p)
	}
	if len(p.Status.InitContainerStatuses) != 2 {
		k.t.Fatalf("%d init container statuses, want 2; status %s", len(p.Status.InitContainerStatuses), p)
	}
	for _, s := range p.Status.InitContainerStatuses {
		if !s.Ready || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			k.t.Errorf("init container %s not ready and terminated with exit code 0; status %s", s.Name, p)
		}
	}
}

// initPod is init_container.go's Pod: under restartPolicy policy (or the
// default), init containers init1 and init2 run /bin/true or /bin/false,
// then run1 runs command, limited to 100m of CPU if cpu100m.
func initPod(name, policy, init1, init2, command string, cpu100m bool) string {
	spec := ""
	if policy != "" {
		spec = "restartPolicy: " + policy
	}
	limits := ""
	if cpu100m {
		limits = ", resources: {limits: {cpu: 100m}}"
	}
	return pod(name, "{name: foo, time: '1'}", fmt.Sprintf(`%s
initContainers:
- {name: init1, image: debian, command: [%q]}
- {name: init2, image: debian, command: [%q]}
containers:
- {name: run1, image: debian, command: %s%s}`, spec, init1, init2, command, limits))
}

// goneWithin waits for Pod name to be gone from the API.
func (k *kcase) goneWithin(name string, timeout time.Duration) {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := k.c.kubectl("-n", k.ns, "get", "pod", name, "--ignore-not-found", "-o", "name")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("pod %s still there %s after its delete: %q %v", name, timeout, out, err)
		}
		time.Sleep(time.Second)
	}
}

// eventuallyLog waits a minute, as the cases do, for the container's log
// (with args) to be want.
func (k *kcase) eventuallyLog(name, container, want string, args ...string) {
	k.t.Helper()
	var out string
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(4 * time.Second) {
		if out = k.logsOf(name, container, args...); out == want {
			return
		}
	}
	k.t.Fatalf("log of %s/%s %q, want %q", name, container, out, want)
}

// grpcPod is container_probe.go's gRPCServerPodSpec with its liveness
// probe (its timings as there) on probePort. Its server, agnhost
// grpc-health-checking, which answers SERVING, is etcd here (the
// server of these cases before agnhost's, which registers the health
// service as SERVING), from the end-to-end test's binaries, serving its
// clients on port and its data in /tmp (named after the Pod; the cases
// share the host) on the host's network, where agnhost's ports are
// declared on a pod network.
func grpcPod(k *kcase, name, port, probePort string, delay int) string {
	url := "http://127.0.0.1:" + port
	data := "/tmp/" + name + "-" + k.ns + "-etcd"
	k.t.Cleanup(func() { os.RemoveAll(data) })
	return pod(name, "", fmt.Sprintf(`hostNetwork: true
containers:
- name: agnhost
  image: debian
  command: [%q, "--name", %q, "--data-dir", %q, "--listen-client-urls", %q, "--advertise-client-urls", %q, "--listen-peer-urls", "http://127.0.0.1:%s", "--initial-advertise-peer-urls", "http://127.0.0.1:%[6]s", "--initial-cluster", "%[2]s=http://127.0.0.1:%[6]s"]
  ports: [{containerPort: %[7]s}]
  livenessProbe: {grpc: {port: %s}, initialDelaySeconds: %d, timeoutSeconds: 5, failureThreshold: 1}`,
		filepath.Join(k.c.bin, "etcd"), name, data, url, url, freePort(k.t), port, probePort, delay))
}

// dapiPod is the Pod of expansion.go and downwardapi.go: container
// dapi-container with fields (YAML of the container after its image),
// never restarted, with more of the Pod's spec.
func dapiPod(name, spec, fields string) string {
	return pod(name, "", spec+`
restartPolicy: Never
containers:
- name: dapi-container
  image: debian
  `+fields)
}

// envPod is downwardapi.go's testDownwardAPI Pod: dapi-container runs
// sh -c env with env (YAML list items).
func envPod(name, spec, env string) string {
	return dapiPod(name, spec, `command: ["sh", "-c", "env"]
  env:
  `+env)
}

// hookTest is lifecycle_hook.go's testPodWithHook: the handler Pod
// (agnhost netexec there; here python's http.server, which logs each
// request it serves, on the host's network at port: the cases run at
// once) runs and is ready, then Pod name with hook (its PORT is port)
// runs; the handler's log shows the postStart hook's request within 2
// minutes; after the Pod's delete with a grace period of 15 s, the
// preStop hook's within 30 s. The hooks call 127.0.0.1, where the
// framework calls the handler's Pod IP, the host's address here.
func (k *kcase) hookTest(name, port, hook string) {
	k.t.Helper()
	const handler, container = "pod-handle-http-request", "container-handle-http-request"
	k.create(pod(handler, "", fmt.Sprintf(`hostNetwork: true
containers:
- name: %s
  image: debian
  command: ["/usr/bin/python3", "-u", "-c", %q, %q]
  ports: [{containerPort: %s}]`, container, echoServer, port, port)))
	k.waitFor(handler, podStartTimeout, "to be Running and Ready", func(p *k8sPod) (bool, error) {
		s, _, _ := p.condition("Ready")
		return p.Status.Phase == "Running" && s == "True", nil
	})
	k.create(pod(name, "", `containers:
- name: `+name+`
  image: debian
  command: ["/bin/sleep", "infinity"]
  lifecycle: {`+strings.ReplaceAll(hook, "PORT", port)+`}`))
	k.waitPhase(name, "Running")
	if strings.HasPrefix(hook, "postStart") {
		k.logShows(handler, container, "GET /echo?msg=poststart", 2*time.Minute)
	}
	k.kubectl("delete", "pod", name, "--grace-period=15")
	if strings.HasPrefix(hook, "preStop") {
		k.logShows(handler, container, "GET /echo?msg=prestop", 30*time.Second)
	}
}

// echoServer answers every GET with 200 on 127.0.0.1 at the port in
// argv and logs it on stderr ("GET /path HTTP/1.1" 200), as netexec
// logs the requests it serves.
const echoServer = `import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
`

// sleepTest is lifecycle_hook.go's sleep-action cases on a running Pod
// kept by a finalizer: the pause container with a preStop sleep of sleep
// seconds, in a Pod of terminationGracePeriodSeconds grace, is deleted
// (with --grace-period=deleteGrace unless ""), and its container must end
// between low and high seconds after the delete, computed as there from
// the deletionTimestamp (the delete's time plus its grace period) and the
// container's finishedAt: finishedAt - deletionTimestamp + the delete's
// grace period.
func (k *kcase) sleepTest(sleep, grace int, deleteGrace string, low, high int) {
	k.t.Helper()
	const name = "pod-with-prestop-sleep-hook"
	k.create(strings.Replace(pod(name, "", fmt.Sprintf(`terminationGracePeriodSeconds: %d
containers:
- name: %s
  image: debian
  command: ["/bin/sleep", "infinity"]
  lifecycle: {preStop: {sleep: {seconds: %d}}}`, grace, name, sleep)), "metadata:\n", "metadata:\n  finalizers: [test/finalizer]\n", 1))
	defer k.kubectl("patch", "pod", name, "--type=json", `-p=[{"op": "remove", "path": "/metadata/finalizers"}]`)
	k.waitPhase(name, "Running")
	del := []string{"delete", "pod", name, "--wait=false"}
	g := grace
	if deleteGrace != "" {
		del = append(del, "--grace-period="+deleteGrace)
		g, _ = strconv.Atoi(deleteGrace)
	}
	k.kubectl(del...)
	deletion := k.get(name).Metadata.DeletionTimestamp
	t := k.waitFor(name, time.Duration(max(sleep*2, g+10))*time.Second, "its container to be terminated", containerEnded).Status.ContainerStatuses[0].State.Terminated
	slept := k.since(deletion, t.FinishedAt) + time.Duration(g)*time.Second
	if slept < time.Duration(low)*time.Second || slept > time.Duration(high)*time.Second {
		k.t.Fatalf("unexpected delay duration before killing the pod, finishAt = %s, deletionAt = %s: %v, want %d-%d s", t.FinishedAt, deletion, slept, low, high)
	}
}

// containerEnded says whether a Pod's first container has terminated.
func containerEnded(p *k8sPod) (bool, error) {
	cs := p.Status.ContainerStatuses
	return len(cs) > 0 && cs[0].State.Terminated != nil, nil
}

// since is the time from from to to, two RFC 3339 times of the API.
func (k *kcase) since(from, to string) time.Duration {
	k.t.Helper()
	f, err := time.Parse(time.RFC3339, from)
	if err != nil {
		k.t.Fatal(err)
	}
	t, err := time.Parse(time.RFC3339, to)
	if err != nil {
		k.t.Fatal(err)
	}
	return t.Sub(f)
}

// logShows waits up to timeout for the container's log to hold want,
// as the framework's MatchContainerOutput in an Eventually does.
func (k *kcase) logShows(name, container, want string, timeout time.Duration) {
	k.t.Helper()
	var out string
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(time.Second) {
		if out = k.logsOf(name, container); strings.Contains(out, want) {
			return
		}
	}
	k.t.Fatalf("log of %s/%s %q, want it to hold %q", name, container, out, want)
}

// onePod is a Pod that never restarts, with one container named as it
// running command (a YAML list) with more of the container's fields
// (YAML, or empty), as security_context.go and kubelet.go make them.
func onePod(name, command, fields string) string {
	return pod(name, "", fmt.Sprintf(`restartPolicy: Never
containers:
- name: %s
  image: debian
  command: %s
  %s`, name, command, fields))
}

// Volumes and the environment from ConfigMaps and Secrets: the cases of
// test/e2e/common/storage (empty_dir.go, configmap_volume.go,
// secrets_volume.go, downwardapi_volume.go, projected_*.go) and of
// common/node's configmap.go and secrets.go that read them from the
// environment, with one more substitution: agnhost's mounttest becomes the
// shell commands that print what it prints (mounttest). The API-only cases
// (a ConfigMap or Secret created, patched or refused by the API server)
// are not ported.
func init() { portedCases = append(portedCases, volumeCases...) }

var volumeCases = []ported{
	// empty_dir.go: testPodWithVolume's Pod asks for seLinuxOptions, which
	// the node refuses before its emptyDir.
	emptyDirCase("EmptyDirTmpfsMode", "volume on tmpfs should have the correct mode [LinuxOnly] [NodeConformance] [Conformance]", 0, "Memory", "fs_type=/test-volume", "file_perm=/test-volume"),
	emptyDirCase("EmptyDirRoot0644Tmpfs", "should support (root,0644,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]", 0, "Memory", emptyDirFile("0644")...),
	emptyDirCase("EmptyDirRoot0666Tmpfs", "should support (root,0666,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]", 0, "Memory", emptyDirFile("0666")...),
	emptyDirCase("EmptyDirRoot0777Tmpfs", "should support (root,0777,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]", 0, "Memory", emptyDirFile("0777")...),
	emptyDirCase("EmptyDirNonRoot0644Tmpfs", "should support (non-root,0644,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]", 1001, "Memory", emptyDirFile("0644")...),
	emptyDirCase("EmptyDirNonRoot0666Tmpfs", "should support (non-root,0666,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]", 1001, "Memory", emptyDirFile("0666")...),
	emptyDirCase("EmptyDirNonRoot0777Tmpfs", "should support (non-root,0777,tmpfs) [LinuxOnly] [NodeConformance] [Conformance]", 1001, "Memory", emptyDirFile("0777")...),
	emptyDirCase("EmptyDirDefaultMode", "volume on default medium should have the correct mode [LinuxOnly] [NodeConformance] [Conformance]", 0, "", "fs_type=/test-volume", "file_perm=/test-volume"),
	emptyDirCase("EmptyDirRoot0644Default", "should support (root,0644,default) [LinuxOnly] [NodeConformance] [Conformance]", 0, "", emptyDirFile("0644")...),
	emptyDirCase("EmptyDirRoot0666Default", "should support (root,0666,default) [LinuxOnly] [NodeConformance] [Conformance]", 0, "", emptyDirFile("0666")...),
	emptyDirCase("EmptyDirRoot0777Default", "should support (root,0777,default) [LinuxOnly] [NodeConformance] [Conformance]", 0, "", emptyDirFile("0777")...),
	emptyDirCase("EmptyDirNonRoot0644Default", "should support (non-root,0644,default) [LinuxOnly] [NodeConformance] [Conformance]", 1001, "", emptyDirFile("0644")...),
	emptyDirCase("EmptyDirNonRoot0666Default", "should support (non-root,0666,default) [LinuxOnly] [NodeConformance] [Conformance]", 1001, "", emptyDirFile("0666")...),
	emptyDirCase("EmptyDirNonRoot0777Default", "should support (non-root,0777,default) [LinuxOnly] [NodeConformance] [Conformance]", 1001, "", emptyDirFile("0777")...),
	{"EmptyDirSharedVolume", "storage/empty_dir.go", "EmptyDir volumes pod should support shared volumes between containers [Conformance]", func(k *kcase) {
		const name = "pod-sharedvolume-" + uuid
		k.create(pod(name, "", `terminationGracePeriodSeconds: 0
restartPolicy: Never
volumes: [{name: shared-data, emptyDir: {}}]
containers:
- {name: busybox-main-container, image: debian, command: ["/bin/sh"], args: ["-c", "/bin/sleep infinity"], volumeMounts: [{name: shared-data, mountPath: /usr/share/volumeshare}]}
- {name: busybox-sub-container, image: debian, command: ["/bin/sh"], args: ["-c", "echo Hello from the busy-box sub-container > /pod-data/shareddata.txt"], volumeMounts: [{name: shared-data, mountPath: /pod-data}]}`))
		k.waitPhase(name, "Running")
		// The case reads the file with kubectl exec.
		out := k.kubectl("exec", name, "-c", "busybox-main-container", "--", "cat", "/usr/share/volumeshare/shareddata.txt")
		if out != "Hello from the busy-box sub-container\n" {
			k.t.Fatalf("kubectl exec: %q, want the sub-container's message", out)
		}
	}},
	{"EmptyDirMemorySize", "storage/empty_dir.go", "EmptyDir volumes pod should support memory backed volumes of specified size", func(k *kcase) {
		const name = "pod-size-memory-volume-" + uuid
		k.create(pod(name, "", `terminationGracePeriodSeconds: 0
restartPolicy: Never
volumes: [{name: shared-data, emptyDir: {medium: Memory, sizeLimit: 10Mi}}]
containers:
- {name: busybox-main-container, image: debian, command: ["/bin/sh"], args: ["-c", "/bin/sleep infinity"], volumeMounts: [{name: shared-data, mountPath: /usr/share/volumeshare}]}`))
		k.waitPhase(name, "Running")
		// The case reads the volume's size with kubectl exec.
		out := k.kubectl("exec", name, "-c", "busybox-main-container", "--", "/bin/sh", "-c", "df | grep /usr/share/volumeshare | awk '{print $2}'")
		if strings.TrimSpace(out) != "10240" {
			k.t.Fatalf("kubectl exec: %q, want 10240 (10Mi)", out)
		}
	}},

	// configmap_volume.go
	configMapVolume.mounttestCase("ConfigMapVolume", "should be consumable from pods in volume [NodeConformance] [Conformance]", false, "", ""),
	configMapVolume.mounttestCase("ConfigMapVolumeDefaultMode", "should be consumable from pods in volume with defaultMode set [LinuxOnly] [NodeConformance] [Conformance]", false, "0400", ""),
	configMapVolume.mounttestCase("ConfigMapVolumeNonRoot", "should be consumable from pods in volume as non-root [NodeConformance] [Conformance]", true, "", ""),
	configMapVolume.mounttestCase("ConfigMapVolumeMappings", "should be consumable from pods in volume with mappings [NodeConformance] [Conformance]", false, "", "default"),
	configMapVolume.mounttestCase("ConfigMapVolumeMappingsItemMode", "should be consumable from pods in volume with mappings and Item mode set [LinuxOnly] [NodeConformance] [Conformance]", false, "", "0400"),
	configMapVolume.mounttestCase("ConfigMapVolumeMappingsNonRoot", "should be consumable from pods in volume with mappings as non-root [NodeConformance] [Conformance]", true, "", "default"),
	configMapVolume.fsGroupCase("ConfigMapVolumeFSGroup", "should be consumable from pods in volume as non-root with defaultMode and fsGroup set [LinuxOnly] [NodeFeature:FSGroup]"),
	{"ConfigMapVolumeUpdates", "storage/configmap_volume.go", "ConfigMap updates should be reflected in volume [NodeConformance] [Conformance]", func(k *kcase) {
		name := "configmap-test-upd-" + uuid
		k.create(configMapYAML(name, "data: {data-1: value-1}"))
		k.create(mounttestPod("pod-configmaps-"+uuid, "agnhost-container", "configmap-volume", "/etc/configmap-volume",
			"configMap: {name: "+name+"}", "", "file_content_in_loop=/etc/configmap-volume/data-1"))
		k.waitPhase("pod-configmaps-"+uuid, "Running")
		k.eventuallyLogHas("pod-configmaps-"+uuid, "agnhost-container", "value-1")
		k.objects("replace", k.ns, configMapYAML(name, "data: {data-1: value-2}"))
		k.eventuallyLogHas("pod-configmaps-"+uuid, "agnhost-container", "value-2")
	}},
	{"ConfigMapVolumeBinaryData", "storage/configmap_volume.go", "ConfigMap binary data should be reflected in volume [NodeConformance] [Conformance]", func(k *kcase) {
		name := "configmap-test-upd-" + uuid
		k.create(configMapYAML(name, "data: {data-1: value-1}\nbinaryData: {dump.bin: 3sr+utD+/w==}"))
		k.create(pod("pod-configmaps-"+uuid, "", `restartPolicy: Never
volumes: [{name: configmap-volume, configMap: {name: `+name+`}}]
containers:
- name: agnhost-container
  image: debian
  command: ["/bin/sh", "-c", `+fmt.Sprintf("%q", mounttest("file_content_in_loop=/etc/configmap-volume/data-1"))+`]
  volumeMounts: [{name: configmap-volume, mountPath: /etc/configmap-volume, readOnly: true}]
- name: configmap-volume-binary-test
  image: debian
  command: ["hexdump", "-C", "/etc/configmap-volume/dump.bin"]
  volumeMounts: [{name: configmap-volume, mountPath: /etc/configmap-volume, readOnly: true}]`))
		k.waitPhase("pod-configmaps-"+uuid, "Running")
		k.eventuallyLogHas("pod-configmaps-"+uuid, "agnhost-container", "value-1")
		k.eventuallyLogHas("pod-configmaps-"+uuid, "configmap-volume-binary-test", "de ca fe ba d0 fe ff")
	}},
	{"ConfigMapVolumeMultiple", "storage/configmap_volume.go", "ConfigMap should be consumable in multiple volumes in the same pod [NodeConformance] [Conformance]", func(k *kcase) {
		name := "configmap-test-volume-" + uuid
		k.create(configMapYAML(name, dataObject))
		k.create(pod("pod-configmaps-"+uuid, "", `restartPolicy: Never
volumes:
- {name: configmap-volume, configMap: {name: `+name+`}}
- {name: configmap-volume-2, configMap: {name: `+name+`}}
containers:
- name: configmap-volume-test
  image: debian
  command: ["/bin/sh", "-c", `+fmt.Sprintf("%q", mounttest("file_content=/etc/configmap-volume/data-1"))+`]
  volumeMounts:
  - {name: configmap-volume, mountPath: /etc/configmap-volume, readOnly: true}
  - {name: configmap-volume-2, mountPath: /etc/configmap-volume-2, readOnly: true}`))
		k.expectOutput("pod-configmaps-"+uuid, "configmap-volume-test", regexp.QuoteMeta(`content of file "/etc/configmap-volume/data-1": value-1`))
	}},
	configMapVolume.missingCase("ConfigMapVolumeMissing", "Should fail non-optional pod creation due to configMap object does not exist [Slow]", ""),
	configMapVolume.missingCase("ConfigMapVolumeMissingKey", "Should fail non-optional pod creation due to the key in the configMap object does not exist [Slow]", "data-4"),

	// secrets_volume.go
	secretVolume.mounttestCase("SecretVolume", "should be consumable from pods in volume [NodeConformance] [Conformance]", false, "", ""),
	secretVolume.mounttestCase("SecretVolumeDefaultMode", "should be consumable from pods in volume with defaultMode set [LinuxOnly] [NodeConformance] [Conformance]", false, "0400", ""),
	secretVolume.mounttestCase("SecretVolumeMappings", "should be consumable from pods in volume with mappings [NodeConformance] [Conformance]", false, "", "default"),
	secretVolume.mounttestCase("SecretVolumeMappingsItemMode", "should be consumable from pods in volume with mappings and Item Mode set [LinuxOnly] [NodeConformance] [Conformance]", false, "", "0400"),
	secretVolume.fsGroupCase("SecretVolumeFSGroup", "should be consumable from pods in volume as non-root with defaultMode and fsGroup set [LinuxOnly] [NodeConformance] [Conformance]"),
	{"SecretVolumeOtherNamespace", "storage/secrets_volume.go", "Secrets should be able to mount in a volume regardless of a different secret existing with same name in different namespace [NodeConformance] [Conformance]", func(k *kcase) {
		other := k.ns + "-secret"
		k.kubectl("create", "namespace", other)
		k.t.Cleanup(func() { k.c.kubectl("delete", "namespace", other, "--wait=false") })
		name := "secret-test-" + uuid
		k.objects("create", other, secretYAML(name, "data: {data-1: "+base64.StdEncoding.EncodeToString([]byte("value-1"))+"}"))
		k.create(secretYAML(name, dataObject))
		k.create(mounttestPod("pod-secrets-"+uuid, "secret-volume-test", "secret-volume", "/etc/secret-volume",
			"secret: {secretName: "+name+"}", "", "file_content=/etc/secret-volume/data-1", "file_mode=/etc/secret-volume/data-1"))
		k.expectOutput("pod-secrets-"+uuid, "secret-volume-test", regexp.QuoteMeta(`content of file "/etc/secret-volume/data-1": value-1`),
			regexp.QuoteMeta(`mode of file "/etc/secret-volume/data-1": -rw-r--r--`))
	}},
	{"SecretVolumeMultiple", "storage/secrets_volume.go", "Secrets should be consumable in multiple volumes in a pod [NodeConformance] [Conformance]", func(k *kcase) {
		name := "secret-test-" + uuid
		k.create(secretYAML(name, dataObject))
		k.create(pod("pod-secrets-"+uuid, "", `restartPolicy: Never
volumes:
- {name: secret-volume-1, secret: {secretName: `+name+`}}
- {name: secret-volume-2, secret: {secretName: `+name+`}}
containers:
- name: secret-volume-test
  image: debian
  command: ["/bin/sh", "-c", `+fmt.Sprintf("%q", mounttest("file_content=/etc/secret-volume/data-1", "file_mode=/etc/secret-volume/data-1"))+`]
  volumeMounts:
  - {name: secret-volume-1, mountPath: /etc/secret-volume, readOnly: true}
  - {name: secret-volume-2, mountPath: /etc/secret-volume-2, readOnly: true}`))
		k.expectOutput("pod-secrets-"+uuid, "secret-volume-test", regexp.QuoteMeta(`content of file "/etc/secret-volume/data-1": value-1`),
			regexp.QuoteMeta(`mode of file "/etc/secret-volume/data-1": -rw-r--r--`))
	}},
	{"SecretVolumeOptionalUpdates", "storage/secrets_volume.go", "Secrets optional updates should be reflected in volume [NodeConformance] [Conformance]", func(k *kcase) {
		del, upd, create := "s-test-opt-del-"+uuid, "s-test-opt-upd-"+uuid, "s-test-opt-create-"+uuid
		k.create(secretYAML(del, "data: {data-1: dmFsdWUtMQ==}"))
		k.create(secretYAML(upd, "data: {data-1: dmFsdWUtMQ==}"))
		loop := func(path string) string { return fmt.Sprintf("%q", mounttest("file_content_in_loop="+path)) }
		k.create(pod("pod-secrets-"+uuid, "", `restartPolicy: Never
volumes:
- {name: deletes-volume, secret: {secretName: `+del+`, optional: true}}
- {name: updates-volume, secret: {secretName: `+upd+`, optional: true}}
- {name: creates-volume, secret: {secretName: `+create+`, optional: true}}
containers:
- {name: dels-volume-test, image: debian, command: ["/bin/sh", "-c", `+loop("/etc/secret-volumes/delete/data-1")+`], volumeMounts: [{name: deletes-volume, mountPath: /etc/secret-volumes/delete, readOnly: true}]}
- {name: upds-volume-test, image: debian, command: ["/bin/sh", "-c", `+loop("/etc/secret-volumes/update/data-3")+`], volumeMounts: [{name: updates-volume, mountPath: /etc/secret-volumes/update, readOnly: true}]}
- {name: creates-volume-test, image: debian, command: ["/bin/sh", "-c", `+loop("/etc/secret-volumes/create/data-1")+`], volumeMounts: [{name: creates-volume, mountPath: /etc/secret-volumes/create, readOnly: true}]}`))
		k.waitPhase("pod-secrets-"+uuid, "Running")
		k.eventuallyLogHas("pod-secrets-"+uuid, "creates-volume-test", "Error reading file /etc/secret-volumes/create/data-1")
		k.eventuallyLogHas("pod-secrets-"+uuid, "upds-volume-test", "Error reading file /etc/secret-volumes/update/data-3")
		k.eventuallyLogHas("pod-secrets-"+uuid, "dels-volume-test", "value-1")
		k.kubectl("delete", "secret", del)
		k.objects("replace", k.ns, secretYAML(upd, "data: {data-3: dmFsdWUtMw==}"))
		k.create(secretYAML(create, "data: {data-1: dmFsdWUtMQ==}"))
		k.eventuallyLogHas("pod-secrets-"+uuid, "creates-volume-test", "value-1")
		k.eventuallyLogHas("pod-secrets-"+uuid, "upds-volume-test", "value-3")
		k.eventuallyLogHas("pod-secrets-"+uuid, "dels-volume-test", "Error reading file /etc/secret-volumes/delete/data-1")
	}},
	secretVolume.missingCase("SecretVolumeMissing", "Should fail non-optional pod creation due to secret object does not exist [Slow]", ""),
	secretVolume.missingCase("SecretVolumeMissingKey", "Should fail non-optional pod creation due to the key in the secret object does not exist [Slow]", "data_4"),

	// downwardapi_volume.go
	downwardCase("DownwardVolumePodname", "should provide podname only [NodeConformance] [Conformance]", "{path: podname, fieldRef: {fieldPath: metadata.name}}", "", "file_content=/etc/podinfo/podname", "downwardapi-volume-"+uuid+`\n`),
	downwardCase("DownwardVolumeDefaultMode", "should set DefaultMode on files [LinuxOnly] [NodeConformance] [Conformance]", "{path: podname, fieldRef: {fieldPath: metadata.name}}", "defaultMode: 0400", "file_mode=/etc/podinfo/podname", regexp.QuoteMeta(`mode of file "/etc/podinfo/podname": -r--------`)),
	downwardCase("DownwardVolumeItemMode", "should set mode on item file [LinuxOnly] [NodeConformance] [Conformance]", "{path: podname, fieldRef: {fieldPath: metadata.name}, mode: 0400}", "", "file_mode=/etc/podinfo/podname", regexp.QuoteMeta(`mode of file "/etc/podinfo/podname": -r--------`)),
	downwardCase("DownwardVolumeDefaultCPULimit", "should provide node allocatable (cpu) as default cpu limit if the limit is not set [NodeConformance] [Conformance]", resourceItems, "", "file_content=/etc/podinfo/cpu_limit", "[1-9]"),
	downwardCase("DownwardVolumeDefaultMemoryLimit", "should provide node allocatable (memory) as default memory limit if the limit is not set [NodeConformance] [Conformance]", resourceItems, "", "file_content=/etc/podinfo/memory_limit", "[1-9]"),
	downwardResourcesCase("DownwardVolumeCPULimit", "should provide container's cpu limit [NodeConformance] [Conformance]", "cpu_limit", "2"),
	downwardResourcesCase("DownwardVolumeMemoryLimit", "should provide container's memory limit [NodeConformance] [Conformance]", "memory_limit", "67108864"),
	downwardResourcesCase("DownwardVolumeCPURequest", "should provide container's cpu request [NodeConformance] [Conformance]", "cpu_request", "1"),
	downwardResourcesCase("DownwardVolumeMemoryRequest", "should provide container's memory request [NodeConformance] [Conformance]", "memory_request", "33554432"),
	{"DownwardVolumeLabelsUpdate", "storage/downwardapi_volume.go", "Downward API volume should update labels on modification [NodeConformance] [Conformance]", func(k *kcase) {
		name := "labelsupdate" + uuid
		k.create(strings.Replace(downwardPod(name, "{path: labels, fieldRef: {fieldPath: metadata.labels}}", "", mounttest("file_content_in_loop=/etc/podinfo/labels")),
			"labels: {}", "labels: {key1: value1, key2: value2}", 1))
		k.waitPhase(name, "Running")
		k.eventuallyLogHas(name, "client-container", `key1="value1"`)
		k.kubectl("label", "pod", name, "key3=value3")
		k.eventuallyLogHas(name, "client-container", `key3="value3"`)
	}},

	// projected_configmap.go, projected_secret.go, projected_downwardapi.go,
	// projected_combined.go
	projectedConfigMapVolume.mounttestCase("ProjectedConfigMap", "should be consumable from pods in volume [NodeConformance] [Conformance]", false, "", ""),
	projectedSecretVolume.mounttestCase("ProjectedSecret", "should be consumable from pods in volume [NodeConformance] [Conformance]", false, "", ""),
	{"ProjectedDownwardPodname", "storage/projected_downwardapi.go", "Projected downwardAPI should provide podname only [NodeConformance] [Conformance]", func(k *kcase) {
		name := "downwardapi-volume-" + uuid
		k.create(strings.Replace(downwardPod(name, "{path: podname, fieldRef: {fieldPath: metadata.name}}", "", mounttest("file_content=/etc/podinfo/podname")),
			"downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}", "projected: {sources: [{downwardAPI: {items: [{path: podname, fieldRef: {fieldPath: metadata.name}}]}}]}", 1))
		k.expectOutput(name, "client-container", name+`\n`)
	}},
	{"ProjectedCombined", "storage/projected_combined.go", "Projected combined should project all components that make up the projection API [Projection] [NodeConformance] [Conformance]", func(k *kcase) {
		cm, secret, name := "configmap-projected-all-test-volume-"+uuid, "secret-projected-all-test-volume-"+uuid, "projected-volume-"+uuid
		k.create(configMapYAML(cm, "data: {configmap-data: configmap-value-1}"))
		k.create(secretYAML(secret, "data: {secret-data: "+base64.StdEncoding.EncodeToString([]byte("secret-value-1"))+"}"))
		k.create(pod(name, "", `restartPolicy: Never
volumes:
- name: podinfo
  projected:
    sources:
    - downwardAPI: {items: [{path: podname, fieldRef: {apiVersion: v1, fieldPath: metadata.name}}]}
    - secret: {name: `+secret+`, items: [{key: secret-data, path: secret-data}]}
    - configMap: {name: `+cm+`, items: [{key: configmap-data, path: configmap-data}]}
containers:
- name: projected-all-volume-test
  image: debian
  command: ["sh", "-c", "cat /all/podname && cat /all/secret-data && cat /all/configmap-data"]
  volumeMounts: [{name: podinfo, mountPath: /all, readOnly: false}]`))
		k.expectOutput(name, "projected-all-volume-test", name, "secret-value-1", "configmap-value-1")
	}},

	// common/node configmap.go and secrets.go: the environment
	envCase("ConfigMapEnvVar", "configmap.go", "ConfigMap should be consumable via environment variable [NodeConformance] [Conformance]",
		configMapYAML("configmap-test-"+uuid, dataObject), "pod-configmaps-"+uuid, "env-test", `["sh", "-c", "env"]`,
		"env: [{name: CONFIG_DATA_1, valueFrom: {configMapKeyRef: {name: configmap-test-"+uuid+", key: data-1}}}]", "CONFIG_DATA_1=value-1"),
	// The envFrom cases' busybox sh -c env shows data-1; the host's sh
	// (dash) drops a variable whose name is not a shell name, so env runs
	// alone.
	envCase("ConfigMapEnvFrom", "configmap.go", "ConfigMap should be consumable via the environment [NodeConformance] [Conformance]",
		configMapYAML("configmap-test-"+uuid, dataObject), "pod-configmaps-"+uuid, "env-test", `["env"]`,
		"envFrom: [{configMapRef: {name: configmap-test-"+uuid+"}}, {prefix: p-, configMapRef: {name: configmap-test-"+uuid+"}}]", envFromData...),
	envCase("SecretEnvVar", "secrets.go", "Secrets should be consumable from pods in env vars [NodeConformance] [Conformance]",
		secretYAML("secret-test-"+uuid, dataObject), "pod-secrets-"+uuid, "secret-env-test", `["sh", "-c", "env"]`,
		"env: [{name: SECRET_DATA, valueFrom: {secretKeyRef: {name: secret-test-"+uuid+", key: data-1}}}]", "SECRET_DATA=value-1"),
	envCase("SecretEnvFrom", "secrets.go", "Secrets should be consumable via the environment [NodeConformance] [Conformance]",
		secretYAML("secret-test-"+uuid, dataObject), "pod-configmaps-"+uuid, "env-test", `["env"]`,
		"envFrom: [{secretRef: {name: secret-test-"+uuid+"}}, {prefix: p-, secretRef: {name: secret-test-"+uuid+"}}]", envFromData...),
}

// envFromData is what the envFrom cases find in the environment: every
// key of dataObject, then each with the prefix p-.
var envFromData = []string{"data-1=value-1", "data-2=value-2", "data-3=value-3", "p-data-1=value-1", "p-data-2=value-2", "p-data-3=value-3"}

// envCase is a case of configmap.go or secrets.go: the object (YAML) and
// a Pod that never restarts whose container runs command (a YAML list)
// with fields (YAML), its log matching patterns.
func envCase(name, file, it, object, podName, container, command, fields string, patterns ...string) ported {
	return ported{name, file, it, func(k *kcase) {
		k.create(object)
		k.create(pod(podName, "", fmt.Sprintf(`restartPolicy: Never
containers:
- name: %s
  image: debian
  command: %s
  %s`, container, command, fields)))
		k.expectOutput(podName, container, patterns...)
	}}
}

// dataObject is the data of the ConfigMaps and Secrets of the cases:
// data-1: value-1 to data-3: value-3 (a Secret's in base64).
const dataObject = "data: {data-1: value-1, data-2: value-2, data-3: value-3}"

func configMapYAML(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" + data + "\n"
}

// secretYAML is Secret name with data, whose values are written as plain
// text (stringData) when data is dataObject.
func secretYAML(name, data string) string {
	if data == dataObject {
		data = "stringData: {data-1: value-1, data-2: value-2, data-3: value-3}"
	}
	return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + "}\n" + data + "\n"
}

// mounttest is the shell script that prints what agnhost's mounttest
// prints for flags ("file_content=/path"), in mounttest's order of flags.
func mounttest(flags ...string) string {
	var b strings.Builder
	b.WriteString("umask 0; ")
	for _, f := range flags {
		name, p, _ := strings.Cut(f, "=")
		switch name {
		case "fs_type":
			fmt.Fprintf(&b, `echo "mount type of \"%s\": $(stat -f -c %%T %s)"; `, p, p)
		case "new_file_0644", "new_file_0666", "new_file_0777":
			fmt.Fprintf(&b, `echo "mount-tester new file" > %s && chmod %s %s; `, p, strings.TrimPrefix(name, "new_file_"), p)
		case "file_mode":
			fmt.Fprintf(&b, `echo "mode of file \"%s\": $(stat -L -c %%A %s)"; `, p, p)
		case "file_perm":
			fmt.Fprintf(&b, `echo "perms of file \"%s\": -$(stat -L -c %%A %s | cut -c2-)"; `, p, p)
		case "file_content":
			fmt.Fprintf(&b, `echo "content of file \"%s\": $(cat %s)"; `, p, p)
		case "file_content_in_loop":
			fmt.Fprintf(&b, `while true; do if c=$(cat %s 2>/dev/null); then echo "content of file \"%s\": $c"; else echo "Error reading file %s"; fi; sleep 1; done`, p, p, p)
		default:
			panic("mounttest: no flag " + name)
		}
	}
	return b.String()
}

// mounttestPod is a Pod that never restarts with volume vol (source:
// its YAML flow map) mounted read-only at path in container, which runs
// mounttest with flags, and more of the Pod's spec (YAML, or empty).
func mounttestPod(name, container, vol, path, source, spec string, flags ...string) string {
	return pod(name, "", fmt.Sprintf(`%s
restartPolicy: Never
volumes: [{name: %s, %s}]
containers:
- name: %s
  image: debian
  command: ["/bin/sh", "-c", %q]
  volumeMounts: [{name: %s, mountPath: %s, readOnly: true}]`, spec, vol, source, container, mounttest(flags...), vol, path))
}

// emptyDirCase is empty_dir.go's doTest0644/0666/0777 or doTestVolumeMode:
// testPodWithVolume's Pod runs mounttest with flags as uid (0: the
// default user) on an emptyDir of medium; the node refuses its
// seLinuxOptions.
func emptyDirCase(name, it string, uid int, medium string, flags ...string) ported {
	return ported{name, "storage/empty_dir.go", "EmptyDir volumes " + it, func(k *kcase) {
		user := ""
		if uid != 0 {
			user = fmt.Sprintf(", runAsUser: %d", uid)
		}
		k.create(pod("pod-"+uuid, "", fmt.Sprintf(`securityContext: {seLinuxOptions: {level: s0}%s}
restartPolicy: Never
volumes: [{name: test-volume, emptyDir: {medium: %q}}]
containers:
- name: test-container
  image: debian
  command: ["/bin/sh", "-c", %q]
  volumeMounts: [{name: test-volume, mountPath: /test-volume}]`, user, medium, mounttest(flags...))))
		k.refused("pod-"+uuid, "spec.securityContext: seLinuxOptions, seccompProfile, appArmorProfile and windowsOptions are not supported")
	}}
}

// emptyDirFile are the flags of doTest0644 (0666, 0777).
func emptyDirFile(mode string) []string {
	return []string{"fs_type=/test-volume", "new_file_" + mode + "=/test-volume/test-file", "file_perm=/test-volume/test-file"}
}

// A keyVolume is how configmap_volume.go (configMapVolume) and
// secrets_volume.go (secretVolume) make the Pods of their
// doConfigMapE2EWithoutMappings and doConfigMapE2EWithMappings (and
// doSecretE2E...): the object of dataObject, its volume at /etc/DIR read
// by mounttest; with mappings, one key at a path of its own.
type keyVolume struct {
	kind                       string // as the node names it: configmap, secret
	file, describe             string // where the cases are, and their Describe
	object, mapObject          string // the object's name, with mappings
	source                     string // the volume's source, %s its name and more fields: "configMap: {name: %s}"
	yaml                       func(name, data string) string
	pod, container, vol, mount string
	key, path, value           string // the mapped key, its path and value
}

var (
	configMapVolume = keyVolume{"configmap", "storage/configmap_volume.go", "ConfigMap ", "configmap-test-volume-" + uuid, "configmap-test-volume-map-" + uuid,
		"configMap: {name: %s}", configMapYAML, "pod-configmaps-" + uuid, "agnhost-container", "configmap-volume", "/etc/configmap-volume", "data-2", "path/to/data-2", "value-2"}
	secretVolume = keyVolume{"secret", "storage/secrets_volume.go", "Secrets ", "secret-test-" + uuid, "secret-test-map-" + uuid,
		"secret: {secretName: %s}", secretYAML, "pod-secrets-" + uuid, "secret-volume-test", "secret-volume", "/etc/secret-volume", "data-1", "new-path-data-1", "value-1"}
	projectedConfigMapVolume = keyVolume{"configmap", "storage/projected_configmap.go", "Projected configMap ", "projected-configmap-test-volume-" + uuid, "projected-configmap-test-volume-map-" + uuid,
		"projected: {sources: [{configMap: {name: %s}}]}", configMapYAML, "pod-projected-configmaps-" + uuid, "agnhost-container", "projected-configmap-volume", "/etc/projected-configmap-volume", "data-2", "path/to/data-2", "value-2"}
	projectedSecretVolume = keyVolume{"secret", "storage/projected_secret.go", "Projected secret ", "projected-secret-test-" + uuid, "projected-secret-test-map-" + uuid,
		"projected: {sources: [{secret: {name: %s}}]}", secretYAML, "pod-projected-secrets-" + uuid, "projected-secret-volume-test", "projected-secret-volume", "/etc/projected-secret-volume", "data-1", "new-path-data-1", "value-1"}
)

// mounttestCase is the case whose Pod reads its key's content and mode,
// as uid 1000 if asUser, with the volume's defaultMode, and with
// mappings if itemMode is not "" ("default" for an item without mode).
func (kv keyVolume) mounttestCase(name, it string, asUser bool, defaultMode, itemMode string) ported {
	return ported{name, kv.file, kv.describe + it, func(k *kcase) {
		object, file, value := kv.object, kv.mount+"/data-1", "value-1"
		fields := object
		if defaultMode != "" {
			fields += ", defaultMode: " + defaultMode
		}
		mode := cmp.Or(defaultMode, "0644")
		if itemMode != "" {
			object, file, value = kv.mapObject, kv.mount+"/"+kv.path, kv.value
			fields = object + ", items: [{key: " + kv.key + ", path: " + kv.path
			if itemMode != "default" {
				fields += ", mode: " + itemMode
				mode = itemMode
			}
			fields += "}]"
		}
		spec := ""
		if kv.kind == "configmap" {
			spec = "terminationGracePeriodSeconds: 1"
		}
		if asUser {
			spec += "\nsecurityContext: {runAsUser: 1000}"
		}
		k.create(kv.yaml(object, dataObject))
		k.create(mounttestPod(kv.pod, kv.container, kv.vol, kv.mount, fmt.Sprintf(kv.source, fields), spec, "file_content="+file, "file_mode="+file))
		k.expectOutput(kv.pod, kv.container, regexp.QuoteMeta(`content of file "`+file+`": `+value), fileModeRegex(file, mode))
	}}
}

// missingCase is the case of a Pod whose volume is the object
// (cm-test-opt-create-..., s-test-opt-create-...), not optional, that does
// not exist, or, if key is not "", whose item names a key the object has
// not: it stays Pending.
func (kv keyVolume) missingCase(name, it, key string) ported {
	return ported{name, kv.file, kv.describe + it, func(k *kcase) {
		object, container, vol := "cm-test-opt-create-"+uuid, "agnhost-container", "createcm-volume"
		if kv.kind == "secret" {
			object, container, vol = "s-test-opt-create-"+uuid, "creates-volume-test", "creates-volume"
		}
		mount := "/etc/" + kv.vol + "s/create"
		fields, what := object+", optional: false", kv.kind+` "`+object+`"`
		if key != "" {
			k.create(kv.yaml(object, dataObject))
			fields += ", items: [{key: " + key + ", path: path/to/data-4}]"
			what = `key "` + key + `" of ` + what
		}
		k.create(mounttestPod(kv.pod, container, vol, mount, fmt.Sprintf(kv.source, fields), "", "file_content_in_loop="+mount+"/data-1"))
		k.staysPending(kv.pod, what)
	}}
}

// fsGroupCase is the case whose Pod reads its key as uid 1000 with
// fsGroup 1001 and defaultMode 0440: the node refuses fsGroup.
func (kv keyVolume) fsGroupCase(name, it string) ported {
	return ported{name, kv.file, kv.describe + it, func(k *kcase) {
		k.create(kv.yaml(kv.object, dataObject))
		k.create(mounttestPod(kv.pod, kv.container, kv.vol, kv.mount, fmt.Sprintf(kv.source, kv.object+", defaultMode: 0440"), "securityContext: {runAsUser: 1000, fsGroup: 1001}",
			"file_content="+kv.mount+"/data-1", "file_mode="+kv.mount+"/data-1"))
		k.refused(kv.pod, "spec.securityContext.fsGroup: not supported")
	}}
}

// fileModeRegex is the cases' getFileModeRegex: mounttest's line for
// file's mode (octal), as Go prints a file mode.
func fileModeRegex(file, mode string) string {
	m, err := strconv.ParseUint(mode, 8, 32)
	if err != nil {
		panic(err)
	}
	return regexp.QuoteMeta(fmt.Sprintf("mode of file %q: %v", file, os.FileMode(m)))
}

// downwardPod is downwardapi_volume.go's downwardAPIVolumeBasePod:
// client-container runs script with the downward API volume podinfo
// (items, and more of its source: defaultMode) at /etc/podinfo.
func downwardPod(name, items, more, script string) string {
	if more != "" {
		more = ", " + more
	}
	return pod(name, "", fmt.Sprintf(`restartPolicy: Never
volumes: [{name: podinfo, downwardAPI: {items: [%s]%s}}]
containers:
- name: client-container
  image: debian
  command: ["/bin/sh", "-c", %q]
  volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]`, items, more, script))
}

// resourceItems are downwardAPIVolumeBasePod's resource items, with no
// divisor (1: CPU in whole cores rounded up, memory in bytes).
const resourceItems = `{path: cpu_limit, resourceFieldRef: {containerName: client-container, resource: limits.cpu}},
  {path: cpu_request, resourceFieldRef: {containerName: client-container, resource: requests.cpu}},
  {path: memory_limit, resourceFieldRef: {containerName: client-container, resource: limits.memory}},
  {path: memory_request, resourceFieldRef: {containerName: client-container, resource: requests.memory}}`

// downwardCase runs mounttest with flag in downwardPod and expects the
// pattern in its log.
func downwardCase(name, it, items, more, flag, pattern string) ported {
	return ported{name, "storage/downwardapi_volume.go", "Downward API volume " + it, func(k *kcase) {
		k.create(downwardPod("downwardapi-volume-"+uuid, items, more, mounttest(flag)))
		k.expectOutput("downwardapi-volume-"+uuid, "client-container", pattern)
	}}
}

// downwardResourcesCase is downwardAPIVolumeForContainerResources read at
// file, whose content must be want (the limits and requests with divisor
// 1: CPU rounded up to whole cores, memory in bytes).
func downwardResourcesCase(name, it, file, want string) ported {
	return ported{name, "storage/downwardapi_volume.go", "Downward API volume " + it, func(k *kcase) {
		k.create(strings.Replace(downwardPod("downwardapi-volume-"+uuid, resourceItems, "", mounttest("file_content=/etc/podinfo/"+file)),
			"  volumeMounts:", "  resources: {requests: {cpu: 250m, memory: 32Mi}, limits: {cpu: 1250m, memory: 64Mi}}\n    volumeMounts:", 1))
		k.expectOutput("downwardapi-volume-"+uuid, "client-container", fmt.Sprintf(`(?m)^content of file "/etc/podinfo/%s": %s$`, file, want))
	}}
}

// staysPending checks that Pod name waits, Pending, its container
// ContainerCreating, for what (the node's message), as the kubelet keeps a
// Pod whose volume cannot be set up, and is still Pending after the 2
// minutes of observe (the cases watch it for the framework's PodStart, 5).
func (k *kcase) staysPending(name, what string) {
	k.t.Helper()
	waiting := func(p *k8sPod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == "Pending" && len(cs) == 1 && cs[0].State.Waiting != nil &&
			cs[0].State.Waiting.Reason == "ContainerCreating" && strings.Contains(cs[0].State.Waiting.Message, what)
	}
	k.waitFor(name, podStartTimeout, "to wait for "+what, func(p *k8sPod) (bool, error) { return waiting(p), nil })
	for end := time.Now().Add(observe); time.Now().Before(end); time.Sleep(5 * time.Second) {
		if p := k.get(name); !waiting(p) {
			k.t.Fatalf("pod %s: want Pending, ContainerCreating, waiting for %s; status %s", name, what, p)
		}
	}
}

// objects runs kubectl verb (create, replace) on the objects of yaml in
// namespace ns.
func (k *kcase) objects(verb, ns, yaml string) {
	k.t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", k.c.kubeconfig, "-n", ns, verb, "-f", "-")
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s\n%s", verb, err, out, yaml)
	}
}

// eventuallyLogHas waits, as the cases' gomega.Eventually(pollLogs) do,
// for the container's log to hold want.
func (k *kcase) eventuallyLogHas(name, container, want string) {
	k.t.Helper()
	var out string
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(2 * time.Second) {
		if out = k.logsOf(name, container); strings.Contains(out, want) {
			return
		}
	}
	k.t.Fatalf("log of %s/%s does not hold %q: %q", name, container, want, out)
}
