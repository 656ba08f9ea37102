package pod

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

// Isolation says where a pod's units run.
type Isolation string

// Isolations.
const (
	// NoIsolation runs the pod's units on the manager unitrun talks to.
	NoIsolation Isolation = "none"
	// Namespaces runs the pod under a systemd of its own, as PID 1 of new
	// PID, mount, UTS and IPC namespaces.
	Namespaces Isolation = "namespaces"
)

// Network says which network an isolated pod sees.
type Network string

// Networks.
const (
	HostNetwork Network = "host"
	NoNetwork   Network = "none"
)

// Default back-off steps, as in Kubernetes.
const (
	defaultBackoffInitial = 10 * time.Second
	defaultBackoffMax     = 5 * time.Minute
	defaultBackoffReset   = 10 * time.Minute
)

// MinBackoff is the shortest restartBackoff.initial a pod may ask for. An
// app's restart runs three unitrun processes on the manager (the back-off
// wait, the exec, the exit's record): apps that restart in a tight loop
// starve the manager, and everything else on it, of CPU (docs/performance.md,
// "Restart back-off floor").
const MinBackoff = 100 * time.Millisecond

// Default probe timings, as in Kubernetes.
const (
	defaultProbePeriod    = 10
	defaultProbeTimeout   = 1
	defaultProbeThreshold = 3
)

// maxManifestSize bounds what Load reads.
const maxManifestSize = 1 << 20

// MaxApps is the most apps a pod may have. Each app has two unit files or
// three (its service, its reaper, its probe) in the manager's runtime unit
// directory, and systemd 252's "systemctl list-unit-files" takes time with
// each unit file there: 1.2 s with the 203 files of 100 apps, 2.7 s with
// 503, 6.8 s with 1003 and 29 s with 2003 on the test machine (20,000 apps
// made it run for minutes). The pod's pod.json, which lists every app,
// stays far within what its reader reads.
const MaxApps = 256

// maxArgLen is the longest argument or environment entry ("K=V") the
// kernel executes, MAX_ARG_STRLEN less its NUL.
const maxArgLen = 32*4096 - 1

// A Manifest describes a pod. Parse and Load fill in every default, so a
// Manifest they return has no empty policy, back-off step or probe timing,
// and every app carries its effective restart policy: its own, else the
// pod's; an init app's is always Never.
type Manifest struct {
	Name           string               `yaml:"name" json:"name,omitzero"`
	ExitPolicy     record.ExitPolicy    `yaml:"exitPolicy" json:"exitPolicy,omitzero"`
	RestartPolicy  record.RestartPolicy `yaml:"restartPolicy" json:"restartPolicy,omitzero"`
	RestartBackoff record.Backoff       `yaml:"restartBackoff" json:"restartBackoff,omitzero"`
	Isolation      Isolation            `yaml:"isolation" json:"isolation,omitzero"`
	Network        Network              `yaml:"network" json:"network,omitzero"`
	// Logs bounds each app's log ([Manifest.Rotation]).
	Logs LogLimits `yaml:"logs" json:"logs,omitzero"`
	Apps []App     `yaml:"apps" json:"apps,omitzero"`
	// ImageDir is the image store that the pod's creation took its apps'
	// images from, and leased them in; "" if no app has an image. Set
	// at creation ([Manifest.ApplyImage]), never by a manifest.
	ImageDir string `yaml:"-" json:"imageDir,omitzero"`
}

// LogLimits bound each app's log by rotation (docs/pods.md, "An app's log is
// bounded"). Unset fields take logcopy.DefaultRotation's.
type LogLimits struct {
	// MaxSize bounds a log file and its times file together, in
	// ParseSize syntax: "10M".
	MaxSize string `yaml:"maxSize" json:"maxSize,omitzero"`
	// MaxFiles bounds the files of a run, 2 or more.
	MaxFiles int `yaml:"maxFiles" json:"maxFiles,omitzero"`
}

// Rotation is how the pod's apps' logs are rotated: its Logs, with the
// defaults for what it leaves unset. m must be valid.
func (m *Manifest) Rotation() logcopy.Rotation {
	r := logcopy.DefaultRotation
	if n, err := unit.ParseSize(m.Logs.MaxSize); err == nil && m.Logs.MaxSize != "" {
		r.MaxSize = int64(n)
	}
	if m.Logs.MaxFiles != 0 {
		r.MaxFiles = m.Logs.MaxFiles
	}
	return r
}

