package provider

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The host's files a Pod's /etc/hosts and /etc/resolv.conf are made from,
// as the kubelet reads them (its default --resolv-conf).
const (
	hostHostsFile  = "/etc/hosts"
	hostResolvConf = "/etc/resolv.conf"
)

// etcVolume is the name, among a Pod's volumes, of the directory that
// holds the Pod's own hosts and resolv.conf files: ".." starts no volume
// name the API accepts (a DNS label), so it is never a volume of the Pod.
const etcVolume = "..etc"

// The kubelet's headers of the hosts file it manages.
const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// readHostFiles reads the host's hosts file and resolver configuration
// into in, for the Pods' own (etcFiles).
func (in *inputs) readHostFiles() error {
	var err error
	if in.hostHosts, err = os.ReadFile(hostHostsFile); err != nil {
		return fmt.Errorf("read the host's hosts file: %w", err)
	}
	if in.hostResolv, err = os.ReadFile(hostResolvConf); err != nil {
		return fmt.Errorf("read the host's resolver configuration: %w", err)
	}
	return nil
}

// etcFiles adds to vols the volume of the Pod's hosts and resolv.conf
// files (etcVolume), and binds each, read-only, at /etc/hosts and
// /etc/resolv.conf in every app of m whose container does not mount a
// volume there itself, as the kubelet and the container runtime do.
// hostname is the one the Pod's containers have.
func (c *Config) etcFiles(p *corev1.Pod, m *manifest, hostname string, in *inputs, vols map[string]*volume) {
	v := &volume{
		dir: volumeDir(c.StateDir, m.Name, etcVolume),
		files: map[string]volumeFile{
			"hosts":       {data: c.hostsFile(p, hostname, in.hostHosts), mode: 0o644},
			"resolv.conf": {data: c.podDNS(p, in.hostResolv).file(in.hostResolv), mode: 0o644},
		},
	}
	vols[etcVolume] = v
	for i := range m.Apps {
		a := &m.Apps[i]
		for _, f := range []struct{ name, path string }{{"hosts", hostHostsFile}, {"resolv.conf", hostResolvConf}} {
			if !slices.ContainsFunc(a.Mounts, func(mt mount) bool { return mt.Path == f.path }) {
				a.Mounts = append(a.Mounts, mount{Source: filepath.Join(v.dir, f.name), Path: f.path, ReadOnly: true})
			}
		}
	}
}

