// Package e2e runs unitrun-node against a real API server: etcd and
// kube-apiserver on loopback ports, unitrun-node on an embedded systemd
// manager of its own, and the kubectl on $PATH as a user would run it
// (the cases' polls of their Pods read the API server directly).
// It runs only when UNITRUN_E2E_BIN names a directory holding etcd,
// kube-apiserver, unitrun and unitrun-node (build.sh builds them; run.sh
// builds them and runs this test).
package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/node/internal/testca"
)

const nodeName = "e2e-unitrun"

// cluster is one API server and the node joined to it.
type cluster struct {
	t          *testing.T
	bin, dir   string
	kubeconfig string
	embedded   string // the embedded manager's directory
	// api reads objects from the API server as the kubeconfig's user,
	// for the cases' polls ([cluster.getRaw]).
	api           *http.Client
	server, token string
}

func TestEndToEnd(t *testing.T) {
	bin := os.Getenv("UNITRUN_E2E_BIN")
	if bin == "" {
		t.Skip("UNITRUN_E2E_BIN is not set (node/e2e/run.sh builds the binaries and sets it)")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl is not on $PATH")
	}
	// etcd's data, the node's state and the certificates on a tmpfs where
	// there is one, as the unit tests keep the pods' state
	// (systemdtest.RunDir): both fsync each write, and a CI machine's
	// shared disk can stall an fsync for seconds, which then shows as a
	// slow API server and late container records, not as the node's.
	c := &cluster{t: t, bin: bin, dir: systemdtest.RunDir(t)}
	c.embedded = fmt.Sprintf("/run/unitrun-e2e-%d/manager", os.Getpid())
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(bin, "unitrun"), "manager", "stop")
		cmd.Env = append(os.Environ(), "UNITRUN_EMBEDDED_DIR="+c.embedded)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("unitrun manager stop: %v\n%s", err, out)
		}
		os.RemoveAll(filepath.Dir(c.embedded))
	})
	c.start()
	t.Run("ExitCodesLogsDelete", c.exitCodesLogsDelete)
	t.Run("ApplyToRunning", c.applyToRunning)
	t.Run("StatusAndEnvironment", c.statusAndEnvironment)
	t.Run("ActiveDeadline", c.activeDeadline)
	t.Run("Capabilities", c.capabilities)
	t.Run("ServiceAccountToken", c.serviceAccountToken)
	t.Run("AsTheKubelet", c.asTheKubelet)
	t.Run("DeleteKilled", c.deleteKilled)
	t.Run("PortForward", c.portForward)
	t.Run("DNSPolicies", c.dnsPolicies)
	t.Run("Stats", c.stats)
	t.Run("RegistryImages", c.registryImages)
	t.Run("Ported", c.ported)
}