// An App is one process of a pod.
type App struct {
	Name string   `yaml:"name" json:"name,omitzero"`
	Exec []string `yaml:"exec" json:"exec,omitzero"`
	// Args follow Exec, or, for an app with an Image and no Exec, the
	// image's Entrypoint: Kubernetes' command (Exec) and args.
	Args []string `yaml:"args" json:"args,omitzero"`
	// Image names a registry image whose layers are the app's root and
	// whose config gives what the app does not set ([MergeImage]); it
	// excludes Rootfs. ImagePullPolicy says when its creation pulls it.
	Image           string `yaml:"image" json:"image,omitzero"`
	ImagePullPolicy string `yaml:"imagePullPolicy" json:"imagePullPolicy,omitzero"`
	// ImageID is Image's ID (its manifest digest) as the pod's creation
	// found it, and Identity its user and groups as the image's files
	// resolve them; set at creation ([Manifest.ApplyImage]), never by a
	// manifest.
	// RunAsNonRoot refuses an image app that would run as root: as the
	// kubelet refuses a container with runAsNonRoot, the user (the
	// app's, else the image's config's User) must not be root, and the
	// image's must be a number ([MergeImage]). It needs Image.
	RunAsNonRoot     bool                 `yaml:"runAsNonRoot" json:"runAsNonRoot,omitzero"`
	ImageID          string               `yaml:"-" json:"imageID,omitzero"`
	Identity         *appexec.Identity    `yaml:"-" json:"identity,omitzero"`
	Env              map[string]string    `yaml:"env" json:"env,omitzero"`
	WorkingDir       string               `yaml:"workingDir" json:"workingDir,omitzero"`
	User             string               `yaml:"user" json:"user,omitzero"`
	Group            string               `yaml:"group" json:"group,omitzero"`
	RestartPolicy    record.RestartPolicy `yaml:"restartPolicy" json:"restartPolicy,omitzero"`
	SuccessExitCodes []int                `yaml:"successExitCodes" json:"successExitCodes,omitzero"`
	// StopTimeout is how long a stop waits before it kills the app; 0 means
	// the manager's default.
	StopTimeout time.Duration `yaml:"stopTimeout" json:"stopTimeout,omitzero"`
	// Init apps run to completion, in manifest order, before the others.
	// Under restartPolicy Never (an init app's default) one that fails
	// ends the pod; under OnFailure it runs again, with the pod's
	// back-off, until it succeeds, and the apps after it wait ([App.Retried]).
	Init bool `yaml:"init" json:"init,omitzero"`
	// Sidecars start before the other apps, after the init apps listed
	// before them, run as long as the pod runs (restarted whenever they
	// exit, with the pod's back-off), and stop after the other apps: like
	// Kubernetes' init containers with restartPolicy Always. Their exits
	// never end the pod nor count in its exit code.
	Sidecar   bool      `yaml:"sidecar" json:"sidecar,omitzero"`
	Rootfs    string    `yaml:"rootfs" json:"rootfs,omitzero"`
	Resources Resources `yaml:"resources" json:"resources,omitzero"`
	// Probe is the liveness probe: at its failure threshold it restarts
	// the app or ends the pod, as its action says.
	Probe *Probe `yaml:"probe" json:"probe,omitzero"`
	// ReadinessProbe sets whether the app is ready (AppStatus.Ready), and
	// with it the pod; it never restarts the app. Its action must be unset.
	ReadinessProbe *Probe `yaml:"readinessProbe" json:"readinessProbe,omitzero"`
	// StartupProbe holds the other probes until it succeeds once per run;
	// at its failure threshold it restarts the app. Its action must be
	// unset or restart.
	StartupProbe *Probe `yaml:"startupProbe" json:"startupProbe,omitzero"`
	// PostStart runs as each run's command starts, beside it, as
	// Kubernetes' postStart hook; if it fails, the run is stopped and
	// failed, with a message that says so.
	PostStart *Hook `yaml:"postStart" json:"postStart,omitzero"`
	// PreStop runs when a stop ends a run whose command still runs,
	// before the stop signal, as Kubernetes' preStop hook; the app's
	// stopTimeout bounds it.
	PreStop *Hook `yaml:"preStop" json:"preStop,omitzero"`
	// TerminationMessagePath is a file the app may write why it ended
	// into, as Kubernetes' terminationMessagePath: an empty file of the
	// pod's state (TerminationFile), emptied at each run's start, bound
	// there for the app's command (in its rootfs). "" binds none.
	TerminationMessagePath string `yaml:"terminationMessagePath" json:"terminationMessagePath,omitzero"`
	// ReadOnlyRoot makes the file system the app's command sees read-only
	// (its rootfs, or the host's), but for /dev, /proc, /sys, the
	// terminationMessagePath and the pod's own state, which records the
	// run: systemd's ProtectSystem=strict, Kubernetes'
	// readOnlyRootFilesystem.
	ReadOnlyRoot bool `yaml:"readOnlyRoot" json:"readOnlyRoot,omitzero"`
	// NoNewPrivileges keeps the app's command and what it executes from
	// gaining privileges (setuid and setgid programs, file capabilities):
	// systemd's NoNewPrivileges=, Kubernetes' allowPrivilegeEscalation:
	// false.
	NoNewPrivileges bool `yaml:"noNewPrivileges" json:"noNewPrivileges,omitzero"`
	// Capabilities, if not nil, are the only capabilities the app's
	// command can hold (its bounding set, named as CapabilityNames):
	// all of them if it runs as root, none otherwise. Nil keeps every
	// one, as root has them.
	Capabilities []string `yaml:"capabilities" json:"capabilities,omitzero"`
	// Mounts bind host files and directories into the app's command's
	// view of its root (BindPaths=, BindReadOnlyPaths=); the "+" hooks
	// see the host's.
	Mounts []Mount `yaml:"mounts" json:"mounts,omitzero"`
}

