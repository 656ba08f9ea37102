package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Pod's own /etc/hosts and /etc/resolv.conf, and kubectl
// port-forward: the cases of common/node's kubelet_etc_hosts.go, of
// network/dns.go that need no cluster DNS server, and of
// kubectl/portforward.go that kubectl drives (not its websocket ones).
func init() { portedCases = append(portedCases, netCases...) }

var netCases = append([]ported{
	{"KubeletManagedEtcHosts", "kubelet_etc_hosts.go", "KubeletManagedEtcHosts should test kubelet managed /etc/hosts file [LinuxOnly] [NodeConformance] [Conformance]", func(k *kcase) {
		// The case execs cat in each container to read its /etc/hosts
		// and the host's, which each container mounts from a hostPath at
		// /etc/hosts-original; here each container prints its /etc/hosts
		// to its log, and the test reads the host's itself (a mount point
		// on the host, where the containers' image is, would stay behind).
		container := func(name string, own bool) string {
			mounts := ""
			if own {
				mounts = "\n  volumeMounts: [{name: host-etc-hosts, mountPath: /etc/hosts}]"
			}
			return fmt.Sprintf(`- name: %s
  image: debian
  command: ["sh", "-c", "cat /etc/hosts; echo ===; exec sleep 600"]%s`, name, mounts)
		}
		hostPath := "volumes: [{name: host-etc-hosts, hostPath: {path: /etc/hosts}}]"
		for _, p := range []struct {
			name, spec string
			containers []string
		}{
			{"test-pod", hostPath, []string{"busybox-1", "busybox-2", "busybox-3"}},
			{"test-host-network-pod", "hostNetwork: true\n" + hostPath, []string{"busybox-1", "busybox-2"}},
		} {
			var cs []string
			for _, c := range p.containers {
				cs = append(cs, container(c, c == "busybox-3"))
			}
			k.create(pod(p.name, "", p.spec+"\ncontainers:\n"+strings.Join(cs, "\n")))
		}
		original, err := os.ReadFile("/etc/hosts")
		if err != nil {
			k.t.Fatal(err)
		}
		for _, want := range []struct {
			pod, container string
			managed        bool
		}{
			{"test-pod", "busybox-1", true}, {"test-pod", "busybox-2", true},
			{"test-pod", "busybox-3", false},
			{"test-host-network-pod", "busybox-1", false}, {"test-host-network-pod", "busybox-2", false},
		} {
			k.waitPhase(want.pod, "Running")
			var hosts string
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
				var ok bool
				if hosts, _, ok = strings.Cut(k.logsOf(want.pod, want.container), "===\n"); ok && hosts != "" {
					break
				}
			}
			if managed := strings.HasPrefix(hosts, "# Kubernetes-managed hosts file.") && hosts != string(original); managed != want.managed {
				k.t.Errorf("%s/%s: /etc/hosts managed %v, want %v:\n%s", want.pod, want.container, managed, want.managed, hosts)
			}
		}
	}},
	{"DNSNameservers", "network/dns.go", "DNS should support configurable pod DNS nameservers [Conformance]", func(k *kcase) {
		// agnhost dns-suffix and dns-server-list, which the case execs,
		// print the search domains and nameservers of /etc/resolv.conf;
		// here awk prints them to the log.
		k.create(pod("test-dns-nameservers", "", `dnsPolicy: "None"
dnsConfig: {nameservers: [1.1.1.1], searches: [resolv.conf.local]}
containers:
- name: agnhost-container
  image: debian
  command: ["sh", "-c", "awk '/^search/ {for (i = 2; i <= NF; i++) print $i}' /etc/resolv.conf; awk '/^nameserver/ {print $2}' /etc/resolv.conf; exec sleep 600"]`))
		k.waitPhase("test-dns-nameservers", "Running")
		k.logShows("test-dns-nameservers", "agnhost-container", "resolv.conf.local\n", time.Minute)
		k.logShows("test-dns-nameservers", "agnhost-container", "1.1.1.1\n", time.Minute)
	}},
}, portForwardCases()...)