// start generates the keys, starts etcd, kube-apiserver and unitrun-node,
// and waits for the node to be Ready.
func (c *cluster) start() {
	t := c.t
	// One cluster CA, as kubeadm makes it: it signs the API server's
	// serving certificate, which the kubeconfig trusts, and its kubelet
	// client certificate, which the node then accepts without
	// --client-ca-file.
	ca, caKey := testca.New(t, "unitrun-e2e-ca")
	c.writeCert("apiserver", ca, caKey, net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1))
	c.writeCert("apiserver-kubelet-client", ca, caKey)
	c.write("ca.crt", pemBlock("CERTIFICATE", ca.Raw))
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c.write("sa.key", pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa)))
	pub, _ := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	c.write("sa.pub", pemBlock("PUBLIC KEY", pub))
	token := rand.Text()
	c.write("tokens.csv", []byte(token+",admin,admin,system:masters\n"))

	etcdPort, etcdPeer, apiPort, kubeletPort := freePort(t), freePort(t), freePort(t), freePort(t)
	c.daemon("etcd", "--name", "e2e", "--data-dir", c.path("etcd"),
		"--listen-client-urls", "http://127.0.0.1:"+etcdPort, "--advertise-client-urls", "http://127.0.0.1:"+etcdPort,
		"--listen-peer-urls", "http://127.0.0.1:"+etcdPeer, "--initial-advertise-peer-urls", "http://127.0.0.1:"+etcdPeer,
		"--initial-cluster", "e2e=http://127.0.0.1:"+etcdPeer)
	c.daemon("kube-apiserver", "--etcd-servers", "http://127.0.0.1:"+etcdPort,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", apiPort,
		"--tls-cert-file", c.path("apiserver.crt"), "--tls-private-key-file", c.path("apiserver.key"),
		"--token-auth-file", c.path("tokens.csv"),
		"--authorization-mode", "AlwaysAllow",
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", c.path("sa.pub"),
		"--service-account-signing-key-file", c.path("sa.key"), "--service-cluster-ip-range", "10.0.0.0/24",
		"--kubelet-client-certificate", c.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key", c.path("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority", c.path("ca.crt"),
		"--kubelet-preferred-address-types", "InternalIP")
	c.server, c.token = "https://127.0.0.1:"+apiPort, token
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	c.api = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: time.Minute}
	c.kubeconfig = c.path("kubeconfig")
	c.write("kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "https://127.0.0.1:%s", certificate-authority-data: %s}
users:
- name: admin
  user: {token: %q}
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, apiPort, base64.StdEncoding.EncodeToString(pemBlock("CERTIFICATE", ca.Raw)), token)))
	c.eventually(90*time.Second, "the API server is ready", func() error {
		_, err := c.kubectl("get", "--raw", "/readyz")
		return err
	})
	if err := c.namespace("default"); err != nil {
		t.Fatal(err)
	}
	// As the README joins a node, with the kubeconfig alone: no
	// --client-ca-file, and no serving certificate: it asks for one.
	c.daemon("unitrun-node", "--kubeconfig", c.kubeconfig, "--node-name", nodeName,
		"--node-ip", "127.0.0.1", "--listen", "127.0.0.1:"+kubeletPort,
		"--state-dir", c.path("state"), "--unitrun", filepath.Join(c.bin, "unitrun"), "--manager", "embedded",
		"--image", "debian=host", "--image-dir", c.path("images"), "--allow-privileged")
	// There is no kube-controller-manager: the test approves and signs
	// the node's kubelet-serving CSR with the cluster CA, as an approver
	// and the signer would. The API server verifies the node's
	// certificate against that CA (--kubelet-certificate-authority), so
	// every kubectl logs and port-forward of the test goes through a
	// verified connection.
	c.signServingCSR(ca, caKey)
	c.eventually(60*time.Second, "the kubelet API serves the certificate the CA signed", func() error {
		conn, err := tls.Dial("tcp", "127.0.0.1:"+kubeletPort, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
		if err != nil {
			return err
		}
		return conn.Close()
	})
	c.eventually(60*time.Second, "the node is registered", func() error {
		_, err := c.kubectl("get", "node", nodeName)
		return err
	})
	c.mustKubectl("wait", "--for=condition=Ready", "node/"+nodeName, "--timeout=60s")
}

// signServingCSR approves the node's kubernetes.io/kubelet-serving
// CertificateSigningRequest, which must ask for what a kubelet asks for
// (CN system:node:NAME, O system:nodes, the node's name and IP), and
// issues it: a certificate ca signs, set in the CSR's status through the
// API.
func (c *cluster) signServingCSR(ca *x509.Certificate, caKey *ecdsa.PrivateKey) {
	t := c.t
	var csr struct {
		Metadata struct{ Name string }
		Spec     struct {
			Request    []byte
			SignerName string
		}
	}
	c.eventually(60*time.Second, "the node's kubelet-serving CSR", func() error {
		var list struct{ Items []json.RawMessage }
		out, err := c.kubectl("get", "csr", "-o", "json")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return err
		}
		for _, raw := range list.Items {
			if err := json.Unmarshal(raw, &csr); err == nil && csr.Spec.SignerName == "kubernetes.io/kubelet-serving" {
				return nil
			}
		}
		return errors.New("none yet")
	})
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		t.Fatalf("CSR %s: no PEM request", csr.Metadata.Name)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.CommonName != "system:node:"+nodeName || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) ||
		!slices.Equal(req.DNSNames, []string{nodeName}) || len(req.IPAddresses) != 1 || !req.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("CSR %s asks for %q %v %v %v; want a kubelet's", csr.Metadata.Name, req.Subject.CommonName, req.Subject.Organization, req.DNSNames, req.IPAddresses)
	}
	c.mustKubectl("certificate", "approve", csr.Metadata.Name)
	der := testca.Issue(t, ca, caKey, req, 24*time.Hour)
	var obj map[string]any
	if err := json.Unmarshal([]byte(c.mustKubectl("get", "csr", csr.Metadata.Name, "-o", "json")), &obj); err != nil {
		t.Fatal(err)
	}
	obj["status"].(map[string]any)["certificate"] = base64.StdEncoding.EncodeToString(pemBlock("CERTIFICATE", der))
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	c.write("csr-status.json", data)
	c.mustKubectl("replace", "--raw", "/apis/certificates.k8s.io/v1/certificatesigningrequests/"+csr.Metadata.Name+"/status", "-f", c.path("csr-status.json"))
}

