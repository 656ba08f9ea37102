package pod

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/unitrun/unitrun/pod/record"
)

// Phase is where a pod is in its life, as in Kubernetes.
type Phase string

// Pod phases.
const (
	PodPending   Phase = "Pending"   // created, not started
	PodRunning   Phase = "Running"   // started, not ended
	PodSucceeded Phase = "Succeeded" // ended with exit code 0
	PodFailed    Phase = "Failed"    // ended with another exit code
)

// PodStatus is the record of a pod. ExitCode is set once the pod has ended.
type PodStatus struct {
	Name       string            `json:"name"`
	Phase      Phase             `json:"phase"`
	ExitCode   *int              `json:"exit_code,omitempty"`
	ExitPolicy record.ExitPolicy `json:"exit_policy"`
	// Ready is the pod's Ready condition, as Kubernetes has it: the pod
	// is running and every app is ready (an init app once it has
	// succeeded). [ReadPod] works it out from the apps' records.
	Ready bool `json:"ready"`
	// Isolation is where the pod runs, the manifest's or the one its
	// creation chose instead; "" in the records of older pods.
	Isolation  Isolation          `json:"isolation,omitempty"`
	Apps       []record.AppStatus `json:"apps"`
	CreatedAt  time.Time          `json:"created_at,omitzero"`
	StartedAt  time.Time          `json:"started_at,omitzero"`
	FinishedAt time.Time          `json:"finished_at,omitzero"`
	// FromSystemd says the pod's end could not be recorded and was read
	// back from systemd (podrun.Runner.Status); never written to disk.
	FromSystemd bool `json:"-"`
}

// WritePod records s, the status of a pod, atomically and synced to disk.
func WritePod(stateDir string, s PodStatus) error {
	if err := s.validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return record.WriteFile(stateDir, true, append(data, '\n'), "pods", s.Name, podFile)
}

// ReadPod returns the status of pod: pod.json as WritePod wrote it, with
// each app that has a record of its own (apps/A.json, written the moment
// the app starts or exits) replaced by that record. pod.json fixes which
// apps there are and their order.
func ReadPod(stateDir, pod string) (PodStatus, error) {
	if err := CheckNames(pod); err != nil {
		return PodStatus{}, err
	}
	data, err := record.ReadFile(stateDir, "pods", pod, podFile)
	if err != nil {
		return PodStatus{}, err
	}
	s, err := parsePod(data)
	if err == nil && s.Name != pod {
		err = fmt.Errorf("pod status names pod %q, not %q", s.Name, pod)
	}
	if err != nil {
		return PodStatus{}, record.Broken(stateDir, pod, err, podFile)
	}
	for i, a := range s.Apps {
		app, err := record.ReadApp(stateDir, pod, a.Name)
		switch {
		case err == nil:
			s.Apps[i] = app
		case !errors.Is(err, fs.ErrNotExist):
			return PodStatus{}, err
		}
	}
	s.Ready = s.Phase == PodRunning && !slices.ContainsFunc(s.Apps, func(a record.AppStatus) bool { return !a.Ready })
	return s, nil
}

// podFile is the pod's status file in its state directory.
const podFile = "pod.json"

func parsePod(data []byte) (PodStatus, error) {
	var s PodStatus
	if err := record.StrictJSON(data, &s); err != nil {
		return PodStatus{}, err
	}
	return s, s.validate()
}

func (s PodStatus) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("pod status %q: "+format, append([]any{s.Name}, args...)...)
	}
	if err := checkPodName(s.Name); err != nil {
		return bad("name %v", err)
	}
	ended := false
	switch s.Phase {
	case PodPending, PodRunning:
	case PodSucceeded, PodFailed:
		ended = true
	default:
		return bad("phase %q: must be Pending, Running, Succeeded or Failed", s.Phase)
	}
	switch c := s.ExitCode; {
	case ended != (c != nil):
		return bad("exit_code must be set exactly when the pod has ended")
	case c != nil && (*c < 0 || *c > 255):
		return bad("exit_code %d: must be in 0..255", *c)
	case c != nil && (*c == 0) != (s.Phase == PodSucceeded):
		return bad("phase %s does not go with exit_code %d", s.Phase, *c)
	}
	if err := s.choices().validate(); err != nil {
		return bad("%v", err)
	}
	seen := make(map[string]bool)
	for _, a := range s.Apps {
		if err := a.Validate(); err != nil {
			return bad("%v", err)
		}
		if seen[a.Name] {
			return bad("app %q listed twice", a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}

// podChoices are the fields of a pod's status that its creation and start
// chose over the manifest: all that its hooks read of pod.json.
type podChoices struct {
	ExitPolicy record.ExitPolicy `json:"exit_policy"`
	Isolation  Isolation         `json:"isolation,omitempty"`
}

func (s PodStatus) choices() podChoices {
	return podChoices{ExitPolicy: s.ExitPolicy, Isolation: s.Isolation}
}

func (c podChoices) validate() error {
	switch c.ExitPolicy {
	case record.FirstFailure, record.AnyExit, record.AllExit:
	default:
		return fmt.Errorf("exit_policy %q: must be first-failure, any or all", c.ExitPolicy)
	}
	switch c.Isolation {
	case "", NoIsolation, Namespaces:
	default:
		return fmt.Errorf("isolation %q: must be none or namespaces", c.Isolation)
	}
	return nil
}

// parseChoices reads a pod's choices from its pod.json, skipping the rest
// unchecked: the apps' statuses, which make most of it (8 KB for 100 apps)
// and which a hook does not read.
func parseChoices(data []byte) (podChoices, error) {
	var c podChoices
	if err := json.Unmarshal(data, &c); err != nil {
		return podChoices{}, record.JSONError(err, len(data))
	}
	if err := c.validate(); err != nil {
		return podChoices{}, err
	}
	return c, nil
}