// hostsFile is the Pod's /etc/hosts as the kubelet writes it: for a Pod
// of hostNetwork, the host's own file (hostHosts) under the kubelet's
// header; for another, localhost's entries and the Pod's IP (the node's
// address here) with its host name; then the Pod's hostAliases, one line
// an IP.
func (c *Config) hostsFile(p *corev1.Pod, hostname string, hostHosts []byte) []byte {
	var b bytes.Buffer
	if p.Spec.HostNetwork {
		b.WriteString(managedHostsHeaderHostNetwork)
		b.Write(hostHosts)
	} else {
		b.WriteString(managedHostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		if c.Address != "" {
			fmt.Fprintf(&b, "%s\t%s\n", c.Address, hostname)
		}
	}
	if len(p.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range p.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// A resolver is a Pod's resolver configuration: what resolv.conf says.
type resolver struct {
	nameservers, searches, options []string
}

// The kubelet's limits on a Pod's resolver configuration (those of
// Kubernetes' validation and of glibc): beyond them it leaves out
// nameservers and search domains.
const (
	maxNameservers     = 3
	maxSearches        = 32
	maxSearchChars     = 2048
	maxSearchDomainLen = 253
)

// parseResolvConf reads a resolv.conf as the kubelet reads the host's:
// nameservers accumulate, the last search line wins (each domain without
// its final dot, "." left out), options accumulate, a later one of a name
// replacing the earlier.
func parseResolvConf(data []byte) resolver {
	r := resolver{}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) > 1 {
				r.nameservers = append(r.nameservers, fields[1])
			}
		case "search":
			r.searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					r.searches = append(r.searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			r.options = mergeOptions(r.options, fields[1:])
		}
	}
	return r
}

// mergeOptions adds opts to old: an option of a name old has (the part
// before ':') replaces it where it is, another is added at the end.
func mergeOptions(old, opts []string) []string {
	out := slices.Clone(old)
	for _, o := range opts {
		name, _, _ := strings.Cut(o, ":")
		if i := slices.IndexFunc(out, func(x string) bool { n, _, _ := strings.Cut(x, ":"); return n == name }); i >= 0 {
			out[i] = o
		} else {
			out = append(out, o)
		}
	}
	return out
}

// podDNS is the Pod's resolver configuration, as the kubelet's DNS
// configurer makes it from the host's (hostResolv): under dnsPolicy None,
// nothing; under ClusterFirst (for a Pod of hostNetwork:
// ClusterFirstWithHostNet), the cluster's DNS servers, its search domains
// before the host's and ndots:5, or, on a node without a cluster DNS
// server, the host's (the kubelet falls back to Default); under Default
// (and ClusterFirst for a Pod of hostNetwork), the host's. The Pod's
// dnsConfig is then added: its nameservers and searches after those (each
// once), its options over them; and the result is cut to the limits.
func (c *Config) podDNS(p *corev1.Pod, hostResolv []byte) resolver {
	host := parseResolvConf(hostResolv)
	var r resolver
	switch {
	case p.Spec.DNSPolicy == corev1.DNSNone:
	case clusterFirst(p) && len(c.ClusterDNS) > 0:
		r.nameservers = slices.Clone(c.ClusterDNS)
		r.searches = host.searches
		if d := c.ClusterDomain; d != "" {
			r.searches = compact(slices.Concat([]string{p.Namespace + ".svc." + d, "svc." + d, d}, host.searches))
		}
		r.options = []string{"ndots:5"}
	default:
		r = host
	}
	if dc := p.Spec.DNSConfig; dc != nil {
		r.nameservers = compact(slices.Concat(r.nameservers, dc.Nameservers))
		r.searches = compact(slices.Concat(r.searches, dc.Searches))
		var opts []string
		for _, o := range dc.Options {
			if o.Value != nil {
				opts = append(opts, o.Name+":"+*o.Value)
			} else {
				opts = append(opts, o.Name)
			}
		}
		r.options = mergeOptions(r.options, opts)
	}
	r.nameservers = r.nameservers[:min(len(r.nameservers), maxNameservers)]
	r.searches = slices.DeleteFunc(r.searches[:min(len(r.searches), maxSearches)], func(s string) bool { return len(s) > maxSearchDomainLen })
	for len(r.searches) > 0 && len(strings.Join(r.searches, " ")) > maxSearchChars {
		r.searches = r.searches[:len(r.searches)-1]
	}
	return r
}

// clusterFirst reports whether Pod p asks for the cluster's DNS: under
// dnsPolicy ClusterFirst (the API's default), unless of hostNetwork, or
// ClusterFirstWithHostNet.
func clusterFirst(p *corev1.Pod) bool {
	switch p.Spec.DNSPolicy {
	case corev1.DNSClusterFirst, "":
		return !p.Spec.HostNetwork
	case corev1.DNSClusterFirstWithHostNet:
		return true
	}
	return false
}

// missingClusterDNS is the warning the kubelet records on a Pod that asks
// for the cluster's DNS on a node without one (no --cluster-dns), and so
// gets the host's resolver configuration, as under Default; "" for another
// Pod.
func (c *Config) missingClusterDNS(p *corev1.Pod) string {
	if !clusterFirst(p) || len(c.ClusterDNS) > 0 {
		return ""
	}
	return fmt.Sprintf("pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
		p.Name+"_"+p.Namespace+"("+string(p.UID)+")", corev1.DNSClusterFirst, corev1.DNSDefault)
}

// compact is list with each string once, at its first place.
func compact(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// file is r as the container runtime writes a Pod's resolv.conf: a
// search line, a nameserver line each, an options line; a configuration
// with none of them is the host's file (hostResolv) as it is.
func (r resolver) file(hostResolv []byte) []byte {
	if len(r.nameservers)+len(r.searches)+len(r.options) == 0 {
		return hostResolv
	}
	var b bytes.Buffer
	if len(r.searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(r.searches, " "))
	}
	for _, ns := range r.nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(r.options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(r.options, " "))
	}
	return b.Bytes()
}
