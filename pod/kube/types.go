package kube

// The types below are a Kubernetes Pod (core/v1) as its YAML and JSON
// spell it: every field of the API that a Pod may carry, by its JSON name.
// A field unitrun maps has its value's type; one it refuses when it is
// set, or ignores (it places the Pod, or the API server sets it on every
// Pod), is [Any]. A field not listed here is refused when decoding.

// Pod is a Kubernetes Pod: apiVersion v1, kind Pod.
type Pod struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
	Status     Any        `json:"status"` // what a cluster reported; ignored
}

// ObjectMeta is a Pod's metadata. Besides its name, namespace, uid,
// labels and annotations, it holds what the API server keeps, ignored.
type ObjectMeta struct {
	Name                       string            `json:"name"`
	Namespace                  string            `json:"namespace"`
	UID                        string            `json:"uid"`
	Labels                     map[string]string `json:"labels"`
	Annotations                map[string]string `json:"annotations"`
	GenerateName               Any               `json:"generateName"`
	SelfLink                   Any               `json:"selfLink"`
	ResourceVersion            Any               `json:"resourceVersion"`
	Generation                 Any               `json:"generation"`
	CreationTimestamp          Any               `json:"creationTimestamp"`
	DeletionTimestamp          Any               `json:"deletionTimestamp"`
	DeletionGracePeriodSeconds Any               `json:"deletionGracePeriodSeconds"`
	OwnerReferences            Any               `json:"ownerReferences"`
	Finalizers                 Any               `json:"finalizers"`
	ManagedFields              Any               `json:"managedFields"`
}

// PodSpec is a Pod's spec.
type PodSpec struct {
	Volumes                       []Volume            `json:"volumes"`
	InitContainers                []Container         `json:"initContainers"`
	Containers                    []Container         `json:"containers"`
	RestartPolicy                 string              `json:"restartPolicy"`
	TerminationGracePeriodSeconds *int64              `json:"terminationGracePeriodSeconds"`
	DNSPolicy                     string              `json:"dnsPolicy"`
	ServiceAccountName            string              `json:"serviceAccountName"`
	NodeName                      string              `json:"nodeName"`
	HostNetwork                   bool                `json:"hostNetwork"`
	HostPID                       bool                `json:"hostPID"`
	HostIPC                       bool                `json:"hostIPC"`
	ShareProcessNamespace         *bool               `json:"shareProcessNamespace"`
	SecurityContext               *PodSecurityContext `json:"securityContext"`
	Hostname                      string              `json:"hostname"`
	Subdomain                     string              `json:"subdomain"`
	SetHostnameAsFQDN             *bool               `json:"setHostnameAsFQDN"`
	HostUsers                     *bool               `json:"hostUsers"`
	EnableServiceLinks            *bool               `json:"enableServiceLinks"`

	// Refused when set (see checkSpec).
	EphemeralContainers Any `json:"ephemeralContainers"`
	ResourceClaims      Any `json:"resourceClaims"`
	Resources           Any `json:"resources"`
	HostnameOverride    Any `json:"hostnameOverride"`

	// Read by unitrun-node alone (its hosts and DNS files, its status and
	// its deadline), which Plan refuses without a cluster.
	HostAliases           Any `json:"hostAliases"`
	DNSConfig             Any `json:"dnsConfig"`
	ReadinessGates        Any `json:"readinessGates"`
	ActiveDeadlineSeconds Any `json:"activeDeadlineSeconds"`

	// Ignored: they place the Pod or are the API server's defaults.
	NodeSelector                 Any `json:"nodeSelector"`
	DeprecatedServiceAccount     Any `json:"serviceAccount"`
	AutomountServiceAccountToken Any `json:"automountServiceAccountToken"`
	ImagePullSecrets             Any `json:"imagePullSecrets"`
	Affinity                     Any `json:"affinity"`
	SchedulerName                Any `json:"schedulerName"`
	Tolerations                  Any `json:"tolerations"`
	PriorityClassName            Any `json:"priorityClassName"`
	Priority                     Any `json:"priority"`
	RuntimeClassName             Any `json:"runtimeClassName"`
	PreemptionPolicy             Any `json:"preemptionPolicy"`
	Overhead                     Any `json:"overhead"`
	TopologySpreadConstraints    Any `json:"topologySpreadConstraints"`
	OS                           Any `json:"os"`
	SchedulingGates              Any `json:"schedulingGates"`
}