// portForwardCases are kubectl/portforward.go's cases that kubectl drives,
// with a server listening on 0.0.0.0 and on localhost.
func portForwardCases() []ported {
	var cases []ported
	for _, bind := range []struct{ name, addr string }{{"AllAddresses", "0.0.0.0"}, {"Localhost", "localhost"}} {
		it := "Kubectl Port forwarding With a server listening on " + bind.addr + " "
		cases = append(cases,
			ported{"PortForward" + bind.name + "SendNothing", "kubectl/portforward.go", it + "that expects a client request should support a client that connects, sends NO DATA, and disconnects", func(k *kcase) {
				port := k.pfPod("abc", 1, 1, 1, bind.addr)
				conn := k.dialForwarded(k.portForward("pfpod", port))
				conn.Close()
				k.pfLogs("Accepted client connection", "Expected to read 3 bytes from client, but got 0 instead")
			}},
			ported{"PortForward" + bind.name + "SendDisconnect", "kubectl/portforward.go", it + "that expects a client request should support a client that connects, sends DATA, and disconnects", func(k *kcase) {
				port := k.pfPod("abc", 10, 10, 100, bind.addr)
				conn := k.dialForwarded(k.portForward("pfpod", port))
				defer conn.Close()
				fmt.Fprint(conn, "abc")
				from, err := io.ReadAll(conn)
				if err != nil || string(from) != strings.Repeat("x", 100) {
					k.t.Fatalf("read %q, %v from the server; want 100 x", from, err)
				}
				if err := conn.CloseWrite(); err != nil {
					k.t.Fatal(err)
				}
				k.pfLogs("Accepted client connection", "Received expected client data", "Done")
			}},
			ported{"PortForward" + bind.name + "NoRequest", "kubectl/portforward.go", it + "that expects NO client request should support a client that connects, sends DATA, and disconnects", func(k *kcase) {
				port := k.pfPod("", 10, 10, 100, bind.addr)
				conn := k.dialForwarded(k.portForward("pfpod", port))
				defer conn.Close()
				from, err := io.ReadAll(conn)
				if err != nil || string(from) != strings.Repeat("x", 100) {
					k.t.Fatalf("read %q, %v from the server; want 100 x", from, err)
				}
				k.pfLogs("Accepted client connection", "Done")
			}},
		)
	}
	return cases
}

// portForwardTester is agnhost's port-forward-tester: it listens on
// BIND_ADDRESS:BIND_PORT, accepts one connection, reads
// EXPECTED_CLIENT_DATA from it (in one read), writes CHUNKS chunks of
// CHUNK_SIZE x's CHUNK_INTERVAL ms apart, and closes it.
const portForwardTester = `import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ.get("BIND_ADDRESS") or "localhost", int(os.environ["BIND_PORT"])))
s.listen(1)
conn, _ = s.accept()
print("Accepted client connection", flush=True)
want = os.environ.get("EXPECTED_CLIENT_DATA", "").encode()
if want:
    got = conn.recv(len(want))
    if len(got) != len(want):
        print("Expected to read %d bytes from client, but got %d instead." % (len(want), len(got)), flush=True)
        sys.exit(2)
    if got != want:
        print("Expect to read %r, but got %r." % (want, got), flush=True)
        sys.exit(3)
    print("Received expected client data", flush=True)
chunks, size, interval = (int(os.environ[k]) for k in ("CHUNKS", "CHUNK_SIZE", "CHUNK_INTERVAL"))
for i in range(chunks):
    conn.sendall(b"x" * size)
    if i + 1 < chunks:
        time.sleep(interval / 1000)
print("Shutting down connection", flush=True)
conn.close()
print("Done", flush=True)
`

// pfPod creates portforward.go's pfPod named pfpod and waits for it to be
// ready: the tester, and a container whose readiness probe passes once
// the tester listens (agnhost netexec's probe greps netstat; here
// /proc/net/tcp, as netexec's own port is not needed). The port is one of
// the case's own, not 80, as the cases share the host's network.
func (k *kcase) pfPod(expected string, chunks, size, interval int, bind string) int {
	k.t.Helper()
	port, _ := strconv.Atoi(freePort(k.t))
	k.create(pod("pfpod", "{name: pfpod}", fmt.Sprintf(`restartPolicy: Never
containers:
- name: readiness
  image: debian
  command: ["sleep", "infinity"]
  readinessProbe:
    exec: {command: ["sh", "-c", "grep -qE '^ *[0-9]+: [0-9A-F]+:%04X [0-9A-F]+:0000 0A' /proc/net/tcp /proc/net/tcp6"]}
    initialDelaySeconds: 5
    timeoutSeconds: 60
    periodSeconds: 1
- name: portforwardtester
  image: debian
  command: ["/usr/bin/python3", "-c", %q]
  env:
  - {name: BIND_PORT, value: "%d"}
  - {name: EXPECTED_CLIENT_DATA, value: %q}
  - {name: CHUNKS, value: "%d"}
  - {name: CHUNK_SIZE, value: "%d"}
  - {name: CHUNK_INTERVAL, value: "%d"}
  - {name: BIND_ADDRESS, value: %q}`, port, portForwardTester, port, expected, chunks, size, interval, bind)))
	k.waitFor("pfpod", podStartTimeout, "to be ready", func(p *k8sPod) (bool, error) { return p.ready(), nil })
	return port
}

// pfLogs is the cases' end: the tester's container terminates, and its
// log holds each of want.
func (k *kcase) pfLogs(want ...string) {
	k.t.Helper()
	k.waitFor("pfpod", podStartTimeout, "its tester to terminate", func(p *k8sPod) (bool, error) {
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "portforwardtester" {
				return c.State.Terminated != nil, nil
			}
		}
		return false, nil
	})
	for _, w := range want {
		k.logShows("pfpod", "portforwardtester", w, time.Minute)
	}
}

