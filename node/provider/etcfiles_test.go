package provider

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestHostsFile checks the Pod's /etc/hosts against the kubelet's: the
// managed file with the Pod's IP and host name, or under hostNetwork the
// host's file, each with the hostAliases' section; and that every app
// binds it and resolv.conf read-only unless its container mounts a volume
// there.
func TestHostsFile(t *testing.T) {
	c := &Config{Images: map[string]string{"debian": HostImage}, AllowPrivileged: true, StateDir: "/state", Address: "10.0.0.5"}
	aliases := []corev1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}}, {IP: "::2", Hostnames: []string{"baz"}}}
	p := &corev1.Pod{Spec: corev1.PodSpec{HostAliases: aliases}}
	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.0.0.5\tweb-0\n" +
		"\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n::2\tbaz\n"
	if got := string(c.hostsFile(p, "web-0", []byte("127.0.0.1 host\n"))); got != want {
		t.Errorf("hosts file\n%q, want\n%q", got, want)
	}
	p.Spec.HostNetwork = true
	want = "# Kubernetes-managed hosts file (host network).\n127.0.0.1 host\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n::2\tbaz\n"
	if got := string(c.hostsFile(p, "web-0", []byte("127.0.0.1 host\n"))); got != want {
		t.Errorf("hosts file of a Pod of hostNetwork\n%q, want\n%q", got, want)
	}
	p.Spec.HostAliases = nil
	if got, want := string(c.hostsFile(p, "web-0", []byte("127.0.0.1 host\n"))), "# Kubernetes-managed hosts file (host network).\n127.0.0.1 host\n"; got != want {
		t.Errorf("hosts file without hostAliases %q, want %q", got, want)
	}

	p = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"},
		Spec: corev1.PodSpec{
			HostAliases: aliases,
			Volumes:     []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/hosts"}}}},
			Containers: []corev1.Container{
				{Name: "a", Image: "debian", Command: []string{"/bin/true"}},
				{Name: "b", Image: "debian", Command: []string{"/bin/true"}, VolumeMounts: []corev1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}},
			},
		},
	}
	in := &inputs{hostHosts: []byte("127.0.0.1 host\n"), hostResolv: []byte("nameserver 10.0.0.53\n")}
	data, err := c.translate(p, in)
	if err != nil {
		t.Fatal(err)
	}
	m := unmarshal(t, data)
	dir := volumeDir("/state", m.Name, etcVolume)
	hosts := mount{Source: dir + "/hosts", Path: "/etc/hosts", ReadOnly: true}
	resolv := mount{Source: dir + "/resolv.conf", Path: "/etc/resolv.conf", ReadOnly: true}
	if got := m.Apps[0].Mounts; !reflect.DeepEqual(got, []mount{hosts, resolv}) {
		t.Errorf("app a's mounts %+v, want the Pod's hosts and resolv.conf", got)
	}
	if got := m.Apps[1].Mounts; !reflect.DeepEqual(got, []mount{{Source: "/srv/hosts", Path: "/etc/hosts"}, resolv}) {
		t.Errorf("app b's mounts %+v, want its own /etc/hosts and the Pod's resolv.conf", got)
	}
	v := in.volumes[etcVolume]
	if v == nil || !strings.Contains(string(v.files["hosts"].data), "123.45.67.89\tfoo\tbar\n") || v.files["hosts"].mode != 0o644 ||
		string(v.files["resolv.conf"].data) != "nameserver 10.0.0.53\n" {
		t.Errorf("volume %s: %+v", etcVolume, v)
	}
}