// PodSecurityContext is spec.securityContext.
type PodSecurityContext struct {
	RunAsUser    *int64 `json:"runAsUser"`
	RunAsGroup   *int64 `json:"runAsGroup"`
	RunAsNonRoot *bool  `json:"runAsNonRoot"`

	// Refused when set (see checkSpec).
	FSGroup            Any   `json:"fsGroup"`
	SupplementalGroups []Any `json:"supplementalGroups"`
	Sysctls            []Any `json:"sysctls"`
	SELinuxOptions     Any   `json:"seLinuxOptions"`
	SeccompProfile     Any   `json:"seccompProfile"`
	AppArmorProfile    Any   `json:"appArmorProfile"`
	WindowsOptions     Any   `json:"windowsOptions"`

	// Ignored: they only qualify fields above.
	FSGroupChangePolicy      Any `json:"fsGroupChangePolicy"`
	SupplementalGroupsPolicy Any `json:"supplementalGroupsPolicy"`
	SELinuxChangePolicy      Any `json:"seLinuxChangePolicy"`
}

// Container is one of spec.containers or spec.initContainers.
type Container struct {
	Name                   string           `json:"name"`
	Image                  string           `json:"image"`
	Command                []string         `json:"command"`
	Args                   []string         `json:"args"`
	WorkingDir             string           `json:"workingDir"`
	Ports                  []ContainerPort  `json:"ports"`
	EnvFrom                []EnvFromSource  `json:"envFrom"`
	Env                    []EnvVar         `json:"env"`
	Resources              Resources        `json:"resources"`
	RestartPolicy          *string          `json:"restartPolicy"`
	VolumeMounts           []VolumeMount    `json:"volumeMounts"`
	LivenessProbe          *Probe           `json:"livenessProbe"`
	ReadinessProbe         *Probe           `json:"readinessProbe"`
	StartupProbe           *Probe           `json:"startupProbe"`
	Lifecycle              *Lifecycle       `json:"lifecycle"`
	TerminationMessagePath string           `json:"terminationMessagePath"`
	SecurityContext        *SecurityContext `json:"securityContext"`
	Stdin                  bool             `json:"stdin"`
	TTY                    bool             `json:"tty"`
	// ImagePullPolicy is honoured for a registry image (see
	// Options.RegistryImages), ignored for a mapped one.
	ImagePullPolicy string `json:"imagePullPolicy"`

	// Refused when set (see container).
	VolumeDevices      []Any `json:"volumeDevices"`
	ResizePolicy       []Any `json:"resizePolicy"`
	RestartPolicyRules []Any `json:"restartPolicyRules"`

	// Ignored: the API server's defaults, and what has no meaning
	// without stdin.
	TerminationMessagePolicy Any `json:"terminationMessagePolicy"`
	StdinOnce                Any `json:"stdinOnce"`
}

// ContainerPort is one of a container's ports.
type ContainerPort struct {
	Name          string `json:"name"`
	ContainerPort int32  `json:"containerPort"`
	HostPort      Any    `json:"hostPort"`
	Protocol      Any    `json:"protocol"`
	HostIP        Any    `json:"hostIP"`
}

// EnvVar is one of a container's env.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value"`
	ValueFrom *EnvVarSource `json:"valueFrom"`
}

// EnvVarSource is an env's valueFrom.
type EnvVarSource struct {
	FieldRef         *ObjectFieldSelector   `json:"fieldRef"`
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef"`
	ConfigMapKeyRef  *KeySelector           `json:"configMapKeyRef"`
	SecretKeyRef     *KeySelector           `json:"secretKeyRef"`
	FileKeyRef       Any                    `json:"fileKeyRef"` // refused
}

// ObjectFieldSelector is a fieldRef.
type ObjectFieldSelector struct {
	APIVersion Any    `json:"apiVersion"`
	FieldPath  string `json:"fieldPath"`
}

// ResourceFieldSelector is a resourceFieldRef.
type ResourceFieldSelector struct {
	ContainerName string   `json:"containerName"`
	Resource      string   `json:"resource"`
	Divisor       Quantity `json:"divisor"`
}

// KeySelector is a configMapKeyRef or secretKeyRef.
type KeySelector struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional"`
}

// EnvFromSource is one of a container's envFrom.
type EnvFromSource struct {
	Prefix       string     `json:"prefix"`
	ConfigMapRef *EnvSource `json:"configMapRef"`
	SecretRef    *EnvSource `json:"secretRef"`
}

// EnvSource is an envFrom's configMapRef or secretRef.
type EnvSource struct {
	Name     string `json:"name"`
	Optional *bool  `json:"optional"`
}

// Resources is a container's resources.
type Resources struct {
	Limits   map[string]Quantity `json:"limits"`
	Requests map[string]Quantity `json:"requests"`
	Claims   []Any               `json:"claims"` // refused
}