// portForwardRE is what kubectl port-forward prints once it listens.
var portForwardRE = regexp.MustCompile(`Forwarding from (127\.0\.0\.1|\[::1\]):(\d+) -> \d+`)

// portForward runs kubectl port-forward to the port of Pod name from a
// local port it picks, until the test ends, and returns the local port, as
// portforward.go's runPortForward does.
func (k *kcase) portForward(name string, port int) int {
	k.t.Helper()
	return k.c.portForwardIn(k.t, k.ns, name, port)
}

func (c *cluster) portForwardIn(t *testing.T, ns, name string, port int) int {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", c.kubeconfig, "-n", ns, "port-forward", name, fmt.Sprintf(":%d", port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	m := portForwardRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("kubectl port-forward printed %q (%v), stderr %q", line, err, stderr.String())
	}
	go io.Copy(io.Discard, r)
	local, _ := strconv.Atoi(m[2])
	return local
}

// dialForwarded connects to the local port of kubectl port-forward.
func (k *kcase) dialForwarded(port int) *net.TCPConn {
	k.t.Helper()
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		k.t.Fatalf("connect to the forwarded port %d: %v", port, err)
	}
	return conn.(*net.TCPConn)
}

// portForward applies a Pod that serves a page over HTTP and GETs it
// through kubectl port-forward: the API server reaches the node's kubelet
// API with its kubelet client certificate, which the node accepts as
// signed by the CA its kubeconfig trusts, and the node connects the
// stream to the Pod's port.
func (c *cluster) portForward(t *testing.T) {
	port, dir := freePort(t), t.TempDir() // the container's image is the host
	c.apply(t, podYAML("served", "served", nil, []string{
		"cd " + dir + " && echo hello through port-forward > index.html && exec /usr/bin/python3 -m http.server " + port + " --bind 127.0.0.1"}))
	defer c.mustKubectl("delete", "pod", "served", "--timeout=60s")
	c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Running", "pod/served", "--timeout=90s")
	p, _ := strconv.Atoi(port)
	local := c.portForwardIn(t, "default", "served", p)
	var body []byte
	c.eventually(60*time.Second, "a page through port-forward", func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", local))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if body, err = io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %q %v", resp.Status, body, err)
		}
		return nil
	})
	if string(body) != "hello through port-forward\n" {
		t.Errorf("GET through kubectl port-forward: %q", body)
	}
}

// dnsPolicies applies Pods that print their /etc/resolv.conf: on this
// node, started without --cluster-dns, ClusterFirst (the default) falls
// back to the host's nameservers with a MissingClusterDNS event, as a
// kubelet without a cluster DNS does, and dnsConfig's nameservers, searches and options are added to them.
func (c *cluster) dnsPolicies(t *testing.T) {
	host, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	var nameservers []string
	for _, line := range strings.Split(string(host), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "nameserver" {
			nameservers = append(nameservers, "nameserver "+f[1])
		}
	}
	c.apply(t, podYAML("dns-default", "dns", nil, []string{"cat /etc/resolv.conf"}))
	c.apply(t, strings.Replace(podYAML("dns-config", "dns", nil, []string{"cat /etc/resolv.conf"}), "spec:\n",
		"spec:\n  dnsPolicy: Default\n  dnsConfig: {nameservers: [192.0.2.53], searches: [unitrun.example], options: [{name: ndots, value: \"2\"}]}\n", 1))
	defer c.mustKubectl("delete", "pod", "-l", "batch=dns", "--timeout=60s")
	for _, name := range []string{"dns-default", "dns-config"} {
		c.mustKubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/"+name, "--timeout=90s")
	}
	got := c.mustKubectl("logs", "dns-default")
	for _, ns := range nameservers {
		if !strings.Contains(got, ns+"\n") {
			t.Errorf("dnsPolicy ClusterFirst without a cluster DNS: resolv.conf %q lacks the host's %q", got, ns)
		}
	}
	c.eventually(30*time.Second, "a MissingClusterDNS event on pod dns-default", func() error {
		ev, err := c.kubectl("get", "events", "--field-selector", "reason=MissingClusterDNS,involvedObject.name=dns-default", "-o", "jsonpath={.items[*].message}")
		if err == nil && !strings.Contains(ev, `Falling back to "Default" policy.`) {
			err = fmt.Errorf("events: %q", ev)
		}
		return err
	})
	got = c.mustKubectl("logs", "dns-config")
	for _, want := range append(nameservers, "nameserver 192.0.2.53", "unitrun.example", "options ndots:2") {
		if !strings.Contains(got, want) {
			t.Errorf("dnsPolicy Default with a dnsConfig: resolv.conf %q lacks %q", got, want)
		}
	}
}
