package kube

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/unitrun/unitrun/internal/lazyregexp"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/appexec"
)

// Annotations a Pod may carry for unitrun.
const (
	// AnnotationIsolation chooses the unitrun pod's isolation: "none" (its
	// apps are units of the host's manager) or "namespaces" (under a
	// systemd of its own). Without it a pod whose images are all "host"
	// runs without isolation, and one with a root filesystem in namespaces.
	AnnotationIsolation = "unitrun.io/isolation"
	// AnnotationRestartBackoff is the first delay before a container
	// restarts (a Go duration, "1s"), which doubles with each restart up to
	// five minutes; Kubernetes has no field for it. It may not be below
	// Options.MinRestartBackoff, which is also its default.
	AnnotationRestartBackoff = "unitrun.io/restart-backoff"
)

// MaxRestartBackoff is the longest first restart delay a Pod may ask
// for, the most a delay doubles to.
const MaxRestartBackoff = 5 * time.Minute

// DefaultMinRestartBackoff is the kubelet's restart back-off: a Pod author
// has no way under it.
const DefaultMinRestartBackoff = 10 * time.Second

// HostImage is the image mapping that runs a container on the host's own
// file system.
const HostImage = "host"

// Options are what the mapping takes besides the Pod: the unitrun pod's
// name, the host's rules, and the data of the Pod's cluster, which
// unitrun-node reads from the API (without it, what needs it is refused).
type Options struct {
	// Name is the unitrun pod's name.
	Name string
	// Images maps a container's image to the absolute path of a root
	// filesystem or to HostImage. An image it does not map is a registry
	// image if RegistryImages, else refused.
	Images map[string]string
	// RegistryImages makes an image that Images does not map a registry
	// image: the app's image, pulled under the container's
	// imagePullPolicy (else Kubernetes' default) when the pod is created
	// (podrun.Runner.Pull pulls it, where the caller chooses how), whose
	// config gives the command, env, workingDir and user the container
	// does not set, by Kubernetes' rules (pod.MergeImage), and whose
	// layers are the app's root, in namespaces.
	RegistryImages bool
	// AllowPrivileged allows containers that run as root, privileged
	// ones and added capabilities.
	AllowPrivileged bool
	// MinRestartBackoff is the floor and default of the Pod's first
	// restart delay; 0 is DefaultMinRestartBackoff.
	MinRestartBackoff time.Duration
	// Volumes are the directories of the Pod's volumes, by name: a
	// hostPath's path, the directory the caller makes for an emptyDir or
	// fills with an API object's files. A volume mount of a volume not in
	// it is refused.
	Volumes map[string]*VolumeDir
	// ServiceEnv are the variables every container starts with (the
	// kubelet's service variables).
	ServiceEnv map[string]string
	// ConfigMap and Secret return the data of the object name of the
	// Pod's namespace, nil if there is none; nil functions mean that
	// there is no cluster, and a reference to one is refused.
	ConfigMap, Secret func(name string) map[string][]byte
	// Address is the Pod's IP and its host's (status.podIP, hostIP);
	// "": a fieldRef to them is refused.
	Address string
	// Allocatable is the host's cpu and memory, a container's limit
	// where it sets none; nil: a resourceFieldRef to such a limit is
	// refused.
	Allocatable func() (map[string]Quantity, error)
}

// VolumeDir is a volume as it is mounted: a host directory.
type VolumeDir struct {
	Dir string
	// EmptyDir says the caller makes Dir, and in it the SubPaths, to
	// which the mapping adds those the containers mount.
	EmptyDir bool
	SubPaths []string
	// ReadOnly volumes (an API object's files) are mounted read-only.
	ReadOnly bool
}

// A Refusal is why a Pod cannot run: the field and the rule.
type Refusal struct {
	Field string
	Rule  string
}

func (r Refusal) Error() string {
	if r.Field == "" {
		return r.Rule
	}
	return r.Field + ": " + r.Rule
}

// Refusals are every refusal of one Pod.
type Refusals []Refusal

// Add adds the refusal of field, its rule as format and args say.
func (rs *Refusals) Add(field, format string, args ...any) {
	*rs = append(*rs, Refusal{Field: field, Rule: fmt.Sprintf(format, args...)})
}

func (rs Refusals) Error() string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.Error())
	}
	return b.String()
}

// A WaitError says what a Pod needs from its cluster that is not there
// yet: the kubelet keeps such a Pod Pending, and so does unitrun-node,
// trying again until it is.
type WaitError []string

func (w WaitError) Error() string { return strings.Join(w, "; ") }

// mapping is one Pod's translation.
type mapping struct {
	p     *Pod
	o     *Options
	rs    Refusals
	waits []string
}

