package pod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/unit"
)

// Files of a pod's state directory, besides the status files.
const (
	manifestFile = "manifest.yaml" // the manifest the pod was created from
	specFile     = "manifest.json" // that manifest as parsed, which commands and hooks read
	stoppingFile = "stopping"      // present once the pod is being stopped
	lockFile     = "lock"          // serialises the hooks of one pod
	logsDir      = "logs"          // logs/A.log: the output of app A
)

// Dir is the state directory of pod under stateDir.
func Dir(stateDir, pod string) string { return filepath.Join(stateDir, "pods", pod) }

// LogFile is the file that app's stdout and stderr are appended to.
func LogFile(stateDir, pod, app string) string {
	return filepath.Join(Dir(stateDir, pod), logsDir, app+".log")
}

// TerminationFile is the file bound at app's terminationMessagePath.
func TerminationFile(stateDir, pod, app string) string {
	return filepath.Join(Dir(stateDir, pod), logsDir, app+".termination-log")
}

// WriteState writes the state of pod m, created from the manifest text
// manifest, into its state directory, which must exist: its logs
// directory, a copy of the manifest (synced to disk), the manifest as
// parsed, and a Pending pod.json in which every app is waiting.
func WriteState(stateDir string, m *Manifest, manifest []byte) error {
	dir := Dir(stateDir, m.Name)
	if err := os.Mkdir(filepath.Join(dir, logsDir), 0o700); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, manifestFile), manifest, 0o600); err != nil {
		return err
	}
	if err := writeSpec(stateDir, m); err != nil {
		return err
	}
	for _, a := range m.Apps {
		if a.TerminationMessagePath != "" {
			if err := EmptyTerminationFile(stateDir, m.Name, a.Name); err != nil {
				return err
			}
		}
	}
	ps := PodStatus{Name: m.Name, Phase: PodPending, ExitPolicy: m.ExitPolicy, Isolation: m.Isolation, CreatedAt: time.Now()}
	for _, a := range m.Apps {
		ps.Apps = append(ps.Apps, AppStatus{Name: a.Name, State: AppWaiting})
	}
	if err := WritePod(stateDir, ps); err != nil {
		return err
	}
	return nil
}

// EmptyTerminationFile creates app's TerminationFile, or empties it,
// writable by every user, as the kubelet makes a container's.
func EmptyTerminationFile(stateDir, pod, app string) error {
	path := TerminationFile(stateDir, pod, app)
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return err
	}
	return os.Chmod(path, 0o666)
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
		return nil, PodStatus{}, err
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
		return nil, err
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
	data, err := read(stateDir, "pods", pod, "pod.json")
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
	return write(stateDir, true, data, "pods", m.Name, specFile)
}

// readSpec returns the manifest pod was created from, as parsed then: its
// spec file, which takes a quarter of the time that decoding and
// validating the YAML again takes (0.1 against 0.4 ms for 100 apps,
// BenchmarkLoadSpec), or the manifest, for a pod that a unitrun without
// spec files created.
func readSpec(stateDir, pod string) (*Manifest, error) {
	data, err := read(stateDir, "pods", pod, specFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Load(filepath.Join(Dir(stateDir, pod), manifestFile))
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := strictJSON(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(Dir(stateDir, pod), specFile), err)
	}
	return &m, nil
}

// ReadAppOrNew returns app's record, or a waiting one if it has none yet.
func ReadAppOrNew(stateDir, pod, app string) (AppStatus, error) {
	s, err := ReadApp(stateDir, pod, app)
	if errors.Is(err, fs.ErrNotExist) {
		return AppStatus{Name: app, State: AppWaiting}, nil
	}
	return s, err
}

// Ended reports whether s is the record of an app that ended for good.
func (s AppStatus) Ended() bool { return s.State == AppExited || s.State == AppFailed }

// Outcome is the Outcome of the app whose record s holds an exit.
func (s AppStatus) Outcome() Outcome {
	return Outcome{
		App:  s.Name,
		Exit: Exit{Exit: unit.ParseExit(s.ExitCode, s.Signal, s.Result), Success: s.lastSucceeded()},
		At:   s.LastExitAt,
	}
}

// lastSucceeded reports whether the last exit that s records succeeded:
// the state says so once the app has ended; before, as between two runs,
// systemd's result does, unless the command could not be executed.
func (s AppStatus) lastSucceeded() bool {
	switch s.State {
	case AppExited:
		return true
	case AppFailed:
		return false
	}
	return s.Result == "success" && s.Message == ""
}

// EndRestart returns s, the record of an app waiting for a restart that will
// not come (the app was stopped before its next run started), as the
// record of an app that ended with the exit of its last run.
func (s AppStatus) EndRestart() AppStatus {
	if s.lastSucceeded() {
		s.State = AppExited
	} else {
		s.State = AppFailed
	}
	s.FinishedAt = s.LastExitAt
	return s
}

// Stopping reports whether pod is being stopped, on request or because its
// exit policy ended it.
func Stopping(stateDir, pod string) bool {
	_, err := os.Stat(filepath.Join(Dir(stateDir, pod), stoppingFile))
	return err == nil
}

// MarkStopping records that pod is being stopped.
func MarkStopping(stateDir, pod string) error {
	return write(stateDir, false, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), "pods", pod, stoppingFile)
}

// Lock takes the lock of pod, waiting for it, and returns its release.
func Lock(stateDir, pod string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(Dir(stateDir, pod), lockFile), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock pod %s: %w", pod, err)
	}
	return func() { f.Close() }, nil
}

// Ended reports whether the pod has ended: its phase is Succeeded or Failed.
func (s PodStatus) Ended() bool { return s.Phase == PodSucceeded || s.Phase == PodFailed }

// startErrorFile is where the exec hook leaves why a run could not execute its
// command, for reap-app: STATE/pods/P/apps/A.start-error.
func startErrorFile(app string) string { return app + ".start-error" }

// OpenStartError creates app's start error file afresh, empty, without
// following a symlink out of stateDir.
func OpenStartError(stateDir, pod, app string) (*os.File, error) {
	if err := CheckNames(pod, app); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(Dir(stateDir, pod))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := root.MkdirAll("apps", 0o755); err != nil {
		return nil, err
	}
	return root.OpenFile(filepath.Join("apps", startErrorFile(app)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
}

// readStartError returns the reason the run of app that just ended could
// not execute its command: "" if the command was executed (the file the
// exec hook opened is then empty) or the run never got as far as the exec
// hook.
func readStartError(stateDir, pod, app string) (string, error) {
	data, err := read(stateDir, "pods", pod, "apps", startErrorFile(app))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// removeStartError removes app's start error file once its reason is
// recorded, so that no later run, which may end before its own exec hook,
// is given it, and none is left once the run has ended.
func removeStartError(stateDir, pod, app string) error {
	err := os.Remove(filepath.Join(Dir(stateDir, pod), "apps", startErrorFile(app)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

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