// A Mount binds the host file or directory Source at Path, in the app's
// rootfs, for the app's command alone: in the mount namespace systemd
// makes for the app's unit, so no other process of the host sees it.
// systemd creates Path if it does not exist (on the host's own file
// system for an app without rootfs). A Source missing when the app
// starts fails its start.
type Mount struct {
	Source   string `yaml:"source" json:"source,omitzero"`
	Path     string `yaml:"path" json:"path,omitzero"`
	ReadOnly bool   `yaml:"readOnly" json:"readOnly,omitzero"`
}

// Resources limit an app. Nil means no limit.
type Resources struct {
	// Memory is MemoryMax=, in ParseSize syntax: "512M".
	Memory    string `yaml:"memory" json:"memory,omitzero"`
	CPUWeight *int   `yaml:"cpuWeight" json:"cpuWeight,omitzero"`
	// CPUMillis is the CPU time the app may use at most, in thousandths
	// of one CPU: CPUQuota= (100 is 10%), Kubernetes' limits.cpu.
	CPUMillis *int `yaml:"cpuMillis" json:"cpuMillis,omitzero"`
	Tasks     *int `yaml:"tasks" json:"tasks,omitzero"`
}

// A Probe checks an app's health. Exactly one of Exec, HTTP, TCP and
// GRPC is set. Zero timings mean the defaults (period 10 s, timeout 1 s,
// threshold 3).
type Probe struct {
	Exec                []string           `yaml:"exec" json:"exec,omitzero"`
	HTTP                *HTTPProbe         `yaml:"http" json:"http,omitzero"`
	TCP                 *TCPProbe          `yaml:"tcp" json:"tcp,omitzero"`
	GRPC                *GRPCProbe         `yaml:"grpc" json:"grpc,omitzero"`
	InitialDelaySeconds int                `yaml:"initialDelaySeconds" json:"initialDelaySeconds,omitzero"`
	PeriodSeconds       int                `yaml:"periodSeconds" json:"periodSeconds,omitzero"`
	TimeoutSeconds      int                `yaml:"timeoutSeconds" json:"timeoutSeconds,omitzero"`
	FailureThreshold    int                `yaml:"failureThreshold" json:"failureThreshold,omitzero"`
	Action              record.ProbeAction `yaml:"action" json:"action,omitzero"`
	// StopTimeout, if not 0, bounds the end of a run this probe acts on
	// in place of the app's stopTimeout: the preStop hook, then SIGTERM,
	// and SIGKILL to what still runs once it has passed, as Kubernetes'
	// probe-level terminationGracePeriodSeconds. A liveness or startup
	// probe's only.
	StopTimeout time.Duration `yaml:"stopTimeout" json:"stopTimeout,omitzero"`
}