// VolumeMount is one of a container's volumeMounts.
type VolumeMount struct {
	Name              string  `json:"name"`
	ReadOnly          bool    `json:"readOnly"`
	RecursiveReadOnly *string `json:"recursiveReadOnly"`
	MountPath         string  `json:"mountPath"`
	SubPath           string  `json:"subPath"`
	MountPropagation  *string `json:"mountPropagation"`
	SubPathExpr       string  `json:"subPathExpr"`
}

// Probe is a container's liveness, readiness or startup probe.
type Probe struct {
	Exec                          *ExecAction      `json:"exec"`
	HTTPGet                       *HTTPGetAction   `json:"httpGet"`
	TCPSocket                     *TCPSocketAction `json:"tcpSocket"`
	GRPC                          *GRPCAction      `json:"grpc"`
	InitialDelaySeconds           int32            `json:"initialDelaySeconds"`
	TimeoutSeconds                int32            `json:"timeoutSeconds"`
	PeriodSeconds                 int32            `json:"periodSeconds"`
	SuccessThreshold              int32            `json:"successThreshold"`
	FailureThreshold              int32            `json:"failureThreshold"`
	TerminationGracePeriodSeconds *int64           `json:"terminationGracePeriodSeconds"`
}

// ExecAction is an exec probe or hook.
type ExecAction struct {
	Command []string `json:"command"`
}

// HTTPGetAction is an httpGet probe or hook.
type HTTPGetAction struct {
	Path        string      `json:"path"`
	Port        IntOrString `json:"port"`
	Host        string      `json:"host"`
	Scheme      string      `json:"scheme"`
	HTTPHeaders []Any       `json:"httpHeaders"`
}

// TCPSocketAction is a tcpSocket probe or hook.
type TCPSocketAction struct {
	Port IntOrString `json:"port"`
	Host string      `json:"host"`
}

// GRPCAction is a grpc probe.
type GRPCAction struct {
	Port    int32   `json:"port"`
	Service *string `json:"service"`
}

// Lifecycle is a container's lifecycle.
type Lifecycle struct {
	PostStart  *LifecycleHandler `json:"postStart"`
	PreStop    *LifecycleHandler `json:"preStop"`
	StopSignal Any               `json:"stopSignal"` // refused
}

// LifecycleHandler is a postStart or preStop hook.
type LifecycleHandler struct {
	Exec      *ExecAction      `json:"exec"`
	HTTPGet   *HTTPGetAction   `json:"httpGet"`
	TCPSocket *TCPSocketAction `json:"tcpSocket"`
	Sleep     *SleepAction     `json:"sleep"`
}

// SleepAction is a sleep hook.
type SleepAction struct {
	Seconds int64 `json:"seconds"`
}

// SecurityContext is a container's securityContext.
type SecurityContext struct {
	Capabilities             *Capabilities `json:"capabilities"`
	Privileged               *bool         `json:"privileged"`
	RunAsUser                *int64        `json:"runAsUser"`
	RunAsGroup               *int64        `json:"runAsGroup"`
	RunAsNonRoot             *bool         `json:"runAsNonRoot"`
	ReadOnlyRootFilesystem   *bool         `json:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool         `json:"allowPrivilegeEscalation"`

	// Refused when set (see securityContext).
	SELinuxOptions  Any `json:"seLinuxOptions"`
	WindowsOptions  Any `json:"windowsOptions"`
	ProcMount       Any `json:"procMount"`
	SeccompProfile  Any `json:"seccompProfile"`
	AppArmorProfile Any `json:"appArmorProfile"`
}

// Capabilities are a container's capabilities.
type Capabilities struct {
	Add  []string `json:"add"`
	Drop []string `json:"drop"`
}

// Volume is one of spec.volumes. Its sources other than these are
// refused when decoding: unitrun has no driver for them. Those of API
// objects (configMap, secret, downwardAPI, projected) are unitrun-node's
// to fill (see Inputs.Volumes).
type Volume struct {
	Name        string                `json:"name"`
	HostPath    *HostPathVolumeSource `json:"hostPath"`
	EmptyDir    *EmptyDirVolumeSource `json:"emptyDir"`
	ConfigMap   Any                   `json:"configMap"`
	Secret      Any                   `json:"secret"`
	DownwardAPI Any                   `json:"downwardAPI"`
	Projected   Any                   `json:"projected"`
}

// HostPathVolumeSource is a hostPath volume.
type HostPathVolumeSource struct {
	Path string  `json:"path"`
	Type *string `json:"type"`
}

// EmptyDirVolumeSource is an emptyDir volume.
type EmptyDirVolumeSource struct {
	Medium    string    `json:"medium"`
	SizeLimit *Quantity `json:"sizeLimit"`
}

// Any is a field whose value unitrun does not read: only whether it is
// set (not null).
type Any struct{ set bool }

// IsSet reports whether the field was given a value other than null.
func (a Any) IsSet() bool { return a.set }