// TestPodDNS checks each dnsPolicy and dnsConfig against what the
// kubelet's DNS configurer gives (pkg/kubelet/network/dns), written as the
// container runtime writes resolv.conf.
func TestPodDNS(t *testing.T) {
	const host = "# the host's\nnameserver 10.0.0.53\nnameserver 10.0.0.54\nsearch old.example\nsearch corp.example. .\noptions ndots:2 edns0\noptions ndots:3\n"
	ptr := func(s string) *string { return &s }
	dnsConfig := &corev1.PodDNSConfig{
		Nameservers: []string{"1.1.1.1", "10.0.0.53"},
		Searches:    []string{"resolv.conf.local", "corp.example"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}, {Name: "rotate"}},
	}
	cluster := &Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}
	tests := []struct {
		name        string
		c           *Config
		policy      corev1.DNSPolicy
		hostNetwork bool
		dnsConfig   *corev1.PodDNSConfig
		want        string
	}{
		{"Default", cluster, corev1.DNSDefault, false, nil, "search corp.example\nnameserver 10.0.0.53\nnameserver 10.0.0.54\noptions ndots:3 edns0\n"},
		{"ClusterFirst", cluster, corev1.DNSClusterFirst, false, nil, "search ns.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{"ClusterFirst without a cluster DNS falls back to Default", &Config{}, corev1.DNSClusterFirst, false, nil, "search corp.example\nnameserver 10.0.0.53\nnameserver 10.0.0.54\noptions ndots:3 edns0\n"},
		{"ClusterFirst of hostNetwork is Default", cluster, corev1.DNSClusterFirst, true, nil, "search corp.example\nnameserver 10.0.0.53\nnameserver 10.0.0.54\noptions ndots:3 edns0\n"},
		{"ClusterFirstWithHostNet", cluster, corev1.DNSClusterFirstWithHostNet, true, nil, "search ns.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{"ClusterFirst without a cluster domain", &Config{ClusterDNS: []string{"10.96.0.10"}}, corev1.DNSClusterFirst, false, nil, "search corp.example\nnameserver 10.96.0.10\noptions ndots:5\n"},
		{"None", cluster, corev1.DNSNone, false, dnsConfig, "search resolv.conf.local corp.example\nnameserver 1.1.1.1\nnameserver 10.0.0.53\noptions ndots:1 rotate\n"},
		{"Default and dnsConfig", cluster, corev1.DNSDefault, false, dnsConfig, "search corp.example resolv.conf.local\nnameserver 10.0.0.53\nnameserver 10.0.0.54\nnameserver 1.1.1.1\noptions ndots:1 edns0 rotate\n"},
		{"ClusterFirst and dnsConfig", cluster, corev1.DNSClusterFirst, false, dnsConfig, "search ns.svc.cluster.local svc.cluster.local cluster.local corp.example resolv.conf.local\nnameserver 10.96.0.10\nnameserver 1.1.1.1\nnameserver 10.0.0.53\noptions ndots:1 rotate\n"},
	}
	for _, tt := range tests {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{DNSPolicy: tt.policy, HostNetwork: tt.hostNetwork, DNSConfig: tt.dnsConfig}}
		if got := string(tt.c.podDNS(p, []byte(host)).file([]byte(host))); got != tt.want {
			t.Errorf("%s: resolv.conf\n%q, want\n%q", tt.name, got, tt.want)
		}
	}
	// Beyond the limits the kubelet leaves out nameservers and search
	// domains; a configuration of nothing is the host's file.
	long := strings.Repeat("a", 254)
	p := &corev1.Pod{Spec: corev1.PodSpec{DNSPolicy: corev1.DNSNone, DNSConfig: &corev1.PodDNSConfig{
		Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}, Searches: []string{long, "b"},
	}}}
	if got, want := string((&Config{}).podDNS(p, nil).file(nil)), "search b\nnameserver 1.1.1.1\nnameserver 1.1.1.2\nnameserver 1.1.1.3\n"; got != want {
		t.Errorf("past the limits: %q, want %q", got, want)
	}
	p.Spec.DNSConfig = &corev1.PodDNSConfig{}
	if got := string((&Config{}).podDNS(p, []byte(host)).file([]byte(host))); got != host {
		t.Errorf("an empty configuration: %q, want the host's file", got)
	}
}