// A Hook is what an app's postStart or preStop runs: a command (Exec,
// as an exec probe runs it), an HTTP GET (HTTP, as an http probe sends
// it; any status is a success unless Status says) or a wait (Sleep, in
// unitrun's own hook process: nothing runs in the app's root, as
// Kubernetes' sleep action runs in the kubelet; 0 returns at once).
// Exactly one is set.
type Hook struct {
	Exec  []string       `yaml:"exec" json:"exec,omitzero"`
	HTTP  *HTTPProbe     `yaml:"http" json:"http,omitzero"`
	Sleep *time.Duration `yaml:"sleep" json:"sleep,omitzero"`
}

// HasProbes reports whether a has a probe of any kind, and so a probe
// service.
func (a *App) HasProbes() bool {
	return a.Probe != nil || a.ReadinessProbe != nil || a.StartupProbe != nil
}

// ProbeStopTimeout is the longest stopTimeout of a's liveness and startup
// probes, 0 if they have none.
func (a *App) ProbeStopTimeout() time.Duration {
	var d time.Duration
	for _, p := range []*Probe{a.Probe, a.StartupProbe} {
		if p != nil {
			d = max(d, p.StopTimeout)
		}
	}
	return d
}

// Retried reports whether a is an init app that runs again when it
// fails (restartPolicy OnFailure), as Kubernetes retries the init
// containers of a Pod whose restartPolicy is OnFailure or Always.
func (a *App) Retried() bool { return a.Init && a.RestartPolicy == record.OnFailure }

// Policy returns the policies of m, as an exit applies them.
func (m *Manifest) Policy() *record.Policy {
	p := &record.Policy{Pod: m.Name, ExitPolicy: m.ExitPolicy, RestartBackoff: m.RestartBackoff}
	for _, a := range m.Apps {
		p.Apps = append(p.Apps, record.AppPolicy{Name: a.Name, RestartPolicy: a.RestartPolicy, Init: a.Init, Sidecar: a.Sidecar})
	}
	return p
}

// ExecSpec returns what running a's command takes, as package
// pod/appexec, which the small hook binary links without pod, has it;
// [appexec.Load] reads the same from the pod's spec file.
func (a *App) ExecSpec() *appexec.App {
	return &appexec.App{
		Name: a.Name, Exec: a.Exec, Env: a.Env, WorkingDir: a.WorkingDir, User: a.User, Group: a.Group,
		Rootfs: a.Rootfs, Capabilities: a.Capabilities, NoNewPrivileges: a.NoNewPrivileges,
		TerminationMessagePath: a.TerminationMessagePath, Init: a.Init, Identity: a.Identity,
		Probed: a.StartupProbe != nil || a.ReadinessProbe != nil,
	}
}

// Counts reports whether a's exits count for the pod: those of an init
// app or of an app, but never a sidecar's.
func (a *App) Counts() bool { return !a.Sidecar }

// An HTTPProbe succeeds when GET Path on Port answers with a status in Status.
type HTTPProbe struct {
	Port   int         `yaml:"port" json:"port,omitzero"`
	Path   string      `yaml:"path" json:"path,omitzero"`
	Status StatusRange `yaml:"status" json:"status,omitzero"`
}

// A TCPProbe succeeds when a connection to Port opens.
type TCPProbe struct {
	Port int `yaml:"port" json:"port,omitzero"`
}

// A GRPCProbe succeeds when the gRPC Health Checking Protocol's Check
// (grpc.health.v1.Health) on Port, over HTTP/2 without TLS, answers
// SERVING for Service ("" asks for the server as a whole), as
// Kubernetes' grpc probe.
type GRPCProbe struct {
	Port    int    `yaml:"port" json:"port,omitzero"`
	Service string `yaml:"service" json:"service,omitzero"`
}

