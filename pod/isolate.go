package pod

import (
	"path/filepath"
	"time"

	"github.com/unitrun/unitrun/unit"
)

// ContainerUnit is the name of the service on the runner's manager that
// runs isolated pod's own systemd.
func ContainerUnit(pod string) string { return unitPrefix + component(pod) + ".service" }

// innerManager is the --manager value by which the hooks of an isolated
// pod reach the pod's own systemd: its private socket, in the container's
// /run.
const innerManager = "private:/run/systemd/private"

// Files and directories of an isolated pod's state directory.
const (
	containerUnits = "units"         // the pod's graph, the unit path of its systemd
	containerRun   = "run"           // the container's /run
	containerPID   = "container.pid" // host process id of the pod's systemd
)

// containerStopSlack is what the container service's stop timeout allows
// beyond the longest stop timeout of an app: time for the reapers, the
// shutdown hook and the pod's systemd to end (systemd's default stop
// timeout twice over).
const (
	defaultStopTimeout = 90 * time.Second // systemd's DefaultTimeoutStopSec=
	containerStopSlack = 2 * defaultStopTimeout
)

// isolated reports whether m runs under a systemd of its own.
func (m *Manifest) isolated() bool { return m.Isolation == Namespaces }

// entryUnit is the unit whose start starts pod m on the runner's manager.
func entryUnit(m *Manifest) string {
	if m.isolated() {
		return ContainerUnit(m.Name)
	}
	return TargetUnit(m.Name)
}

// placedFile is a rendered unit file and where it goes.
type placedFile struct {
	path string
	data []byte
}

// unitFiles renders pod m's units: its graph into the manager's runtime
// unit directory unitDir or, for an isolated pod, into the pod's own unit
// path, with the container service into unitDir.
func (r *Runner) unitFiles(m *Manifest, unitDir string) ([]placedFile, error) {
	o := RenderOptions{
		Binary:   r.Binary,
		StateDir: r.StateDir,
		Manager:  r.Manager,
		LogPath:  func(app string) string { return LogFile(r.StateDir, m.Name, app) },
	}
	graphDir := unitDir
	if m.isolated() {
		o.Manager = innerManager
		graphDir = filepath.Join(Dir(r.StateDir, m.Name), containerUnits)
	}
	files, err := Graph(m, o)
	if err != nil {
		return nil, err
	}
	var placed []placedFile
	for _, f := range files {
		placed = append(placed, placedFile{filepath.Join(graphDir, f.Name), f.Data})
	}
	if m.isolated() {
		data, err := containerService(m, o)
		if err != nil {
			return nil, err
		}
		placed = append(placed, placedFile{filepath.Join(unitDir, ContainerUnit(m.Name)), data})
	}
	return placed, nil
}

// containerService renders the service that runs isolated pod m's systemd.
// It is Type=notify: "unitrun pod container" reports it ready once the
// pod's systemd has booted, which is once the start job of the pod's
// target is done. KillMode=mixed sends the stop signal (SIGTERM) to that
// process alone, which powers the pod's systemd off; only what is left once
// it has exited, or after the stop timeout, is killed. ExecStopPost= ends
// the pod's record if its systemd died without doing so.
func containerService(m *Manifest, o RenderOptions) ([]byte, error) {
	h := hooks{m: m, o: RenderOptions{Binary: o.Binary, StateDir: o.StateDir}}
	f := new(unit.File)
	f.Set("Unit", "Description", unit.EscapeSpecifiers("unitrun pod "+m.Name+" (own systemd)"))
	f.Set("Unit", "DefaultDependencies", "no")
	f.Set("Unit", "Conflicts", shutdownTarget)
	f.Set("Unit", "Before", shutdownTarget)
	f.Set("Service", "Type", "notify")
	f.Set("Service", "NotifyAccess", "main")
	if err := setExec(f, "ExecStart", "", h.argv("container")); err != nil {
		return nil, err
	}
	if err := setExec(f, "ExecStopPost", "", h.argv("container-exited")); err != nil {
		return nil, err
	}
	f.Set("Service", "KillMode", "mixed")
	f.Set("Service", "Delegate", "yes")
	f.Set("Service", "TimeoutStartSec", "infinity")
	longest := defaultStopTimeout
	for _, a := range m.Apps {
		longest = max(longest, a.StopTimeout)
	}
	f.Set("Service", "TimeoutStopSec", timeSpan(longest+containerStopSlack))
	f.Set("Service", "SyslogIdentifier", unit.EscapeSpecifiers(m.Name))
	return f.Bytes()
}