// Translate returns the unitrun manifest that runs p, or every reason it
// cannot (Refusals) with the manifest as far as p maps (whose images may
// be checked beside them), or, if it could run, what it waits for
// (WaitError).
// It adds to o.Volumes' emptyDirs the subPaths the containers mount.
func Translate(p *Pod, o *Options) (*Manifest, error) {
	t := &mapping{p: p, o: o}
	rs := &t.rs
	m := &Manifest{Name: o.Name}
	switch r := p.Spec.RestartPolicy; r {
	case "Always", "OnFailure", "Never":
		m.RestartPolicy = r
	case "":
		m.RestartPolicy = "Always"
	default:
		rs.Add("spec.restartPolicy", "%q is not Always, OnFailure or Never", r)
	}
	t.checkSpec()
	t.checkVolumes()
	// A root filesystem needs the pod's namespaces; a registry image is
	// isolated too, unless the annotation says none.
	rootfs, registry := false, false
	for i := range p.Spec.InitContainers {
		ctr := &p.Spec.InitContainers[i]
		path := fmt.Sprintf("spec.initContainers[%d]", i)
		a := t.container(ctr, path, true)
		switch {
		case ctr.RestartPolicy == nil:
			a.Init = true
			// The kubelet retries a failed init container, with its
			// back-off, unless the Pod's restartPolicy is Never.
			if p.Spec.RestartPolicy != "Never" {
				a.RestartPolicy = "OnFailure"
			}
			for _, f := range []struct {
				name  string
				probe *Probe
			}{{"livenessProbe", ctr.LivenessProbe}, {"readinessProbe", ctr.ReadinessProbe}, {"startupProbe", ctr.StartupProbe}} {
				if f.probe != nil {
					rs.Add(path+"."+f.name, "an init container has no probes (a sidecar, restartPolicy: Always, has)")
				}
			}
		case *ctr.RestartPolicy == "Always":
			// A sidecar, as Kubernetes 1.29 and later run it.
			a.Sidecar = true
			a.probes(ctr, path, "restart", rs)
		default:
			rs.Add(path+".restartPolicy", "%q: an init container's restartPolicy can only be Always, which makes it a sidecar", *ctr.RestartPolicy)
		}
		rootfs, registry = rootfs || a.Rootfs != "", registry || a.Image != ""
		m.Apps = append(m.Apps, a)
	}
	for i := range p.Spec.Containers {
		ctr := &p.Spec.Containers[i]
		path := fmt.Sprintf("spec.containers[%d]", i)
		a := t.container(ctr, path, false)
		a.probes(ctr, path, probeAction(p.Spec.RestartPolicy), rs)
		rootfs, registry = rootfs || a.Rootfs != "", registry || a.Image != ""
		m.Apps = append(m.Apps, a)
	}
	if len(p.Spec.Containers) == 0 {
		rs.Add("spec.containers", "required: a Pod has at least one container")
	}
	switch iso := p.Metadata.Annotations[AnnotationIsolation]; iso {
	case "":
		if rootfs || registry {
			m.Isolation = "namespaces"
		}
	case "none":
		if rootfs {
			rs.Add("metadata.annotations["+AnnotationIsolation+"]", "none cannot run an image that maps to a root filesystem: that needs namespaces")
		}
		m.Isolation = iso
	case "namespaces":
		m.Isolation = iso
	default:
		rs.Add("metadata.annotations["+AnnotationIsolation+"]", "%q is not none or namespaces", iso)
	}
	if m.Isolation == "namespaces" {
		m.Network = "host"
	}
	floor := o.MinRestartBackoff
	if floor == 0 {
		floor = DefaultMinRestartBackoff
	}
	m.RestartBackoff = &Backoff{Initial: floor.String()}
	if b, ok := p.Metadata.Annotations[AnnotationRestartBackoff]; ok {
		d, err := time.ParseDuration(b)
		switch {
		case err != nil || d <= 0 || d > MaxRestartBackoff:
			rs.Add("metadata.annotations["+AnnotationRestartBackoff+"]", "%q is not a duration above 0 and at most %s", b, MaxRestartBackoff)
		case d < floor:
			rs.Add("metadata.annotations["+AnnotationRestartBackoff+"]", "%q is shorter than the minimum restart back-off, %s (the kubelet's, unless unitrun-node's operator set another)", b, floor)
		}
		m.RestartBackoff.Initial = d.String()
	}
	if len(t.rs) > 0 {
		return m, t.rs
	}
	if len(t.waits) > 0 {
		return nil, WaitError(slices.Compact(slices.Sorted(slices.Values(t.waits))))
	}
	return m, nil
}

// wait notes that the Pod needs what, which is not there yet.
func (t *mapping) wait(format string, args ...any) {
	t.waits = append(t.waits, fmt.Sprintf(format, args...))
}

