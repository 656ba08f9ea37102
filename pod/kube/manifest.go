package kube

// Manifest is the unitrun pod manifest a Pod maps to, as its wire format
// spells it (docs/pods.md): [Translate] returns it, and its JSON is what
// unitrun pod create reads, through the same checks as a manifest file's.
type Manifest struct {
	Name           string   `json:"name"`
	RestartPolicy  string   `json:"restartPolicy"`
	RestartBackoff *Backoff `json:"restartBackoff,omitempty"`
	Isolation      string   `json:"isolation,omitempty"`
	Network        string   `json:"network,omitempty"`
	Apps           []App    `json:"apps"`
}

// Backoff is a manifest's restartBackoff.
type Backoff struct {
	Initial string `json:"initial"`
}

// App is one of a manifest's apps.
type App struct {
	Name string   `json:"name"`
	Exec []string `json:"exec,omitempty"`
	Args []string `json:"args,omitempty"`
	// Image is a registry image, pulled at the pod's creation, with its
	// ImagePullPolicy.
	Image           string `json:"image,omitempty"`
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// RunAsNonRoot, for a registry image's container without runAsUser,
	// leaves the check of its user to the pod's creation, which reads the
	// image's config.
	RunAsNonRoot  bool              `json:"runAsNonRoot,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	WorkingDir    string            `json:"workingDir,omitempty"`
	User          string            `json:"user,omitempty"`
	Group         string            `json:"group,omitempty"`
	RestartPolicy string            `json:"restartPolicy,omitempty"`
	StopTimeout   string            `json:"stopTimeout,omitempty"`
	Init          bool              `json:"init,omitempty"`
	Sidecar       bool              `json:"sidecar,omitempty"`
	Rootfs        string            `json:"rootfs,omitempty"`
	// TerminationMessagePath: "" (a Pod that sets none; the API server
	// sets the default) binds none.
	TerminationMessagePath string    `json:"terminationMessagePath,omitempty"`
	Resources              *Limits   `json:"resources,omitempty"`
	Probe                  *AppProbe `json:"probe,omitempty"`
	Readiness              *AppProbe `json:"readinessProbe,omitempty"`
	Startup                *AppProbe `json:"startupProbe,omitempty"`
	PostStart              *Hook     `json:"postStart,omitempty"`
	PreStop                *Hook     `json:"preStop,omitempty"`
	NoNewPrivileges        bool      `json:"noNewPrivileges,omitempty"`
	ReadOnlyRoot           bool      `json:"readOnlyRoot,omitempty"`
	// Capabilities: nil keeps root's, for a privileged container; an
	// empty list holds none.
	Capabilities *[]string `json:"capabilities,omitempty"`
	Mounts       []Mount   `json:"mounts,omitempty"`
}

// Mount is one of an app's mounts.
type Mount struct {
	Source   string `json:"source"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Limits are an app's resources.
type Limits struct {
	Memory    string `json:"memory,omitempty"`
	CPUWeight *int   `json:"cpuWeight,omitempty"`
	CPUMillis *int   `json:"cpuMillis,omitempty"`
}

// AppProbe is one of an app's probes.
type AppProbe struct {
	Exec                []string   `json:"exec,omitempty"`
	HTTP                *HTTPProbe `json:"http,omitempty"`
	TCP                 *TCPProbe  `json:"tcp,omitempty"`
	GRPC                *GRPCProbe `json:"grpc,omitempty"`
	InitialDelaySeconds int32      `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int32      `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int32      `json:"timeoutSeconds,omitempty"`
	FailureThreshold    int32      `json:"failureThreshold,omitempty"`
	Action              string     `json:"action,omitempty"`
	StopTimeout         string     `json:"stopTimeout,omitempty"`
}

// Hook is an app's postStart or preStop hook.
type Hook struct {
	Exec  []string   `json:"exec,omitempty"`
	HTTP  *HTTPProbe `json:"http,omitempty"`
	Sleep string     `json:"sleep,omitempty"`
}

// HTTPProbe is an HTTP probe or hook.
type HTTPProbe struct {
	Port int32  `json:"port"`
	Path string `json:"path,omitempty"`
}

// TCPProbe is a TCP probe.
type TCPProbe struct {
	Port int32 `json:"port"`
}

// GRPCProbe is a gRPC probe.
type GRPCProbe struct {
	Port    int32  `json:"port"`
	Service string `json:"service,omitempty"`
}
