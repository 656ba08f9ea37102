package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Annotations a Pod may carry for this node.
const (
	// AnnotationIsolation chooses the unitrun pod's isolation: "none" (its
	// apps are units of the host's manager) or "namespaces" (under a
	// systemd of its own). Without it a pod whose images are all "host"
	// runs without isolation, and one with a root filesystem in namespaces.
	AnnotationIsolation = "unitrun.io/isolation"
	// AnnotationRestartBackoff is the first delay before a container
	// restarts (a Go duration, "1s"), which doubles with each restart up to
	// five minutes; Kubernetes has no field for it. It may not be below the
	// node's floor (Config.MinRestartBackoff, default 10s, the kubelet's),
	// which is also its default.
	AnnotationRestartBackoff = "unitrun.io/restart-backoff"
)

// MaxRestartBackoff is the longest first restart delay a Pod may ask
// for, the most a delay doubles to.
const MaxRestartBackoff = 5 * time.Minute

// HostImage is the image mapping that runs a container on the host's own
// file system.
const HostImage = "host"

// manifest is a unitrun pod manifest, as its wire format spells it
// (docs/pods.md); the provider writes it as JSON, which the manifest's
// YAML reader takes.
type manifest struct {
	Name           string   `json:"name"`
	RestartPolicy  string   `json:"restartPolicy"`
	RestartBackoff *backoff `json:"restartBackoff,omitempty"`
	Isolation      string   `json:"isolation,omitempty"`
	Network        string   `json:"network,omitempty"`
	Apps           []app    `json:"apps"`
}

type backoff struct {
	Initial string `json:"initial"`
}

type app struct {
	Name          string            `json:"name"`
	Exec          []string          `json:"exec"`
	Env           map[string]string `json:"env,omitempty"`
	WorkingDir    string            `json:"workingDir,omitempty"`
	User          string            `json:"user,omitempty"`
	Group         string            `json:"group,omitempty"`
	RestartPolicy string            `json:"restartPolicy,omitempty"`
	StopTimeout   string            `json:"stopTimeout,omitempty"`
	Init          bool              `json:"init,omitempty"`
	Sidecar       bool              `json:"sidecar,omitempty"`
	Rootfs        string            `json:"rootfs,omitempty"`
	// TerminationMessagePath: "" (the API server sets the default) binds
	// none.
	TerminationMessagePath string     `json:"terminationMessagePath,omitempty"`
	Resources              *resources `json:"resources,omitempty"`
	Probe                  *probe     `json:"probe,omitempty"`
	Readiness              *probe     `json:"readinessProbe,omitempty"`
	Startup                *probe     `json:"startupProbe,omitempty"`
	PostStart              *hook      `json:"postStart,omitempty"`
	PreStop                *hook      `json:"preStop,omitempty"`
	NoNewPrivileges        bool       `json:"noNewPrivileges,omitempty"`
	ReadOnlyRoot           bool       `json:"readOnlyRoot,omitempty"`
	// Capabilities: nil keeps root's, for a privileged container; an
	// empty list holds none.
	Capabilities *[]string `json:"capabilities,omitempty"`
	Mounts       []mount   `json:"mounts,omitempty"`
}