// checkSpec refuses what the Pod asks of its whole sandbox that a
// unitrun pod cannot give.
func (t *mapping) checkSpec() {
	s, rs := &t.p.Spec, &t.rs
	if s.HostPID {
		rs.Add("spec.hostPID", "not supported: the pod's processes are the host's or, isolated, in a PID namespace of the pod's own")
	}
	if s.HostIPC {
		rs.Add("spec.hostIPC", "not supported: the pod's processes use the host's IPC or, isolated, an IPC namespace of the pod's own")
	}
	if IsTrue(s.ShareProcessNamespace) {
		rs.Add("spec.shareProcessNamespace", "not supported: the pod's processes are the host's or, isolated, in a PID namespace of the pod's own whose first process is its systemd")
	}
	if s.EphemeralContainers.IsSet() {
		rs.Add("spec.ephemeralContainers", "not supported: a unitrun pod's apps are fixed when it is created")
	}
	if s.HostUsers != nil && !*s.HostUsers {
		rs.Add("spec.hostUsers", "false is not supported: unitrun pods have no user namespaces")
	}
	if sc := s.SecurityContext; sc != nil {
		if sc.FSGroup.IsSet() {
			rs.Add("spec.securityContext.fsGroup", "not supported: an app runs with its user and group only (runAsUser, runAsGroup), and unitrun does not change the group of its volumes")
		}
		if len(sc.SupplementalGroups) > 0 {
			rs.Add("spec.securityContext.supplementalGroups", "not supported: an app runs with its user and group only (runAsUser, runAsGroup)")
		}
		if len(sc.Sysctls) > 0 {
			rs.Add("spec.securityContext.sysctls", "not supported: the pod has the host's network and kernel, whose settings it would change for every process of the host")
		}
		if sc.SELinuxOptions.IsSet() || sc.SeccompProfile.IsSet() || sc.AppArmorProfile.IsSet() || sc.WindowsOptions.IsSet() {
			rs.Add("spec.securityContext", "seLinuxOptions, seccompProfile, appArmorProfile and windowsOptions are not supported: unitrun maps no security profile")
		}
	}
	if s.ResourceClaims.IsSet() {
		rs.Add("spec.resourceClaims", "not supported: unitrun allocates no devices (no dynamic resource allocation)")
	}
	if s.Resources.IsSet() {
		rs.Add("spec.resources", "pod-level resources are not supported: set them on each container")
	}
	if s.Hostname != "" || s.Subdomain != "" || IsTrue(s.SetHostnameAsFQDN) || s.HostnameOverride.IsSet() {
		rs.Add("spec.hostname", "hostname, subdomain, setHostnameAsFQDN and hostnameOverride are not supported: the pod has the host's hostname or, isolated, one of its own")
	}
}

// checkVolumes refuses the Pod's volumes that cannot be mounted as they
// ask, and those that o.Volumes does not provide.
func (t *mapping) checkVolumes() {
	for i, v := range t.p.Spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case v.HostPath != nil:
			if typ := v.HostPath.Type; typ != nil && *typ != "" {
				t.rs.Add(field+".hostPath.type", "%q: not checked by unitrun; leave it unset", *typ)
			}
		case v.EmptyDir != nil:
			if m := v.EmptyDir.Medium; m != "" && m != "Memory" {
				t.rs.Add(field+".emptyDir.medium", "%q is not supported: an emptyDir is on the host's disk, or in memory (Memory)", m)
			}
		case v.ConfigMap.IsSet() || v.Secret.IsSet() || v.DownwardAPI.IsSet() || v.Projected.IsSet():
			if t.o.Volumes[v.Name] == nil {
				t.rs.Add(field, "volume %q: configMap, secret, downwardAPI and projected volumes hold a cluster's objects: they need unitrun-node", v.Name)
			}
		default:
			t.rs.Add(field, "volume %q: only hostPath, emptyDir, configMap, secret, downwardAPI and projected volumes are supported", v.Name)
		}
	}
}