// TestPodHostsAndResolver runs Pods on the real systemd: a container sees
// the Pod's hostAliases in /etc/hosts and the resolver its dnsConfig asks
// for in /etc/resolv.conf, a Pod of hostNetwork the host's hosts file with
// its aliases, a Pod of ClusterFirst on this node without a cluster DNS
// the host's nameservers and a MissingClusterDNS event, an isolated Pod
// its own host name, and the host's own files stay as they were.
func TestPodHostsAndResolver(t *testing.T) {
	hostHosts, err := os.ReadFile(hostHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	hostResolv, err := os.ReadFile(hostResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	var hostNameservers string
	for _, line := range strings.Split(string(hostResolv), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "nameserver" {
			hostNameservers += "nameserver " + f[1] + "\n"
		}
	}
	client := fake.NewClientset()
	cfg := testConfig(t)
	cfg.Address = "192.0.2.7"
	n := startNode(t, cfg, client)
	host, _ := os.Hostname()
	managed := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n192.0.2.7\t" + host + "\n"
	aliases := "\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"
	own := &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"resolv.conf.local"}}
	isolated := podName(testNS, "etc-files-isolated", "uid-etc-files-isolated")
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		isolation   string
		policy      corev1.DNSPolicy
		dnsConfig   *corev1.PodDNSConfig
		hosts       string
		resolv      string // what it holds
	}{
		{"etc-files", false, "", corev1.DNSNone, own, managed + aliases, "search resolv.conf.local\nnameserver 1.1.1.1\n"},
		{"etc-files-host-network", true, "", corev1.DNSNone, own, "# Kubernetes-managed hosts file (host network).\n" + string(hostHosts) + aliases, "search resolv.conf.local\nnameserver 1.1.1.1\n"},
		{"etc-files-cluster-first", false, "", corev1.DNSClusterFirst, nil, managed + aliases, hostNameservers},
		// An isolated pod has a host name of its own, its unitrun pod's.
		{"etc-files-isolated", false, "namespaces", corev1.DNSNone, own, strings.Replace(managed, "\t"+host+"\n", "\t"+isolated+"\n", 1) + aliases + isolated + "\n",
			"search resolv.conf.local\nnameserver 1.1.1.1\n"},
	} {
		p := newPod(tc.name, corev1.RestartPolicyNever, nil, "cat /etc/hosts; hostname; echo ===; cat /etc/resolv.conf")
		if tc.isolation != "" {
			p.Annotations = map[string]string{AnnotationIsolation: tc.isolation}
		} else {
			tc.hosts += host + "\n"
		}
		p.Spec.HostNetwork = tc.hostNetwork
		p.Spec.HostAliases = []corev1.HostAlias{{IP: "123.45.67.89", Hostnames: []string{"foo", "bar"}}}
		p.Spec.DNSPolicy, p.Spec.DNSConfig = tc.policy, tc.dnsConfig
		create(t, client, p)
		waitPod(t, client, p, "Succeeded", phase(corev1.PodSucceeded))
		data, err := os.ReadFile(n.p.eng.logFile(podName(p.Namespace, p.Name, string(p.UID)), "app0"))
		if err != nil {
			t.Fatal(err)
		}
		hosts, resolv, _ := strings.Cut(string(data), "===\n")
		if hosts != tc.hosts || !strings.Contains(resolv, tc.resolv) {
			t.Errorf("pod %s: the container read\n%q, want /etc/hosts\n%q\nand a resolv.conf holding\n%q", tc.name, data, tc.hosts, tc.resolv)
		}
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	}
	events, err := client.CoreV1().Events(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, ev := range events.Items {
		if ev.Reason == "MissingClusterDNS" {
			missing = append(missing, ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	if want := `etc-files-cluster-first: pod: "etc-files-cluster-first_` + testNS + `(uid-etc-files-cluster-first)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`; len(missing) != 1 || missing[0] != want {
		t.Errorf("MissingClusterDNS events %q, want one: %q", missing, want)
	}
	for file, was := range map[string][]byte{hostHostsFile: hostHosts, hostResolvConf: hostResolv} {
		if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, was) {
			t.Errorf("the host's %s changed: %q, was %q (%v)", file, now, was, err)
		}
	}
}