type mount struct {
	Source   string `json:"source"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

type resources struct {
	Memory    string `json:"memory,omitempty"`
	CPUWeight *int   `json:"cpuWeight,omitempty"`
	CPUMillis *int   `json:"cpuMillis,omitempty"`
}

type probe struct {
	Exec                []string   `json:"exec,omitempty"`
	HTTP                *httpProbe `json:"http,omitempty"`
	TCP                 *tcpProbe  `json:"tcp,omitempty"`
	GRPC                *grpcProbe `json:"grpc,omitempty"`
	InitialDelaySeconds int32      `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int32      `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int32      `json:"timeoutSeconds,omitempty"`
	FailureThreshold    int32      `json:"failureThreshold,omitempty"`
	Action              string     `json:"action,omitempty"`
	StopTimeout         string     `json:"stopTimeout,omitempty"`
}

type hook struct {
	Exec  []string   `json:"exec,omitempty"`
	HTTP  *httpProbe `json:"http,omitempty"`
	Sleep string     `json:"sleep,omitempty"`
}

type httpProbe struct {
	Port int32  `json:"port"`
	Path string `json:"path,omitempty"`
}

type tcpProbe struct {
	Port int32 `json:"port"`
}

type grpcProbe struct {
	Port    int32  `json:"port"`
	Service string `json:"service,omitempty"`
}

// A refusal is why a Pod cannot run on this node: the field and the rule.
type refusal struct {
	Field string
	Rule  string
}

func (r refusal) Error() string { return r.Field + ": " + r.Rule }

// refusals collects every refusal of one Pod.
type refusals []refusal

func (rs *refusals) add(field, format string, args ...any) {
	*rs = append(*rs, refusal{Field: field, Rule: fmt.Sprintf(format, args...)})
}

func (rs refusals) Error() string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.Error())
	}
	return b.String()
}

// podName is the unitrun pod that runs Pod namespace/name of uid: a name
// that unitrun accepts (at most 29 characters) and that no other Pod, nor
// a later Pod of the same name, gets.
func podName(namespace, name, uid string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name + "/" + uid))
	return podPrefix + hex.EncodeToString(sum[:])[:25]
}

// podPrefix starts the name of every unitrun pod this provider runs; it
// touches no other pod.
const podPrefix = "k8s-"

// translate returns the unitrun manifest that runs p on node, its
// containers' environment and volumes made of in (nil: the Pod's alone),
// or every reason it cannot (refusals), or, if it could run, what it
// waits for (waitError). It notes the Pod's volumes in in.volumes.
func (c *Config) translate(p *corev1.Pod, in *inputs) ([]byte, error) {
	if in == nil {
		in = &inputs{}
	}
	in.waits = nil
	var rs refusals
	m := manifest{Name: podName(p.Namespace, p.Name, string(p.UID))}
	switch p.Spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		m.RestartPolicy = string(p.Spec.RestartPolicy)
	case "":
		m.RestartPolicy = string(corev1.RestartPolicyAlways)
	default:
		rs.add("spec.restartPolicy", "%q is not Always, OnFailure or Never", p.Spec.RestartPolicy)
	}
	c.checkPodSpec(p, &rs)
	vols := c.podVolumes(p, in, &rs)
	in.volumes = vols
	rootfs := false
	for i := range p.Spec.InitContainers {
		ctr := &p.Spec.InitContainers[i]
		path := fmt.Sprintf("spec.initContainers[%d]", i)
		a := c.container(p, ctr, path, vols, in, &rs)
		switch {
		case ctr.RestartPolicy == nil:
			a.Init = true
			// The kubelet retries a failed init container, with its
			// back-off, unless the Pod's restartPolicy is Never.
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
				a.RestartPolicy = string(corev1.RestartPolicyOnFailure)
			}
			for _, f := range []struct {
				name  string
				probe *corev1.Probe
			}{{"livenessProbe", ctr.LivenessProbe}, {"readinessProbe", ctr.ReadinessProbe}, {"startupProbe", ctr.StartupProbe}} {
				if f.probe != nil {
					rs.add(path+"."+f.name, "an init container has no probes (a sidecar, restartPolicy: Always, has)")
				}
			}
		case *ctr.RestartPolicy == corev1.ContainerRestartPolicyAlways:
			// A sidecar, as Kubernetes 1.29 and later run it.
			a.Sidecar = true
			a.probes(ctr, path, "restart", &rs)
		default:
			rs.add(path+".restartPolicy", "%q: an init container's restartPolicy can only be Always, which makes it a sidecar", *ctr.RestartPolicy)
		}
		rootfs = rootfs || a.Rootfs != ""
		m.Apps = append(m.Apps, a)
	}
	for i := range p.Spec.Containers {
		ctr := &p.Spec.Containers[i]
		a := c.container(p, ctr, fmt.Sprintf("spec.containers[%d]", i), vols, in, &rs)
		a.probes(ctr, fmt.Sprintf("spec.containers[%d]", i), probeAction(p.Spec.RestartPolicy), &rs)
		rootfs = rootfs || a.Rootfs != ""
		m.Apps = append(m.Apps, a)
	}
	switch iso := p.Annotations[AnnotationIsolation]; iso {
	case "":
		if rootfs {
			m.Isolation = "namespaces"
		}
	case "none":
		if rootfs {
			rs.add("metadata.annotations["+AnnotationIsolation+"]", "none cannot run an image that maps to a root filesystem: that needs namespaces")
		}
		m.Isolation = iso
	case "namespaces":
		m.Isolation = iso
	default:
		rs.add("metadata.annotations["+AnnotationIsolation+"]", "%q is not none or namespaces", iso)
	}
	hostname := m.Name // an isolated pod's own
	if m.Isolation == "namespaces" {
		m.Network = "host"
	} else if h, err := os.Hostname(); err == nil {
		hostname = h
	}
	c.etcFiles(p, &m, hostname, in, vols)
	floor := c.minRestartBackoff()
	m.RestartBackoff = &backoff{Initial: floor.String()}
	if b, ok := p.Annotations[AnnotationRestartBackoff]; ok {
		d, err := time.ParseDuration(b)
		switch {
		case err != nil || d <= 0 || d > MaxRestartBackoff:
			rs.add("metadata.annotations["+AnnotationRestartBackoff+"]", "%q is not a duration above 0 and at most %s", b, MaxRestartBackoff)
		case d < floor:
			rs.add("metadata.annotations["+AnnotationRestartBackoff+"]", "%q is shorter than this node's minimum restart back-off, %s (set by the node's operator)", b, floor)
		}
		m.RestartBackoff.Initial = d.String()
	}
	if len(rs) > 0 {
		return nil, rs
	}
	if len(in.waits) > 0 {
		return nil, waitError(slices.Compact(slices.Sorted(slices.Values(in.waits))))
	}
	return json.Marshal(m)
}

// checkPodSpec refuses what the Pod asks of its whole sandbox that a
// unitrun pod cannot give.
func (c *Config) checkPodSpec(p *corev1.Pod, rs *refusals) {
	s := &p.Spec
	if s.HostPID {
		rs.add("spec.hostPID", "not supported: the pod's processes are the host's or, isolated, in a PID namespace of the pod's own")
	}
	if s.HostIPC {
		rs.add("spec.hostIPC", "not supported: the pod's processes use the host's IPC or, isolated, an IPC namespace of the pod's own")
	}
	if s.ShareProcessNamespace != nil && *s.ShareProcessNamespace {
		rs.add("spec.shareProcessNamespace", "not supported: the pod's processes are the host's or, isolated, in a PID namespace of the pod's own whose first process is its systemd")
	}
	if s.EphemeralContainers != nil {
		rs.add("spec.ephemeralContainers", "not supported: a unitrun pod's apps are fixed when it is created")
	}
	if s.HostUsers != nil && !*s.HostUsers {
		rs.add("spec.hostUsers", "false is not supported: unitrun pods have no user namespaces")
	}
	if s.SecurityContext != nil {
		sc := s.SecurityContext
		if sc.FSGroup != nil {
			rs.add("spec.securityContext.fsGroup", "not supported: an app runs with its user and group only (runAsUser, runAsGroup), and the node does not change the group of its volumes")
		}
		if len(sc.SupplementalGroups) > 0 {
			rs.add("spec.securityContext.supplementalGroups", "not supported: an app runs with its user and group only (runAsUser, runAsGroup)")
		}
		if len(sc.Sysctls) > 0 {
			rs.add("spec.securityContext.sysctls", "not supported: the pod has the host's network and kernel, whose settings it would change for every process of the host")
		}
		if sc.SELinuxOptions != nil || sc.SeccompProfile != nil || sc.AppArmorProfile != nil || sc.WindowsOptions != nil {
			rs.add("spec.securityContext", "seLinuxOptions, seccompProfile, appArmorProfile and windowsOptions are not supported: the node maps no security profile")
		}
	}
	if len(s.ResourceClaims) > 0 {
		rs.add("spec.resourceClaims", "not supported: the node allocates no devices (no dynamic resource allocation)")
	}
	if s.Resources != nil {
		rs.add("spec.resources", "pod-level resources are not supported: set them on each container")
	}
	if s.Hostname != "" || s.Subdomain != "" || s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN {
		rs.add("spec.hostname", "hostname, subdomain and setHostnameAsFQDN are not supported: the pod has the host's hostname or, isolated, one of its own")
	}
}

// container maps one container to an app.
func (c *Config) container(p *corev1.Pod, ctr *corev1.Container, path string, vols map[string]*volume, in *inputs, rs *refusals) app {
	a := app{Name: ctr.Name}
	if err := checkAppName(podName(p.Namespace, p.Name, string(p.UID)), ctr.Name); err != nil {
		rs.add(path+".name", "%q: %v", ctr.Name, err)
	}
	img, ok := c.Images[ctr.Image]
	switch {
	case !ok:
		rs.add(path+".image", "%q is not mapped to a root filesystem or to host in this node's image map", ctr.Image)
	case img != HostImage:
		a.Rootfs = img
	}
	env, err := c.environment(p, ctr, path, in, rs)
	if err == nil {
		a.Env = env
	}
	a.Exec = append(expandAll(ctr.Command, env), expandAll(ctr.Args, env)...)
	// An image mapped to host has no entrypoint: without a command its
	// args are the command, as a container runtime runs an image whose
	// Entrypoint is empty. A root filesystem's entrypoint is not known.
	switch {
	case len(ctr.Command) > 0:
	case img != HostImage:
		rs.add(path+".command", "required: this node has no image metadata to take an entrypoint from")
	case len(ctr.Args) == 0:
		rs.add(path+".command", "required, or args: an image mapped to host has no entrypoint or default command")
	}
	a.WorkingDir = ctr.WorkingDir
	a.TerminationMessagePath = ctr.TerminationMessagePath
	c.securityContext(p, ctr, path, &a, rs)
	a.Resources = containerResources(ctr, path, rs)
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		a.StopTimeout = (time.Duration(*g) * time.Second).String()
		if *g == 0 {
			a.StopTimeout = "1ns"
		}
	}
	for j, port := range ctr.Ports {
		if !p.Spec.HostNetwork {
			rs.add(fmt.Sprintf("%s.ports[%d]", path, j), "port %d on a pod network: this node has none; set hostNetwork: true", port.ContainerPort)
		}
	}
	a.Mounts = volumeMounts(ctr, path, vols, env, rs)
	if len(ctr.VolumeDevices) > 0 {
		rs.add(path+".volumeDevices", "not supported: the node provides no block volumes")
	}
	if l := ctr.Lifecycle; l != nil {
		a.PostStart = mapHook(ctr, l.PostStart, path+".lifecycle.postStart", rs)
		a.PreStop = mapHook(ctr, l.PreStop, path+".lifecycle.preStop", rs)
		if l.StopSignal != nil {
			rs.add(path+".lifecycle.stopSignal", "not supported: the node stops every container with SIGTERM, then SIGKILL")
		}
	}
	if ctr.Stdin || ctr.TTY {
		rs.add(path+".stdin", "stdin and tty are not supported: an app gets no input and no terminal")
	}
	if len(ctr.ResizePolicy) > 0 {
		rs.add(path+".resizePolicy", "not supported: the node does not resize a running container's resources")
	}
	if ctr.RestartPolicy != nil && !strings.HasPrefix(path, "spec.initContainers") {
		rs.add(path+".restartPolicy", "a container's own restartPolicy is not supported")
	}
	return a
}

// securityContext maps runAsUser and runAsGroup (the container's, else the
// Pod's) and refuses the rest.
func (c *Config) securityContext(p *corev1.Pod, ctr *corev1.Container, path string, a *app, rs *refusals) {
	var user, group *int64
	nonRoot := false
	if ps := p.Spec.SecurityContext; ps != nil {
		user, group = ps.RunAsUser, ps.RunAsGroup
		nonRoot = ps.RunAsNonRoot != nil && *ps.RunAsNonRoot
	}
	sc := ctr.SecurityContext
	if sc != nil {
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			group = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
		sp := path + ".securityContext"
		if sc.Privileged != nil && *sc.Privileged && !c.AllowPrivileged {
			rs.add(sp+".privileged", "this node does not allow privileged containers")
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 && !c.AllowPrivileged {
			rs.add(sp+".capabilities.add", "this node does not allow added capabilities")
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			a.NoNewPrivileges = true
		}
		if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			a.ReadOnlyRoot = true
		}
		if sc.SELinuxOptions != nil || sc.SeccompProfile != nil || sc.AppArmorProfile != nil || sc.WindowsOptions != nil || sc.ProcMount != nil {
			rs.add(sp, "seLinuxOptions, seccompProfile, appArmorProfile, windowsOptions and procMount are not supported: the node maps no security profile and mounts /proc as systemd does")
		}
	}
	if sc == nil || sc.Privileged == nil || !*sc.Privileged {
		var caps *corev1.Capabilities
		if sc != nil {
			caps = sc.Capabilities
		}
		set := capabilities(caps, path+".securityContext.capabilities", rs)
		a.Capabilities = &set
	}
	if user != nil {
		a.User = strconv.FormatInt(*user, 10)
	}
	if group != nil {
		a.Group = strconv.FormatInt(*group, 10)
	}
	if (user == nil || *user == 0) && !c.AllowPrivileged {
		rs.add(path+".securityContext.runAsUser", "root (0 or not set) runs as root on the host, which this node does not allow")
	}
	if group != nil && *group == 0 && !c.AllowPrivileged {
		rs.add(path+".securityContext.runAsGroup", "0 is root's group on the host, which this node does not allow")
	}
	if sc != nil && c.AllowPrivileged && user != nil && *user != 0 {
		// Allowed, they are what root has on the host; another user
		// has none of them.
		if sc.Privileged != nil && *sc.Privileged {
			rs.add(path+".securityContext.privileged", "needs runAsUser 0: unitrun gives no capabilities to another user")
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
			rs.add(path+".securityContext.capabilities.add", "needs runAsUser 0: unitrun gives no capabilities to another user")
		}
	}
	if nonRoot && (user == nil || *user == 0) {
		rs.add(path+".securityContext.runAsNonRoot", "true, but runAsUser is 0 or not set")
	}
}

// defaultCapabilities are the capabilities a container runtime gives a
// container that is not privileged: containerd's default set.
var defaultCapabilities = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
}

// capabilities is the capability set of a container that is not
// privileged: the runtime's default set, without those of c.Drop, with
// those of c.Add (ALL: every one), as containerd makes it. Names may
// carry CAP_ and be of any case.
func capabilities(c *corev1.Capabilities, path string, rs *refusals) []string {
	set := slices.Clone(defaultCapabilities)
	if c == nil {
		return set
	}
	names := func(field string, list []corev1.Capability) (all bool, out []string) {
		for i, n := range list {
			name := strings.TrimPrefix(strings.ToUpper(string(n)), "CAP_")
			switch {
			case name == "ALL":
				all = true
			case slices.Contains(capabilityNames, name):
				out = append(out, name)
			default:
				rs.add(fmt.Sprintf("%s.%s[%d]", path, field, i), "%q is not a Linux capability", n)
			}
		}
		return all, out
	}
	if all, drop := names("drop", c.Drop); all {
		set = []string{}
	} else {
		set = slices.DeleteFunc(set, func(n string) bool { return slices.Contains(drop, n) })
	}
	all, add := names("add", c.Add)
	if all {
		return slices.Clone(capabilityNames)
	}
	for _, n := range add {
		if !slices.Contains(set, n) {
			set = append(set, n)
		}
	}
	return set
}

// containerResources maps limits.memory to MemoryMax=, limits.cpu to
// CPUQuota= (as the kubelet maps it to a CFS quota) and requests.cpu to
// CPUWeight= (as the kubelet maps CPU requests to cgroup v2 weights), and
// refuses limits it cannot enforce.
func containerResources(ctr *corev1.Container, path string, rs *refusals) *resources {
	var r resources
	for name, q := range ctr.Resources.Limits {
		switch name {
		case corev1.ResourceMemory:
			r.Memory = strconv.FormatInt(q.Value(), 10)
		case corev1.ResourceCPU:
			m := int(max(q.MilliValue(), 1))
			r.CPUMillis = &m
		default:
			rs.add(fmt.Sprintf("%s.resources.limits[%s]", path, name), "not supported: unitrun pods limit memory and CPU only")
		}
	}
	for name, q := range ctr.Resources.Requests {
		switch name {
		case corev1.ResourceCPU:
			w := cpuWeight(q)
			r.CPUWeight = &w
		case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			// Requests place a Pod; the scheduler accounts them
			// against the node's allocatable.
		default:
			rs.add(fmt.Sprintf("%s.resources.requests[%s]", path, name), "not supported: the node has CPU and memory only, no extended resources")
		}
	}
	if len(ctr.Resources.Claims) > 0 {
		rs.add(path+".resources.claims", "not supported: the node allocates no devices (no dynamic resource allocation)")
	}
	if r.Memory == "" && r.CPUWeight == nil {
		return nil
	}
	return &r
}

// cpuWeight is the kubelet's cgroup v2 weight for a CPU request: shares
// (milliCPU×1024/1000, at least 2) mapped onto 1…10000.
func cpuWeight(q resource.Quantity) int {
	shares := max(q.MilliValue()*1024/1000, 2)
	shares = min(shares, 262144)
	return int(1 + (shares-2)*9999/262142)
}

// probes maps the container's liveness and startup probes to probes that
// take action when they fail, and its readiness probe to a readiness
// probe.
func (a *app) probes(ctr *corev1.Container, path, action string, rs *refusals) {
	if ctr.LivenessProbe != nil {
		a.Probe = mapProbe(ctr, ctr.LivenessProbe, path+".livenessProbe", "liveness", rs)
		a.Probe.Action = action
	}
	if ctr.ReadinessProbe != nil {
		a.Readiness = mapProbe(ctr, ctr.ReadinessProbe, path+".readinessProbe", "readiness", rs)
	}
	if ctr.StartupProbe != nil {
		a.Startup = mapProbe(ctr, ctr.StartupProbe, path+".startupProbe", "startup", rs)
		a.Startup.Action = action
	}
}

// probeAction is what a failed liveness or startup probe of a container
// does under the Pod's restart policy. The kubelet kills the container and
// lets the policy decide: under Never, the container has failed and will
// not run again, and the Pod fails (unitrun's fail-pod, which stops the
// other containers at once, where the kubelet lets them run to their
// end); under OnFailure and Always, it restarts.
func probeAction(policy corev1.RestartPolicy) string {
	if policy == corev1.RestartPolicyNever {
		return "fail-pod"
	}
	return "restart"
}

// mapProbe maps lp, the container's probe of kind (liveness, readiness or
// startup) at path, to a unitrun probe without an action.
func mapProbe(ctr *corev1.Container, lp *corev1.Probe, path, kind string, rs *refusals) *probe {
	pr := &probe{
		InitialDelaySeconds: lp.InitialDelaySeconds, PeriodSeconds: lp.PeriodSeconds,
		TimeoutSeconds: lp.TimeoutSeconds, FailureThreshold: lp.FailureThreshold,
	}
	if lp.SuccessThreshold > 1 {
		rs.add(path+".successThreshold", "must be 1 for a %s probe: unitrun counts one success", kind)
	}
	if g := lp.TerminationGracePeriodSeconds; g != nil {
		pr.StopTimeout = (time.Duration(*g) * time.Second).String()
	}
	switch h := lp.ProbeHandler; {
	case h.Exec != nil:
		pr.Exec = h.Exec.Command
	case h.HTTPGet != nil:
		port, ok := probePort(ctr, h.HTTPGet.Port.IntVal, h.HTTPGet.Port.StrVal)
		if !ok {
			rs.add(path+".httpGet.port", "%q names no port of the container", h.HTTPGet.Port.String())
		}
		pr.HTTP = &httpProbe{Port: port, Path: h.HTTPGet.Path}
		if h.HTTPGet.Host != "" && h.HTTPGet.Host != "127.0.0.1" && h.HTTPGet.Host != "localhost" {
			rs.add(path+".httpGet.host", "not supported: the probe checks the pod's localhost")
		}
		if h.HTTPGet.Scheme != "" && h.HTTPGet.Scheme != corev1.URISchemeHTTP {
			rs.add(path+".httpGet.scheme", "%s is not supported: only HTTP", h.HTTPGet.Scheme)
		}
		if len(h.HTTPGet.HTTPHeaders) > 0 {
			rs.add(path+".httpGet.httpHeaders", "not supported: unitrun's HTTP probe sends a GET of the path with no headers of the Pod's")
		}
	case h.TCPSocket != nil:
		port, ok := probePort(ctr, h.TCPSocket.Port.IntVal, h.TCPSocket.Port.StrVal)
		if !ok {
			rs.add(path+".tcpSocket.port", "%q names no port of the container", h.TCPSocket.Port.String())
		}
		pr.TCP = &tcpProbe{Port: port}
		if h.TCPSocket.Host != "" && h.TCPSocket.Host != "127.0.0.1" && h.TCPSocket.Host != "localhost" {
			rs.add(path+".tcpSocket.host", "not supported: the probe checks the pod's localhost")
		}
	case h.GRPC != nil:
		pr.GRPC = &grpcProbe{Port: h.GRPC.Port}
		if h.GRPC.Service != nil {
			pr.GRPC.Service = *h.GRPC.Service
		}
	default:
		rs.add(path, "has no handler")
	}
	return pr
}

// mapHook maps h, the container's lifecycle hook at path, to a unitrun
// hook: exec and httpGet as a probe's, sleep as unitrun's sleep (in its
// hook process, not the container's: the kubelet sleeps itself); nil for
// none.
func mapHook(ctr *corev1.Container, h *corev1.LifecycleHandler, path string, rs *refusals) *hook {
	switch {
	case h == nil:
		return nil
	case h.Sleep != nil:
		return &hook{Sleep: (time.Duration(h.Sleep.Seconds) * time.Second).String()}
	case h.TCPSocket != nil:
		rs.add(path+".tcpSocket", "not supported: the kubelet does not run it either")
		return nil
	}
	pr := mapProbe(ctr, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet}}, path, "lifecycle", rs)
	return &hook{Exec: pr.Exec, HTTP: pr.HTTP}
}

// probePort resolves a probe's port, by number or by the name of one of
// the container's ports.
func probePort(ctr *corev1.Container, num int32, name string) (int32, bool) {
	if name == "" {
		return num, num > 0
	}
	for _, p := range ctr.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// environment returns the container's environment, as the kubelet makes
// it: the service variables, then the variables of envFrom's ConfigMaps
// and Secrets (those whose names are not variable names left out), then
// the container's env: values (with $(VAR) references to the variables
// before them expanded), keys of ConfigMaps and Secrets, the Pod's fields
// (fieldRef) and the container's resources (resourceFieldRef). A
// ConfigMap, Secret or key that is not there is waited for, unless
// optional.
func (c *Config) environment(p *corev1.Pod, ctr *corev1.Container, path string, in *inputs, rs *refusals) (map[string]string, error) {
	env := maps.Clone(in.svcEnv)
	if env == nil {
		env = map[string]string{}
	}
	n := len(*rs)
	for _, ef := range ctr.EnvFrom {
		kind, name, data, optional := "configmap", "", map[string][]byte(nil), (*bool)(nil)
		switch {
		case ef.ConfigMapRef != nil:
			name, optional = ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional
			data = in.configMapData(name, false)
		case ef.SecretRef != nil:
			kind, name, optional = "secret", ef.SecretRef.Name, ef.SecretRef.Optional
			data = in.secretData(name)
		}
		if data == nil && !isTrue(optional) {
			in.wait("%s %q", kind, name)
		}
		for k, v := range data {
			if k = ef.Prefix + k; validEnvKey(k) {
				env[k] = string(v)
			}
		}
	}
	for i, e := range ctr.Env {
		field := fmt.Sprintf("%s.env[%d]", path, i)
		switch from := e.ValueFrom; {
		case from == nil:
			env[e.Name] = expand(e.Value, env)
		case from.FieldRef != nil:
			fp := from.FieldRef.FieldPath
			v, why := c.fieldRef(p, fp)
			if why != "" {
				rs.add(field+".valueFrom.fieldRef.fieldPath", "%q %s", fp, why)
			}
			env[e.Name] = v
		case from.ResourceFieldRef != nil:
			target := ctr
			if name := from.ResourceFieldRef.ContainerName; name != "" {
				if target = findContainer(p, name); target == nil {
					rs.add(field+".valueFrom.resourceFieldRef.containerName", "%q names no container of the pod", name)
					continue
				}
			}
			v, err := c.resourceValue(target, from.ResourceFieldRef)
			if err != nil {
				rs.add(field+".valueFrom.resourceFieldRef.resource", "%v", err)
			}
			env[e.Name] = v
		case from.ConfigMapKeyRef != nil:
			ref := from.ConfigMapKeyRef
			keyEnv(in, env, e.Name, "configmap", ref.Name, in.configMapData(ref.Name, false), ref.Key, ref.Optional)
		case from.SecretKeyRef != nil:
			ref := from.SecretKeyRef
			keyEnv(in, env, e.Name, "secret", ref.Name, in.secretData(ref.Name), ref.Key, ref.Optional)
		default:
			rs.add(field+".valueFrom", "only fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef are supported (not fileKeyRef)")
		}
	}
	if len(*rs) > n {
		return nil, (*rs)[n:]
	}
	return env, nil
}

// keyEnv sets variable name of env to key of data, the data of the object
// kind objName (nil: not found); an object or key that is not there is
// waited for, unless optional.
func keyEnv(in *inputs, env map[string]string, name, kind, objName string, data map[string][]byte, key string, optional *bool) {
	v, ok := data[key]
	switch {
	case ok:
		env[name] = string(v)
	case isTrue(optional):
	case data == nil:
		in.wait("%s %q", kind, objName)
	default:
		in.wait("key %q of %s %q", key, kind, objName)
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// fieldRef is the value of a fieldRef to path, or why it has none. A Pod
// here has the host's network, so its IP is the node's address, as a
// kubelet reports a Pod of hostNetwork. Labels and annotations read as
// the kubelet writes them: one key="value" line each, sorted by key.
func (c *Config) fieldRef(p *corev1.Pod, path string) (value, why string) {
	switch path {
	case "metadata.name":
		return p.Name, ""
	case "metadata.namespace":
		return p.Namespace, ""
	case "metadata.uid":
		return string(p.UID), ""
	case "metadata.labels":
		return formatMap(p.Labels), ""
	case "metadata.annotations":
		return formatMap(p.Annotations), ""
	case "spec.nodeName":
		return p.Spec.NodeName, ""
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, ""
	case "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		if c.Address == "" {
			return "", "has no value: this node has no address (start it with --node-ip)"
		}
		return c.Address, ""
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels['": p.Labels, "metadata.annotations['": p.Annotations} {
		if k, ok := strings.CutPrefix(path, prefix); ok && strings.HasSuffix(k, "']") {
			return m[strings.TrimSuffix(k, "']")], ""
		}
	}
	return "", "is not supported: metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations (or one of their keys), spec.nodeName, spec.serviceAccountName, status.hostIP(s) and status.podIP(s) are"
}

// formatMap writes m as the downward API does: key="value" lines (the
// value quoted as Go quotes it), sorted by key, without a final newline.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func expandAll(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expand(a, env)
	}
	return out
}

// expand replaces $(VAR) by VAR's value in env, and $$ by $, as Kubernetes
// expands command, args and env values; a reference to a variable not in
// env stays as written.
func expand(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