// container maps one container (init: of initContainers) to an app.
func (t *mapping) container(ctr *Container, path string, init bool) App {
	p, o, rs := t.p, t.o, &t.rs
	a := App{Name: ctr.Name}
	if err := pod.CheckAppName(o.Name, ctr.Name); err != nil {
		rs.Add(path+".name", "%q: %v", ctr.Name, err)
	}
	img, ok := o.Images[ctr.Image]
	switch {
	case ok && img != HostImage:
		a.Rootfs = img
	case ok:
	case ctr.Image == "":
		rs.Add(path+".image", "required")
	case o.RegistryImages:
		a.Image = ctr.Image
		switch pp := ctr.ImagePullPolicy; pp {
		case "", "Always", "IfNotPresent", "Never":
			a.ImagePullPolicy = pp
		default:
			rs.Add(path+".imagePullPolicy", "%q: must be one of Always, IfNotPresent, Never", pp)
		}
	default:
		rs.Add(path+".image", "%q is not mapped to a root filesystem or to host (--image %s=host or --image %s=/path/to/rootfs)", ctr.Image, ctr.Image, ctr.Image)
	}
	env, err := t.environment(ctr, path)
	if err == nil {
		a.Env = env
	}
	if a.Image != "" {
		// The image's config gives what the container does not set,
		// as Kubernetes merges command and args with Entrypoint and Cmd,
		// when the pod is created (pod.MergeImage).
		a.Exec, a.Args = expandAll(ctr.Command, env), expandAll(ctr.Args, env)
	} else {
		a.Exec = append(expandAll(ctr.Command, env), expandAll(ctr.Args, env)...)
	}
	// An image mapped to host has no entrypoint: without a command its
	// args are the command, as a container runtime runs an image whose
	// Entrypoint is empty. A root filesystem's entrypoint is not known.
	switch {
	case len(ctr.Command) > 0 || a.Image != "":
	case img != HostImage:
		rs.Add(path+".command", "required: unitrun has no image metadata to take an entrypoint from")
	case len(ctr.Args) == 0:
		rs.Add(path+".command", "required, or args: an image mapped to host has no entrypoint or default command")
	}
	a.WorkingDir = ctr.WorkingDir
	a.TerminationMessagePath = ctr.TerminationMessagePath
	t.securityContext(ctr, path, &a)
	a.Resources = containerResources(ctr, path, rs)
	a.StopTimeout = podGracePeriod(p).String()
	for j, port := range ctr.Ports {
		if !p.Spec.HostNetwork {
			rs.Add(fmt.Sprintf("%s.ports[%d]", path, j), "port %d on a pod network: unitrun has none; set hostNetwork: true", port.ContainerPort)
		}
	}
	a.Mounts = t.volumeMounts(ctr, path, env)
	if len(ctr.VolumeDevices) > 0 {
		rs.Add(path+".volumeDevices", "not supported: unitrun provides no block volumes")
	}
	if l := ctr.Lifecycle; l != nil {
		a.PostStart = mapHook(ctr, l.PostStart, path+".lifecycle.postStart", rs)
		a.PreStop = mapHook(ctr, l.PreStop, path+".lifecycle.preStop", rs)
		if l.StopSignal.IsSet() {
			rs.Add(path+".lifecycle.stopSignal", "not supported: unitrun stops every container with SIGTERM, then SIGKILL")
		}
	}
	if ctr.Stdin || ctr.TTY {
		rs.Add(path+".stdin", "stdin and tty are not supported: an app gets no input and no terminal")
	}
	if len(ctr.ResizePolicy) > 0 {
		rs.Add(path+".resizePolicy", "not supported: unitrun does not resize a running container's resources")
	}
	if len(ctr.RestartPolicyRules) > 0 {
		rs.Add(path+".restartPolicyRules", "not supported: a container restarts as the Pod's restartPolicy says")
	}
	if ctr.RestartPolicy != nil && !init {
		rs.Add(path+".restartPolicy", "a container's own restartPolicy is not supported")
	}
	return a
}

