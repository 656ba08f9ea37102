package pod

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
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

// loadState returns the manifest pod was created from, with the exit policy
// and isolation its start and creation chose, and its pod.json.
func loadState(stateDir, pod string) (*Manifest, PodStatus, error) {
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

// loadSpec is loadState for the hooks, which need the manifest and the
// choices alone: of pod.json it reads only those (see parseChoices).
func loadSpec(stateDir, pod string) (*Manifest, error) {
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

// readSpecAndStatus returns pod's manifest (see readSpec) and the bytes of
// its pod.json.
func readSpecAndStatus(stateDir, pod string) (*Manifest, []byte, error) {
	if err := checkNames(pod); err != nil {
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

// readAppOrNew returns app's record, or a waiting one if it has none yet.
func readAppOrNew(stateDir, pod, app string) (AppStatus, error) {
	s, err := ReadApp(stateDir, pod, app)
	if errors.Is(err, fs.ErrNotExist) {
		return AppStatus{Name: app, State: AppWaiting}, nil
	}
	return s, err
}

// ended reports whether s is the record of an app that ended for good.
func (s AppStatus) ended() bool { return s.State == AppExited || s.State == AppFailed }

// outcome is the Outcome of an app whose record holds an exit.
func (s AppStatus) outcome() Outcome {
	return Outcome{
		App:  s.Name,
		Exit: Exit{Code: *s.ExitCode, Signal: s.Signal, Result: s.Result, Success: s.lastSucceeded()},
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

// endRestart is s, the record of an app waiting for a restart that will
// not come (the app was stopped before its next run started), as the
// record of an app that ended with the exit of its last run.
func (s AppStatus) endRestart() AppStatus {
	if s.lastSucceeded() {
		s.State = AppExited
	} else {
		s.State = AppFailed
	}
	s.FinishedAt = s.LastExitAt
	return s
}

// stopping reports whether pod is being stopped, on request or because its
// exit policy ended it.
func stopping(stateDir, pod string) bool {
	_, err := os.Stat(filepath.Join(Dir(stateDir, pod), stoppingFile))
	return err == nil
}

// markStopping records that pod is being stopped.
func markStopping(stateDir, pod string) error {
	return write(stateDir, false, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), "pods", pod, stoppingFile)
}

// lock takes the lock of pod, waiting for it, and returns its release.
func lock(stateDir, pod string) (func(), error) {
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