// exitCodesLogsDelete applies a Pod whose init container exits 0 and whose
// app exits 3, and checks the exit codes kubectl shows, the app's log, and
// that a delete leaves no unit of the pod on the manager.
func (c *cluster) exitCodesLogsDelete(t *testing.T) {
	c.apply(t, podYAML("exits", "exits",
		[]string{"echo init done; exit 0"},
		[]string{"echo hello from app; echo to stderr >&2; exit 3"}))
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Failed", "pod/exits", "--timeout=90s")
	var pod struct {
		Status struct {
			InitContainerStatuses []containerStatus
			ContainerStatuses     []containerStatus
		}
	}
	if err := json.Unmarshal([]byte(c.mustKubectl("get", "pod", "exits", "-o", "json")), &pod); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		list   []containerStatus
		code   int
		reason string
	}{{pod.Status.InitContainerStatuses, 0, "Completed"}, {pod.Status.ContainerStatuses, 3, "Error"}} {
		if len(w.list) != 1 || w.list[0].State.Terminated == nil || w.list[0].RestartCount != 0 ||
			*w.list[0].State.Terminated != (terminated{ExitCode: w.code, Reason: w.reason, StartedAt: w.list[0].State.Terminated.StartedAt}) ||
			w.list[0].State.Terminated.StartedAt == "" {
			t.Errorf("container statuses %+v, want one terminated with exit code %d (%s), a start time and no restart", w.list, w.code, w.reason)
		}
	}
	for _, w := range []struct{ container, want string }{{"init", "init done"}, {"app", "hello from app"}} {
		if out := c.mustKubectl("logs", "exits", "-c", w.container); !strings.Contains(out, w.want) {
			t.Errorf("kubectl logs exits -c %s = %q, want %q in it", w.container, out, w.want)
		}
	}
	units := c.units(t)
	if !strings.Contains(units, "k8s-") {
		t.Errorf("before the delete the manager has no unit of the pod:\n%s", units)
	}
	// As a release installs it, the exit hook is beside the unitrun that
	// --unitrun names: the app's unit runs it at each exit.
	hook := filepath.Join(c.bin, "unitrun-hook")
	apps := 0
	for _, line := range strings.Split(units, "\n") {
		if unit, _, _ := strings.Cut(line, " "); strings.HasPrefix(unit, "unitrun-pod-k8s") && strings.HasSuffix(unit, "-app.service") {
			apps++
			if post := c.systemctl(t, "show", "--property", "ExecStopPost", unit); !strings.Contains(post, "path="+hook+" ;") {
				t.Errorf("app unit %s: %s; want the hook %s", unit, post, hook)
			}
		}
	}
	if apps != 1 {
		t.Errorf("%d units of container app among the manager's:\n%s", apps, units)
	}
	c.mustKubectl("delete", "pod", "exits", "--timeout=60s")
	c.eventually(30*time.Second, "no unit of the pod is left", func() error {
		if u := c.units(t); strings.Contains(u, "k8s-") {
			return fmt.Errorf("units left:\n%s", u)
		}
		return nil
	})
}