// securityContext maps runAsUser and runAsGroup (the container's, else the
// Pod's) and refuses the rest.
func (t *mapping) securityContext(ctr *Container, path string, a *App) {
	allow, rs := t.o.AllowPrivileged, &t.rs
	var user, group *int64
	nonRoot := false
	if ps := t.p.Spec.SecurityContext; ps != nil {
		user, group = ps.RunAsUser, ps.RunAsGroup
		nonRoot = IsTrue(ps.RunAsNonRoot)
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
		if IsTrue(sc.Privileged) && !allow {
			rs.Add(sp+".privileged", "this node does not allow privileged containers")
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 && !allow {
			rs.Add(sp+".capabilities.add", "this node does not allow added capabilities")
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			a.NoNewPrivileges = true
		}
		if IsTrue(sc.ReadOnlyRootFilesystem) {
			a.ReadOnlyRoot = true
		}
		if sc.SELinuxOptions.IsSet() || sc.SeccompProfile.IsSet() || sc.AppArmorProfile.IsSet() || sc.WindowsOptions.IsSet() || sc.ProcMount.IsSet() {
			rs.Add(sp, "seLinuxOptions, seccompProfile, appArmorProfile, windowsOptions and procMount are not supported: unitrun maps no security profile and mounts /proc as systemd does")
		}
	}
	if sc == nil || !IsTrue(sc.Privileged) {
		var caps *Capabilities
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
	if (user == nil || *user == 0) && !allow {
		rs.Add(path+".securityContext.runAsUser", "root (0 or not set) runs as root on the host, which this node does not allow")
	}
	if group != nil && *group == 0 && !allow {
		rs.Add(path+".securityContext.runAsGroup", "0 is root's group on the host, which this node does not allow")
	}
	if sc != nil && allow && user != nil && *user != 0 {
		// Allowed, they are what root has on the host; another user
		// has none of them.
		if IsTrue(sc.Privileged) {
			rs.Add(path+".securityContext.privileged", "needs runAsUser 0: unitrun gives no capabilities to another user")
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
			rs.Add(path+".securityContext.capabilities.add", "needs runAsUser 0: unitrun gives no capabilities to another user")
		}
	}
	switch {
	case nonRoot && user == nil && a.Image != "":
		// The kubelet looks at the image's user; so does the pod's
		// creation (pod.MergeImage).
		a.RunAsNonRoot = true
	case nonRoot && (user == nil || *user == 0):
		rs.Add(path+".securityContext.runAsNonRoot", "true, but runAsUser is 0 or not set")
	}
}

// DefaultCapabilities are the capabilities a container runtime gives a
// container that is not privileged: containerd's default set.
var DefaultCapabilities = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
}

// capabilities is the capability set of a container that is not
// privileged: the runtime's default set, without those of c.Drop, with
// those of c.Add (ALL: every one), as containerd makes it. Names may
// carry CAP_ and be of any case.
func capabilities(c *Capabilities, path string, rs *Refusals) []string {
	set := slices.Clone(DefaultCapabilities)
	if c == nil {
		return set
	}
	names := func(field string, list []string) (all bool, out []string) {
		for i, n := range list {
			name := strings.TrimPrefix(strings.ToUpper(n), "CAP_")
			switch {
			case name == "ALL":
				all = true
			case slices.Contains(appexec.CapabilityNames, name):
				out = append(out, name)
			default:
				rs.Add(fmt.Sprintf("%s.%s[%d]", path, field, i), "%q is not a Linux capability", n)
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
		return slices.Clone(appexec.CapabilityNames)
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
func containerResources(ctr *Container, path string, rs *Refusals) *Limits {
	var r Limits
	for _, name := range slices.Sorted(maps.Keys(ctr.Resources.Limits)) {
		q := ctr.Resources.Limits[name]
		switch name {
		case "memory":
			r.Memory = strconv.FormatInt(q.Value(), 10)
		case "cpu":
			m := int(max(q.MilliValue(), 1))
			r.CPUMillis = &m
		default:
			rs.Add(fmt.Sprintf("%s.resources.limits[%s]", path, name), "not supported: unitrun pods limit memory and CPU only")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ctr.Resources.Requests)) {
		switch name {
		case "cpu":
			w := cpuWeight(ctr.Resources.Requests[name])
			r.CPUWeight = &w
		case "memory", "ephemeral-storage":
			// Requests place a Pod; a scheduler accounts them
			// against the node's allocatable.
		default:
			rs.Add(fmt.Sprintf("%s.resources.requests[%s]", path, name), "not supported: unitrun has CPU and memory only, no extended resources")
		}
	}
	if len(ctr.Resources.Claims) > 0 {
		rs.Add(path+".resources.claims", "not supported: unitrun allocates no devices (no dynamic resource allocation)")
	}
	if r.Memory == "" && r.CPUWeight == nil {
		return nil
	}
	return &r
}

// cpuWeight is the kubelet's cgroup v2 weight for a CPU request: shares
// (milliCPU×1024/1000, at least 2) mapped onto 1…10000.
func cpuWeight(q Quantity) int {
	shares := max(q.MilliValue()*1024/1000, 2)
	shares = min(shares, 262144)
	return int(1 + (shares-2)*9999/262142)
}

// probes maps the container's liveness and startup probes to probes that
// take action when they fail, and its readiness probe to a readiness
// probe.
// An exec probe's command has $(VAR) expanded from staticEnv, as the
// kubelet expands it (a lifecycle hook's is not).
func (a *App) probes(ctr *Container, path, action string, rs *Refusals) {
	env := staticEnv(ctr)
	probe := func(lp *Probe, field, kind string) *AppProbe {
		pr := mapProbe(ctr, lp, path+"."+field, kind, rs)
		if pr.Exec != nil {
			pr.Exec = expandAll(pr.Exec, env)
		}
		return pr
	}
	if ctr.LivenessProbe != nil {
		a.Probe = probe(ctr.LivenessProbe, "livenessProbe", "liveness")
		a.Probe.Action = action
	}
	if ctr.ReadinessProbe != nil {
		a.Readiness = probe(ctr.ReadinessProbe, "readinessProbe", "readiness")
	}
	if ctr.StartupProbe != nil {
		a.Startup = probe(ctr.StartupProbe, "startupProbe", "startup")
		a.Startup.Action = action
	}
}

// staticEnv is the environment the kubelet expands an exec probe's
// command with (ExpandContainerCommandOnlyStatic): the container's env
// as written, each variable's value unexpanded and "" for one that
// valueFrom sets; not envFrom's variables, nor the service variables.
func staticEnv(ctr *Container) map[string]string {
	env := make(map[string]string, len(ctr.Env))
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	return env
}

// probeAction is what a failed liveness or startup probe of a container
// does under the Pod's restart policy. The kubelet kills the container and
// lets the policy decide: under Never, the container has failed and will
// not run again, and the Pod fails (unitrun's fail-pod, which stops the
// other containers at once, where the kubelet lets them run to their
// end); under OnFailure and Always, it restarts.
func probeAction(policy string) string {
	if policy == "Never" {
		return "fail-pod"
	}
	return "restart"
}

// mapProbe maps lp, the container's probe of kind (liveness, readiness or
// startup) at path, to a unitrun probe without an action.
func mapProbe(ctr *Container, lp *Probe, path, kind string, rs *Refusals) *AppProbe {
	pr := &AppProbe{
		InitialDelaySeconds: lp.InitialDelaySeconds, PeriodSeconds: lp.PeriodSeconds,
		TimeoutSeconds: lp.TimeoutSeconds, FailureThreshold: lp.FailureThreshold,
	}
	if lp.SuccessThreshold > 1 {
		rs.Add(path+".successThreshold", "must be 1 for a %s probe: unitrun counts one success", kind)
	}
	if g := lp.TerminationGracePeriodSeconds; g != nil {
		pr.StopTimeout = GracePeriod(*g).String()
	}
	switch {
	case lp.Exec != nil:
		pr.Exec = lp.Exec.Command
	case lp.HTTPGet != nil:
		h := lp.HTTPGet
		port, ok := probePort(ctr, h.Port)
		if !ok {
			rs.Add(path+".httpGet.port", "%q names no port of the container", h.Port.String())
		}
		pr.HTTP = &HTTPProbe{Port: port, Path: h.Path}
		if h.Host != "" && h.Host != "127.0.0.1" && h.Host != "localhost" {
			rs.Add(path+".httpGet.host", "not supported: the probe checks the pod's localhost")
		}
		if h.Scheme != "" && h.Scheme != "HTTP" {
			rs.Add(path+".httpGet.scheme", "%s is not supported: only HTTP", h.Scheme)
		}
		if len(h.HTTPHeaders) > 0 {
			rs.Add(path+".httpGet.httpHeaders", "not supported: unitrun's HTTP probe sends a GET of the path with no headers of the Pod's")
		}
	case lp.TCPSocket != nil:
		port, ok := probePort(ctr, lp.TCPSocket.Port)
		if !ok {
			rs.Add(path+".tcpSocket.port", "%q names no port of the container", lp.TCPSocket.Port.String())
		}
		pr.TCP = &TCPProbe{Port: port}
		if h := lp.TCPSocket.Host; h != "" && h != "127.0.0.1" && h != "localhost" {
			rs.Add(path+".tcpSocket.host", "not supported: the probe checks the pod's localhost")
		}
	case lp.GRPC != nil:
		pr.GRPC = &GRPCProbe{Port: lp.GRPC.Port}
		if lp.GRPC.Service != nil {
			pr.GRPC.Service = *lp.GRPC.Service
		}
	default:
		rs.Add(path, "has no handler")
	}
	return pr
}

// mapHook maps h, the container's lifecycle hook at path, to a unitrun
// hook: exec and httpGet as a probe's, sleep as unitrun's sleep (in its
// hook process, not the container's: the kubelet sleeps itself); nil for
// none.
func mapHook(ctr *Container, h *LifecycleHandler, path string, rs *Refusals) *Hook {
	switch {
	case h == nil:
		return nil
	case h.Sleep != nil:
		return &Hook{Sleep: (time.Duration(h.Sleep.Seconds) * time.Second).String()}
	case h.TCPSocket != nil:
		rs.Add(path+".tcpSocket", "not supported: the kubelet does not run it either")
		return nil
	}
	pr := mapProbe(ctr, &Probe{Exec: h.Exec, HTTPGet: h.HTTPGet}, path, "lifecycle", rs)
	return &Hook{Exec: pr.Exec, HTTP: pr.HTTP}
}

// probePort resolves a probe's port, by number or by the name of one of
// the container's ports.
func probePort(ctr *Container, port IntOrString) (int32, bool) {
	if port.Str == "" {
		return port.Int, port.Int > 0
	}
	for _, p := range ctr.Ports {
		if p.Name == port.Str {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// volumeMounts maps the container's volume mounts to mounts of its app: a
// volume's directory, or a subPath in it (subPathExpr expanded with env),
// bound at mountPath; read-only if the mount says so, and always for a
// read-only volume, as the kubelet mounts those.
func (t *mapping) volumeMounts(ctr *Container, path string, env map[string]string) []Mount {
	var out []Mount
	rs := &t.rs
	for j, m := range ctr.VolumeMounts {
		field := fmt.Sprintf("%s.volumeMounts[%d]", path, j)
		v, ok := t.o.Volumes[m.Name]
		if !ok {
			rs.Add(field+".name", "%q names no volume of the pod that unitrun provides", m.Name)
			continue
		}
		if mp := m.MountPropagation; mp != nil && *mp != "None" {
			rs.Add(field+".mountPropagation", "%q is not supported: a container's mounts are its own", *mp)
		}
		if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == "Enabled" {
			rs.Add(field+".recursiveReadOnly", "Enabled is not supported: a read-only mount's submounts keep their own")
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expand(m.SubPathExpr, env)
		}
		if sub != "" && !filepath.IsLocal(sub) {
			rs.Add(field+".subPath", "%q must be a relative path inside the volume", sub)
			continue
		}
		if sub != "" && v.EmptyDir && !slices.Contains(v.SubPaths, sub) {
			v.SubPaths = append(v.SubPaths, sub)
		}
		out = append(out, Mount{Source: filepath.Join(v.Dir, sub), Path: filepath.Join("/", m.MountPath), ReadOnly: m.ReadOnly || v.ReadOnly})
	}
	return out
}

// environment returns the container's environment, as the kubelet makes
// it: the service variables, then the variables of envFrom's ConfigMaps
// and Secrets (those whose names are not variable names left out), then
// the container's env: values (with $(VAR) references to the variables
// before them expanded), keys of ConfigMaps and Secrets, the Pod's fields
// (fieldRef) and the container's resources (resourceFieldRef). A
// ConfigMap, Secret or key that is not there is waited for, unless
// optional.
func (t *mapping) environment(ctr *Container, path string) (map[string]string, error) {
	o, rs := t.o, &t.rs
	env := maps.Clone(o.ServiceEnv)
	if env == nil {
		env = map[string]string{}
	}
	n := len(*rs)
	for i, ef := range ctr.EnvFrom {
		field := fmt.Sprintf("%s.envFrom[%d]", path, i)
		switch {
		case ef.ConfigMapRef != nil:
			t.fromEnv(env, field+".configMapRef", "configmap", o.ConfigMap, ef.ConfigMapRef, ef.Prefix)
		case ef.SecretRef != nil:
			t.fromEnv(env, field+".secretRef", "secret", o.Secret, ef.SecretRef, ef.Prefix)
		}
	}
	for i, e := range ctr.Env {
		field := fmt.Sprintf("%s.env[%d]", path, i)
		switch from := e.ValueFrom; {
		case from == nil:
			env[e.Name] = expand(e.Value, env)
		case from.FieldRef != nil:
			fp := from.FieldRef.FieldPath
			v, why := FieldRef(t.p, fp, o.Address)
			if why != "" {
				rs.Add(field+".valueFrom.fieldRef.fieldPath", "%q %s", fp, why)
			}
			env[e.Name] = v
		case from.ResourceFieldRef != nil:
			target := ctr
			if name := from.ResourceFieldRef.ContainerName; name != "" {
				if target = t.p.Container(name); target == nil {
					rs.Add(field+".valueFrom.resourceFieldRef.containerName", "%q names no container of the pod", name)
					continue
				}
			}
			v, err := ResourceValue(target, from.ResourceFieldRef, o.Allocatable)
			if err != nil {
				rs.Add(field+".valueFrom.resourceFieldRef.resource", "%v", err)
			}
			env[e.Name] = v
		case from.ConfigMapKeyRef != nil:
			t.keyEnv(env, e.Name, field+".valueFrom.configMapKeyRef", "configmap", o.ConfigMap, from.ConfigMapKeyRef)
		case from.SecretKeyRef != nil:
			t.keyEnv(env, e.Name, field+".valueFrom.secretKeyRef", "secret", o.Secret, from.SecretKeyRef)
		default:
			rs.Add(field+".valueFrom", "only fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef are supported (not fileKeyRef)")
		}
	}
	if len(*rs) > n {
		return nil, (*rs)[n:]
	}
	return env, nil
}

// fromEnv adds to env the keys of the object kind that ref names, read
// with get (nil: there is no cluster), each with prefix.
func (t *mapping) fromEnv(env map[string]string, field, kind string, get func(string) map[string][]byte, ref *EnvSource, prefix string) {
	if get == nil {
		t.rs.Add(field, "a %s is a cluster's object: it needs unitrun-node", kind)
		return
	}
	data := get(ref.Name)
	if data == nil && !IsTrue(ref.Optional) {
		t.wait("%s %q", kind, ref.Name)
	}
	for k, v := range data {
		if k = prefix + k; pod.ValidEnvKey(k) {
			env[k] = string(v)
		}
	}
}

// keyEnv sets variable name of env to the key of the object kind that ref
// names, read with get (nil: there is no cluster); an object or key that
// is not there is waited for, unless optional.
func (t *mapping) keyEnv(env map[string]string, name, field, kind string, get func(string) map[string][]byte, ref *KeySelector) {
	if get == nil {
		t.rs.Add(field, "a %s is a cluster's object: it needs unitrun-node", kind)
		return
	}
	data := get(ref.Name)
	v, ok := data[ref.Key]
	switch {
	case ok:
		env[name] = string(v)
	case IsTrue(ref.Optional):
	case data == nil:
		t.wait("%s %q", kind, ref.Name)
	default:
		t.wait("key %q of %s %q", ref.Key, kind, ref.Name)
	}
}

func IsTrue(b *bool) bool { return b != nil && *b }

// Container returns the container or init container named name, or nil.
func (p *Pod) Container(name string) *Container {
	for _, list := range [][]Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// FieldRef is the value of a fieldRef of p to path, or why it has none.
// A Pod here has the host's network, so its IP is its host's address, as
// a kubelet reports a Pod of hostNetwork. Labels and annotations read as
// the kubelet writes them: one key="value" line each, sorted by key.
func FieldRef(p *Pod, path, address string) (value, why string) {
	switch path {
	case "metadata.name":
		return p.Metadata.Name, ""
	case "metadata.namespace":
		return p.Metadata.Namespace, ""
	case "metadata.uid":
		return p.Metadata.UID, ""
	case "metadata.labels":
		return formatMap(p.Metadata.Labels), ""
	case "metadata.annotations":
		return formatMap(p.Metadata.Annotations), ""
	case "spec.nodeName":
		return p.Spec.NodeName, ""
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, ""
	case "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		if address == "" {
			return "", "has no value: this host has no address (unitrun-node's --node-ip gives it one)"
		}
		return address, ""
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels['": p.Metadata.Labels, "metadata.annotations['": p.Metadata.Annotations} {
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

// ResourceValue is the value of a resourceFieldRef to ctr, in units of
// its divisor rounded up, as the kubelet computes it: a limit the
// container does not set is the host's allocatable (nil: refused).
func ResourceValue(ctr *Container, ref *ResourceFieldSelector, allocatable func() (map[string]Quantity, error)) (string, error) {
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = NewQuantity(1)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := ctr.Resources.Requests
	if kind == "limits" {
		list = ctr.Resources.Limits
	}
	q, ok := list[name]
	if !ok && kind == "limits" {
		if allocatable == nil {
			return "", fmt.Errorf("%q: the container sets no limit of %s, and unitrun pod run knows no allocatable to give instead", ref.Resource, name)
		}
		alloc, err := allocatable()
		if err != nil {
			return "", err
		}
		q = alloc[name]
	}
	switch ref.Resource {
	case "limits.cpu", "requests.cpu":
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case "limits.memory", "requests.memory", "limits.ephemeral-storage", "requests.ephemeral-storage":
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("%q is not supported: limits and requests of cpu, memory and ephemeral-storage are", ref.Resource)
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

// appsRE finds the app paths in a unitrun manifest error, with the one
// field that a container sets under another name.
var appsRE = lazyregexp.New(`\bapps\[(\d+)\](\.runAsNonRoot\b)?`)

// ContainerPaths rewrites the app paths (apps[3]) of msg, an error about
// the unitrun manifest of a Pod with inits init containers, as the Pod's
// container paths (spec.containers[1]): the manifest lists the init
// containers first. An app's runAsNonRoot is the container's
// securityContext.runAsNonRoot.
func ContainerPaths(msg string, inits int) string {
	return appsRE.ReplaceAllStringFunc(msg, func(s string) string {
		m := appsRE.FindStringSubmatch(s)
		i, _ := strconv.Atoi(m[1])
		field := strings.Replace(m[2], ".", ".securityContext.", 1)
		if i < inits {
			return fmt.Sprintf("spec.initContainers[%d]%s", i, field)
		}
		return fmt.Sprintf("spec.containers[%d]%s", i-inits, field)
	})
}
