package record

import (
	"fmt"
	"time"
)

// ExitPolicy says when a pod ends.
type ExitPolicy string

// Check returns an error unless p is one of the exit policies. It does not
// say what p is for: `"sometimes": must be first-failure, any or all`.
func (p ExitPolicy) Check() error {
	switch p {
	case FirstFailure, AnyExit, AllExit:
		return nil
	}
	return fmt.Errorf("%q: must be %s, %s or %s", p, FirstFailure, AnyExit, AllExit)
}

// RestartPolicy says when an app runs again after it exits.
type RestartPolicy string

// Valid reports whether p is one of the restart policies.
func (p RestartPolicy) Valid() bool { return p == Never || p == Always || p == OnFailure }

// ProbeAction says what a failing probe does.
type ProbeAction string

// Backoff are the steps between restarts: the first delay is Initial, each
// next one doubles up to Max, and an app that ran for Reset or longer before
// it exited starts again from Initial.
type Backoff struct {
	Initial time.Duration `yaml:"initial" json:"initial,omitzero"`
	Max     time.Duration `yaml:"max" json:"max,omitzero"`
	Reset   time.Duration `yaml:"reset" json:"reset,omitzero"`
}

// Exit policies.
const (
	// FirstFailure ends the pod when every app has ended, or as soon as one
	// app fails for good.
	FirstFailure ExitPolicy = "first-failure"
	// AnyExit ends the pod as soon as any app ends for good.
	AnyExit ExitPolicy = "any"
	// AllExit ends the pod only when every app has ended.
	AllExit ExitPolicy = "all"
)

// Restart policies, as in Kubernetes.
const (
	Never     RestartPolicy = "Never"
	Always    RestartPolicy = "Always"
	OnFailure RestartPolicy = "OnFailure"
)

// Probe actions.
const (
	RestartApp ProbeAction = "restart"
	FailPod    ProbeAction = "fail-pod"
)

// Probe results, as ProbeStatus.LastResult records them.
const (
	ProbeSuccess = "success"
	ProbeFailure = "failure"
	ProbeTimeout = "timeout"
)