// applyToRunning times kubectl apply to every Pod's container running,
// for 1 Pod and for 20, with where the time goes, then times their delete.
func (c *cluster) applyToRunning(t *testing.T) {
	for _, n := range []int{1, 20} {
		var docs []string
		for i := range n {
			docs = append(docs, podYAML(fmt.Sprintf("sleep-%d-%d", n, i), strconv.Itoa(n), nil, []string{"exec sleep 600"}))
		}
		start, applied, tl := c.watchStarts(t, strconv.Itoa(n), n, strings.Join(docs, "---\n"))
		report(t, n, start, applied, tl)
		start = time.Now()
		throttled := c.deleteThrottled(t, "pod", "-l", fmt.Sprintf("batch=%d", n), "--timeout=180s")
		t.Logf("%d Pod(s): delete in %.2f s, kubectl's client-side rate limit holding its requests back %.2f s of it", n, time.Since(start).Seconds(), throttled.Seconds())
		c.reportDeletes(t, n, fmt.Sprintf("sleep-%d-", n), start)
	}
	c.eventually(30*time.Second, "no unit of a pod is left", func() error {
		if u := c.units(t); strings.Contains(u, "k8s-") {
			return fmt.Errorf("units left:\n%s", u)
		}
		return nil
	})
}

// statusAndEnvironment applies a Pod whose container prints its
// environment and writes its termination message: the Pod's hostIP and
// podIP are the node's, the environment holds the downward API's IPs, the
// kubernetes Service's variables and a Service link, HOSTNAME, and nothing
// of the manager's; the message is the terminated state's.
func (c *cluster) statusAndEnvironment(t *testing.T) {
	c.apply(t, `apiVersion: v1
kind: Service
metadata: {name: foo-service}
spec:
  ports: [{port: 8765}]
`)
	defer c.mustKubectl("delete", "service", "foo-service")
	pod := strings.Replace(podYAML("environ", "environ", nil, []string{"env; echo -n bye > /dev/termination-log"}), "]}\n",
		"], env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}, {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}]}\n", 1)
	c.apply(t, pod)
	defer c.mustKubectl("delete", "pod", "environ", "--timeout=60s")
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/environ", "--timeout=90s")
	got := c.mustKubectl("get", "pod", "environ", "-o", "jsonpath={.status.hostIP} {.status.podIP} {.status.containerStatuses[0].state.terminated.message}")
	if want := "127.0.0.1 127.0.0.1 bye"; got != want {
		t.Errorf("hostIP, podIP, termination message: %q, want %q", got, want)
	}
	env := map[string]string{}
	for _, line := range strings.Split(c.mustKubectl("logs", "environ"), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	host, _ := os.Hostname()
	for k, v := range map[string]string{
		"POD_IP": "127.0.0.1", "HOST_IP": "127.0.0.1", "HOSTNAME": host,
		"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "FOO_SERVICE_SERVICE_PORT": "8765",
	} {
		if env[k] != v {
			t.Errorf("$%s = %q, want %q", k, env[k], v)
		}
	}
	if env["FOO_SERVICE_SERVICE_HOST"] == "" {
		t.Errorf("no $FOO_SERVICE_SERVICE_HOST: %v", env)
	}
	for _, k := range []string{"MANAGERPID", "INVOCATION_ID", "SYSTEMD_UNIT_PATH", "SYSTEMD_GENERATOR_PATH", "XDG_RUNTIME_DIR"} {
		if v, ok := env[k]; ok {
			t.Errorf("$%s = %q: the manager's variable reached the container", k, v)
		}
	}
}

// activeDeadline applies a Pod that would sleep for 10 minutes with an
// activeDeadlineSeconds of 2: it fails with reason DeadlineExceeded.
func (c *cluster) activeDeadline(t *testing.T) {
	c.apply(t, strings.Replace(podYAML("deadline", "deadline", nil, []string{"exec sleep 600"}), "spec:\n", "spec:\n  activeDeadlineSeconds: 2\n", 1))
	defer c.mustKubectl("delete", "pod", "deadline", "--timeout=60s")
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Failed", "pod/deadline", "--timeout=90s")
	if got := c.mustKubectl("get", "pod", "deadline", "-o", "jsonpath={.status.reason}"); got != "DeadlineExceeded" {
		t.Errorf("reason %q, want DeadlineExceeded", got)
	}
}

// capabilities applies a Pod whose root container, not privileged, prints
// its effective capabilities: containerd's default set, without
// CAP_NET_ADMIN (12), with CAP_NET_BIND_SERVICE (10).
func (c *cluster) capabilities(t *testing.T) {
	c.apply(t, strings.Replace(podYAML("caps", "caps", nil, []string{"grep ^CapEff /proc/self/status"}), "]}\n",
		"], securityContext: {privileged: false}}\n", 1))
	defer c.mustKubectl("delete", "pod", "caps", "--timeout=60s")
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/caps", "--timeout=90s")
	out := c.mustKubectl("logs", "caps")
	_, hex, _ := strings.Cut(strings.TrimSpace(out), "\t")
	eff, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		t.Fatalf("kubectl logs caps = %q", out)
	}
	if eff&(1<<12) != 0 || eff&(1<<10) == 0 {
		t.Errorf("the container holds capabilities %#x, want CAP_NET_BIND_SERVICE and not CAP_NET_ADMIN", eff)
	}
}

