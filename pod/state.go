package pod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
)

// manifestFile is the file of a pod's state directory that holds the
// manifest the pod was created from; package record names the others
// (record.SpecFile, record.LogsDir, the status files).
const manifestFile = "manifest.yaml"

// LogFile is the file that app's stdout and stderr are appended to: the
// live file of its log, which the copier rotates (logcopy.Segments).
func LogFile(stateDir, pod, app string) string {
	return filepath.Join(record.Dir(stateDir, pod), record.LogsDir, app+".log")
}

// WriteState writes the state of pod m, created from the manifest text
// manifest, into its state directory, which must exist: its logs
// directory with its logs' rotation (logcopy.RotationFile), a copy of the
// manifest (synced to disk), each app's empty log (mode 0600), the
// manifest as parsed, its policies (record.WritePolicy), and a Pending pod.json in which every app is waiting.
func WriteState(stateDir string, m *Manifest, manifest []byte) error {
	dir := record.Dir(stateDir, m.Name)
	if err := os.Mkdir(filepath.Join(dir, record.LogsDir), 0o700); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, manifestFile), manifest, 0o600); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, record.LogsDir, logcopy.RotationFile), logcopy.FormatRotation(m.Rotation()), 0o600); err != nil {
		return err
	}
	if err := writeSpec(stateDir, m); err != nil {
		return err
	}
	if err := record.WritePolicy(stateDir, m.Policy()); err != nil {
		return err
	}
	for _, a := range m.Apps {
		// Made here, 0600, before the app's first run: systemd
		// creates the file of StandardOutput=append: with the mode
		// the service's umask leaves (0644), readable by every user.
		if err := createLog(LogFile(stateDir, m.Name, a.Name)); err != nil {
			return err
		}
		if a.TerminationMessagePath != "" {
			if err := record.EmptyTerminationFile(stateDir, m.Name, a.Name); err != nil {
				return err
			}
		}
	}
	ps := PodStatus{Name: m.Name, Phase: PodPending, ExitPolicy: m.ExitPolicy, Isolation: m.Isolation, CreatedAt: time.Now()}
	for _, a := range m.Apps {
		ps.Apps = append(ps.Apps, record.AppStatus{Name: a.Name, State: record.AppWaiting})
	}
	if err := WritePod(stateDir, ps); err != nil {
		return err
	}
	return nil
}

// createLog creates the empty live log at path, mode 0600.
func createLog(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// LoadState returns the manifest pod was created from, with the exit policy
// and isolation its start and creation chose, and its pod.json.
func LoadState(stateDir, pod string) (*Manifest, PodStatus, error) {
	m, data, err := readSpecAndStatus(stateDir, pod)
	if err != nil {
		return nil, PodStatus{}, err
	}
	s, err := parsePod(data)
	if err != nil {
		return nil, PodStatus{}, record.Broken(stateDir, pod, err, podFile)
	}
	m.apply(s.choices())
	return m, s, nil
}

// LoadSpec is LoadState for the hooks, which need the manifest and the
// choices alone: of pod.json it reads only those (see parseChoices).
func LoadSpec(stateDir, pod string) (*Manifest, error) {
	m, data, err := readSpecAndStatus(stateDir, pod)
	if err != nil {
		return nil, err
	}
	c, err := parseChoices(data)
	if err != nil {
		return nil, record.Broken(stateDir, pod, err, podFile)
	}
	m.apply(c)
	return m, nil
}

// LoadApp returns LoadSpec's manifest of pod and its app.
func LoadApp(stateDir, pod, app string) (*Manifest, *App, error) {
	m, err := LoadSpec(stateDir, pod)
	if err != nil {
		return nil, nil, err
	}
	a := m.App(app)
	if a == nil {
		return nil, nil, fmt.Errorf("pod %s has no app %q", pod, app)
	}
	return m, a, nil
}

// LoadPolicy returns the policies of pod, which an exit applies: as its
// creation and start saved them, or, for a pod that an older unitrun
// created, from its manifest and pod.json.
func LoadPolicy(stateDir, pod string) (*record.Policy, error) {
	p, err := record.ReadPolicy(stateDir, pod)
	if !errors.Is(err, fs.ErrNotExist) {
		return p, err
	}
	m, err := LoadSpec(stateDir, pod)
	if err != nil {
		return nil, err
	}
	return m.Policy(), nil
}

// readSpecAndStatus returns pod's manifest (see readSpec) and the bytes of
// its pod.json.
func readSpecAndStatus(stateDir, pod string) (*Manifest, []byte, error) {
	if err := CheckNames(pod); err != nil {
		return nil, nil, err
	}
	m, err := readSpec(stateDir, pod)
	if err != nil {
		return nil, nil, err
	}
	data, err := record.ReadFile(stateDir, "pods", pod, podFile)
	if err != nil {
		return nil, nil, err
	}
	return m, data, nil
}

// apply sets the exit policy and, unless c has none, the isolation that
// the pod's start and creation chose.
func (m *Manifest) apply(c podChoices) {
	m.ExitPolicy = c.ExitPolicy
	if c.Isolation != "" {
		m.Isolation = c.Isolation
	}
}

// writeSpec saves m, a manifest Parse returned, as the pod's spec file.
func writeSpec(stateDir string, m *Manifest) error {
	data, err := m.specJSON()
	if err != nil {
		return err
	}
	return record.WriteFile(stateDir, true, data, "pods", m.Name, record.SpecFile)
}

// readSpec returns the manifest pod was created from, as parsed then: its
// spec file, which takes a quarter of the time that decoding and
// validating the YAML again takes (0.1 against 0.4 ms for 100 apps,
// BenchmarkLoadSpec), or the manifest, for a pod that a unitrun without
// spec files created.
func readSpec(stateDir, pod string) (*Manifest, error) {
	data, err := record.ReadFile(stateDir, "pods", pod, record.SpecFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Load(filepath.Join(record.Dir(stateDir, pod), manifestFile))
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := record.StrictJSON(data, &m); err != nil {
		return nil, record.Broken(stateDir, pod, err, record.SpecFile)
	}
	return &m, nil
}

// Ended reports whether the pod has ended: its phase is Succeeded or Failed.
func (s PodStatus) Ended() bool { return s.Phase == PodSucceeded || s.Phase == PodFailed }

// List returns the status of every pod, by name. A pod whose status cannot
// be read is left out, and the error, which joins one error naming the pod
// for each such pod (errors.Join), is returned with the others' statuses.
func List(stateDir string) ([]PodStatus, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pods []PodStatus
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || CheckNames(e.Name()) != nil {
			continue
		}
		s, err := ReadPod(stateDir, e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", e.Name(), err))
			continue
		}
		pods = append(pods, s)
	}
	return pods, errors.Join(errs...)
}