// Parse decodes and validates a manifest: one YAML document whose fields
// are all known. The error names the field path and the rule it breaks; a
// manifest with several invalid fields gets one line per field.
func Parse(data []byte) (*Manifest, error) { return ParseWith(data, "", nil) }

// A HostCheck checks, on this host, what a manifest's own rules cannot
// (that a user exists, that a directory is one) and returns one
// *FieldError per field it refuses. It leaves alone each field for which
// refused says true: one the manifest's rules already refuse, or one it
// would check through such a field (a workingDir inside a refused rootfs).
type HostCheck func(m *Manifest, refused func(field string) bool) []error

// ParseWith is [Parse] with isolation iso, if it is not "", instead of the
// manifest's; the manifest is then validated as if it said iso. host, if
// not nil, then checks the manifest on this host, also when it breaks
// other rules, so that every error comes at once.
func ParseWith(data []byte, iso Isolation, host HostCheck) (*Manifest, error) {
	var m Manifest
	problems, bad, err := decode(data, &m)
	if errors.Is(err, errTooMany) {
		return nil, errors.Join(append(problems, err)...)
	}
	if err != nil {
		return nil, err
	}
	m.setDefaults()
	if iso != "" {
		m.Isolation = iso
	}
	if err := m.validate(); err != nil {
		verrs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			verrs = j.Unwrap()
		}
		problems = append(problems, outside(verrs, bad)...)
	}
	if host != nil && len(m.Apps) <= MaxApps {
		refused := func(field string) bool {
			return slices.ContainsFunc(problems, func(err error) bool {
				fe, ok := err.(*FieldError)
				return ok && under(fe.Path, field)
			})
		}
		problems = append(problems, host(&m, refused)...)
	}
	if len(problems) > maxProblems {
		problems = append(problems[:maxProblems], errTooMany)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if err := checkSizes(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// checkSizes refuses a manifest whose text, or whose parsed form as the
// pod's manifest.json holds it, is larger than their readers read back,
// so that a pod that can be created can be started and removed. JSON
// escapes <, > and & as \u003c, so a value grows up to six times there.
func checkSizes(text []byte, m *Manifest) error {
	if len(text) > maxManifestSize {
		return fmt.Errorf("manifest is %d bytes, more than the %d a manifest may have", len(text), maxManifestSize)
	}
	spec, err := m.specJSON()
	if err != nil {
		return err
	}
	if len(spec) > record.MaxFileSize {
		return fmt.Errorf("manifest would be %d bytes in the pod's %s (where JSON escapes <, > and & as 6 bytes each), more than the %d it may have: shorten its values", len(spec), record.SpecFile, record.MaxFileSize)
	}
	return nil
}

// specJSON is m as the pod's manifest.json holds it.
func (m *Manifest) specJSON() ([]byte, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// outside returns the errors among errs whose field is not at or under
// one of the paths bad: values that could not be decoded were left zero,
// and the rules they then break are not the user's to hear about.
func outside(errs []error, bad []string) []error {
	var kept []error
	for _, err := range errs {
		fe, ok := err.(*FieldError)
		if !ok || !slices.ContainsFunc(bad, func(b string) bool { return under(fe.Path, b) }) {
			kept = append(kept, err)
		}
	}
	return kept
}

// under reports whether the field path is at or under the field base.
func under(path, base string) bool {
	rest, ok := strings.CutPrefix(path, base)
	return ok && (rest == "" || base == "" || rest[0] == '.' || rest[0] == '[')
}

// Load reads and parses the manifest at path, which may hold at most 1 MiB.
func Load(path string) (*Manifest, error) {
	data, err := ReadManifest(path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ReadManifest returns the content of the manifest file at path, which may
// hold at most 1 MiB, without parsing it. Its error names path and says
// why in a user's words: "/srv/web.yaml: cannot read: no such file or
// directory", never the system call that failed.
func ReadManifest(path string) ([]byte, error) {
	data, err := readManifest(path)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return nil, fmt.Errorf("%s: cannot read: %w", path, pe.Err)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("%s: manifest larger than %d bytes", path, maxManifestSize)
	}
	return data, nil
}

// readManifest reads at most one byte more than a manifest may hold.
func readManifest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxManifestSize+1))
}

// App returns the app named name, or nil.
func (m *Manifest) App(name string) *App {
	for i := range m.Apps {
		if m.Apps[i].Name == name {
			return &m.Apps[i]
		}
	}
	return nil
}

// SidecarBefore returns the sidecar whose start app waits for, or nil:
// for an init app or a sidecar, the last sidecar listed before it; for any
// other app, the last sidecar listed. That sidecar waited in turn for the
// one before it.
func (m *Manifest) SidecarBefore(app string) *App {
	var last *App
	for i := range m.Apps {
		a := &m.Apps[i]
		if a.Name == app && (a.Init || a.Sidecar) {
			return last
		}
		if a.Sidecar {
			last = a
		}
	}
	return last
}

// RetriedInitsBefore returns the retried init apps ([App.Retried]) that
// app starts after: for an init app or a sidecar, those listed before it;
// for any other app, every one. Under systemd 252 a oneshot service that
// fails and restarts has already failed the start jobs of the units that
// require it, so these apps' units do not require theirs: each waits for
// their success in its await hook.
func (m *Manifest) RetriedInitsBefore(app string) []*App {
	var list []*App
	for i := range m.Apps {
		a := &m.Apps[i]
		if a.Name == app && (a.Init || a.Sidecar) {
			break
		}
		if a.Retried() {
			list = append(list, a)
		}
	}
	return list
}

// Awaits reports whether app's first run waits in its await hook: for
// the sidecar before it ([Manifest.SidecarBefore]) or for the retried
// init apps before it ([Manifest.RetriedInitsBefore]).
func (m *Manifest) Awaits(app string) bool {
	return m.SidecarBefore(app) != nil || len(m.RetriedInitsBefore(app)) > 0
}

func (m *Manifest) setDefaults() {
	if m.ExitPolicy == "" {
		m.ExitPolicy = record.FirstFailure
	}
	if m.RestartPolicy == "" {
		m.RestartPolicy = record.Never
	}
	if m.Isolation == "" {
		m.Isolation = NoIsolation
	}
	if m.Network == "" {
		m.Network = HostNetwork
	}
	b := &m.RestartBackoff
	if b.Initial == 0 {
		b.Initial = defaultBackoffInitial
	}
	if b.Max == 0 {
		b.Max = max(defaultBackoffMax, b.Initial)
	}
	if b.Reset == 0 {
		b.Reset = defaultBackoffReset
	}
	for i := range m.Apps {
		a := &m.Apps[i]
		// An app inherits the pod's policy only if it is valid: a bad
		// one is reported once, for the pod, not again for each app.
		if a.RestartPolicy == "" {
			switch {
			case a.Init && !a.Sidecar:
				a.RestartPolicy = record.Never
			case a.Sidecar:
				a.RestartPolicy = record.Always
			case m.RestartPolicy.Valid():
				a.RestartPolicy = m.RestartPolicy
			}
		}
		a.Probe.setDefaults(record.RestartApp)
		a.ReadinessProbe.setDefaults("")
		a.StartupProbe.setDefaults(record.RestartApp)
		a.PostStart.setDefaults()
		a.PreStop.setDefaults()
	}
}

// setDefaults fills in the path and status range of h's HTTP GET: "/"
// and any status, as the kubelet's hooks take any answer.
func (h *Hook) setDefaults() {
	if h == nil || h.HTTP == nil {
		return
	}
	if h.HTTP.Path == "" {
		h.HTTP.Path = "/"
	}
	if h.HTTP.Status == (StatusRange{}) {
		h.HTTP.Status = StatusRange{Min: 100, Max: 599}
	}
}

// setDefaults fills in p's zero timings and, if action is not "", its
// action; a nil p stays nil.
func (p *Probe) setDefaults(action record.ProbeAction) {
	if p == nil {
		return
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = defaultProbePeriod
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = defaultProbeTimeout
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = defaultProbeThreshold
	}
	if p.Action == "" {
		p.Action = action
	}
	if h := p.HTTP; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Status == (StatusRange{}) {
			h.Status = StatusRange{Min: 200, Max: 399}
		}
	}
}