// asTheKubelet applies a Pod as Kubernetes' docs write them and checks,
// through kubectl, what the kubelet would do with it: a container named
// with 55 characters runs; commands and exec probes by name are looked up
// in PATH, and one found nowhere ends its container with 127, StartError;
// the Pod is Running only once its container runs; a delete ends as soon
// as the container has ended on SIGTERM, not at the end of a 600 s grace
// period.
func (c *cluster) asTheKubelet(t *testing.T) {
	long := strings.Repeat("container-", 5) + "named"
	c.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: by-name}
spec:
  nodeName: %[1]s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 600
  tolerations:
  - {key: virtual-kubelet.io/provider, operator: Exists, effect: NoSchedule}
  containers:
  - name: %[2]s
    image: debian
    command: ["sh", "-c", "touch /tmp/unitrun-e2e-health; exec sleep 600"]
    readinessProbe:
      exec: {command: ["cat", "/tmp/unitrun-e2e-health"]}
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: not-found}
spec:
  nodeName: %[1]s
  restartPolicy: Never
  automountServiceAccountToken: false
  tolerations:
  - {key: virtual-kubelet.io/provider, operator: Exists, effect: NoSchedule}
  containers:
  - {name: app, image: debian, command: ["no-such-command-unitrun"]}
`, nodeName, long))
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/by-name", "--timeout=90s")
	var pod struct {
		Status struct {
			ContainerStatuses []struct {
				Name  string
				State struct {
					Running    *struct{ StartedAt string }
					Terminated *struct {
						ExitCode int
						Reason   string
						Message  string
					}
				}
			}
		}
	}
	get := func(name string) {
		t.Helper()
		if err := json.Unmarshal([]byte(c.mustKubectl("get", "pod", name, "-o", "json")), &pod); err != nil {
			t.Fatal(err)
		}
	}
	get("by-name")
	if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].Name != long || cs[0].State.Running == nil {
		t.Errorf("pod by-name Running with container statuses %+v, want %s running", cs, long)
	}
	c.mustKubectl("wait", "--for=condition=Ready", "pod/by-name", "--timeout=90s")
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Failed", "pod/not-found", "--timeout=90s")
	get("not-found")
	if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil ||
		cs[0].State.Terminated.ExitCode != 127 || cs[0].State.Terminated.Reason != "StartError" ||
		!strings.Contains(cs[0].State.Terminated.Message, "executable file not found in $PATH") {
		t.Errorf("pod not-found: container statuses %+v, want terminated 127, StartError, not found in $PATH", cs)
	}
	// Without the node's own removal, virtual-kubelet would keep the
	// object for the grace period, 600 s, and kubectl would give up.
	c.mustKubectl("delete", "pod", "by-name", "not-found", "--grace-period=600", "--timeout=60s")
}

// deleteKilled deletes, with a grace period of 1 s, a Pod whose container
// ignores SIGTERM and mounts a hostPath at a path that systemd makes on
// the host: the node kills the container at the kubelet's minimum of 2 s,
// and kubectl delete returns once the container's unit has stopped, its
// exit hooks (which systemd runs with the container's mounts) done, not at
// the grace period's end; the mount point, removed then, stays removed.
func (c *cluster) deleteKilled(t *testing.T) {
	mountPoint := filepath.Join(t.TempDir(), "mnt")
	c.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: killed}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  tolerations:
  - {key: virtual-kubelet.io/provider, operator: Exists, effect: NoSchedule}
  volumes: [{name: tmp, hostPath: {path: /tmp}}]
  containers:
  - name: app
    image: debian
    command: ["sh", "-c", "trap '' TERM; echo trapped; while sleep 0.1; do :; done"]
    volumeMounts: [{name: tmp, mountPath: %s}]
`, nodeName, mountPoint))
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/killed", "--timeout=90s")
	c.eventually(30*time.Second, "the container ignores SIGTERM", func() error {
		if out, _ := c.kubectl("logs", "killed"); !strings.Contains(out, "trapped") {
			return fmt.Errorf("its log: %q", out)
		}
		return nil
	})
	id := c.mustKubectl("get", "pod", "killed", "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	u, ok := strings.CutPrefix(id, "unitrun://")
	if !ok {
		t.Fatalf("container ID %q, want unitrun://UNIT", id)
	}
	show := func() string {
		cmd := exec.Command("systemctl", "--user", "show", "-p", "LoadState,ActiveState,SubState", "--value", u)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+c.embedded)
		out, _ := cmd.Output()
		return strings.Join(strings.Fields(string(out)), " ")
	}
	c.mustKubectl("delete", "pod", "killed", "--grace-period=1", "--timeout=60s")
	if s := show(); s != "not-found inactive dead" && !strings.HasPrefix(s, "loaded inactive") && !strings.HasPrefix(s, "loaded failed") {
		t.Errorf("kubectl delete returned while the container's unit %s was %s", u, s)
	}
	if err := os.Remove(mountPoint); err != nil {
		t.Fatal(err)
	}
	c.eventually(30*time.Second, "the container's unit is removed", func() error {
		if s := show(); s != "not-found inactive dead" {
			return fmt.Errorf("%s is %s", u, s)
		}
		return nil
	})
	if _, err := os.Lstat(mountPoint); err == nil {
		t.Errorf("the mount point %s, removed once kubectl delete had returned, was made again", mountPoint)
	}
}

type containerStatus struct {
	Name         string
	RestartCount int
	State        struct {
		Terminated *terminated
	}
}

type terminated struct {
	ExitCode  int
	Reason    string
	StartedAt string
}

// podYAML is a Pod labelled batch, bound to the node and tolerating its
// taint, with restartPolicy Never, one init container per script of inits
// and one app per script of apps.
func podYAML(name, batch string, inits, apps []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {batch: %q}
spec:
  nodeName: %s
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  automountServiceAccountToken: false
  tolerations:
  - {key: virtual-kubelet.io/provider, operator: Exists, effect: NoSchedule}
`, name, batch, nodeName)
	containers := func(key, prefix string, scripts []string) {
		if len(scripts) == 0 {
			return
		}
		fmt.Fprintf(&b, "  %s:\n", key)
		for i, s := range scripts {
			n := prefix
			if i > 0 {
				n += strconv.Itoa(i)
			}
			fmt.Fprintf(&b, "  - {name: %s, image: debian, command: [/bin/sh, -c, %s]}\n", n, strconv.Quote(s))
		}
	}
	containers("initContainers", "init", inits)
	containers("containers", "app", apps)
	return b.String()
}

// namespace makes namespace ns ready for Pods, creating it unless it is
// default, with what the controller manager, which the test does not run,
// puts in each: the default service account, without which the
// ServiceAccount admission plugin admits no Pod, and the kube-root-ca.crt
// ConfigMap (the cluster's CA) that the token volume the plugin adds
// reads.
func (c *cluster) namespace(ns string) error {
	if ns != "default" {
		if _, err := c.kubectl("create", "namespace", ns); err != nil {
			return err
		}
	}
	if _, err := c.kubectl("create", "serviceaccount", "default", "-n", ns); err != nil {
		return err
	}
	_, err := c.kubectl("create", "configmap", "kube-root-ca.crt", "-n", ns, "--from-file=ca.crt="+c.path("ca.crt"))
	return err
}

// serviceAccountToken runs a Pod as the API server's default admission
// plugins make it: the ServiceAccount plugin adds the projected
// kube-api-access volume, and the container finds its token, ca.crt and
// namespace at /var/run/secrets/kubernetes.io/serviceaccount, read-only;
// the host's own path, which systemd made as the mount point, holds none
// of them.
func (c *cluster) serviceAccountToken(t *testing.T) {
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount"
	c.apply(t, `apiVersion: v1
kind: Pod
metadata: {name: token, namespace: default}
spec:
  nodeName: `+nodeName+`
  tolerations: [{key: virtual-kubelet.io/provider, operator: Exists}]
  restartPolicy: Never
  containers:
  - name: app
    image: debian
    command: ["/bin/sh", "-c", "cat `+dir+`/namespace; echo; head -c 27 `+dir+`/ca.crt; echo; tr -cd . < `+dir+`/token; echo; ! touch `+dir+`/x 2>/dev/null && echo read-only"]
`)
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/token", "--timeout=60s")
	want := "default\n-----BEGIN CERTIFICATE-----\n..\nread-only\n"
	if got := c.mustKubectl("logs", "token"); got != want {
		t.Errorf("the container printed %q, want %q (namespace, ca.crt's start, the token's two dots, read-only)", got, want)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		t.Errorf("the host's %s holds %v", dir, entries)
	}
	c.mustKubectl("delete", "pod", "token")
}

func (c *cluster) apply(t *testing.T, yaml string) {
	cmd := exec.Command("kubectl", "--kubeconfig", c.kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, yaml)
	}
}

// units lists every unit the embedded manager has loaded.
func (c *cluster) units(t *testing.T) string {
	return c.systemctl(t, "list-units", "--all", "--no-legend", "--plain")
}

// systemctl runs systemctl ARGS on the node's manager and returns its
// output.
func (c *cluster) systemctl(t *testing.T, args ...string) string {
	cmd := exec.Command("systemctl", append([]string{"--user"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+c.embedded)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemctl --user %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *cluster) kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// getRaw returns the object at path of the API server as JSON, as
// `kubectl get --raw` would print it, read in this process: the cases poll
// their Pods every 2 s, and a kubectl process a poll, with 64 cases at
// once, took most of the machine's CPU, which then showed as a slow node.
func (c *cluster) getRaw(path string) ([]byte, error) {
	req, err := http.NewRequest("GET", c.server+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.api.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

func (c *cluster) mustKubectl(args ...string) string {
	c.t.Helper()
	out, err := c.kubectl(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// daemon starts bin/name with args, its output in DIR/name.log (printed
// if the test fails), and stops it when the test ends.
func (c *cluster) daemon(name string, args ...string) {
	t := c.t
	log, err := os.Create(c.path(name + ".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "UNITRUN_EMBEDDED_DIR="+c.embedded)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(c.path(name + ".log"))
			if len(data) > 8000 {
				data = data[len(data)-8000:]
			}
			t.Logf("%s's last output:\n%s", name, data)
		}
	})
}

func (c *cluster) eventually(timeout time.Duration, what string, f func() error) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %s for %s: %v", timeout, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *cluster) path(name string) string { return filepath.Join(c.dir, name) }

func (c *cluster) write(name string, data []byte) {
	if err := os.WriteFile(c.path(name), data, 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// writeCert writes NAME.crt and NAME.key, a certificate signed by ca: a
// serving certificate for ips, or without them a client certificate.
func (c *cluster) writeCert(name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, ips ...net.IP) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		c.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(c.t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(ips) > 0 {
		tmpl.ExtKeyUsage, tmpl.IPAddresses, tmpl.DNSNames = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, ips, []string{"localhost", "kubernetes.default.svc"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		c.t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		c.t.Fatal(err)
	}
	c.write(name+".crt", pemBlock("CERTIFICATE", der))
	c.write(name+".key", pemBlock("EC PRIVATE KEY", keyDER))
}

func serial(t *testing.T) *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
