package podrun

import (
	"path/filepath"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

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

// isolated reports whether m runs under a systemd of its own.
func isolated(m *pod.Manifest) bool { return m.Isolation == pod.Namespaces }

// entryUnit is the unit whose start starts pod m on the runner's manager.
func entryUnit(m *pod.Manifest) string {
	if isolated(m) {
		return pod.ContainerUnit(m.Name)
	}
	return pod.TargetUnit(m.Name)
}

// placedFile is a rendered unit file and where it goes.
type placedFile struct {
	path string
	data []byte
}

// unitFiles renders pod m's units: its graph into the manager's runtime
// unit directory unitDir or, for an isolated pod, into the pod's own unit
// path, with the container service into unitDir.
func (r *Runner) unitFiles(m *pod.Manifest, unitDir string) ([]placedFile, error) {
	o := pod.RenderOptions{
		Binary:   r.Binary,
		Hook:     pod.HookBinary(r.Binary),
		StateDir: r.StateDir,
		Manager:  r.Manager,
		LogPath:  func(app string) string { return pod.LogFile(r.StateDir, m.Name, app) },
	}
	graphDir := unitDir
	if isolated(m) {
		o.Manager = innerManager
		graphDir = filepath.Join(record.Dir(r.StateDir, m.Name), containerUnits)
	}
	files, err := pod.Graph(m, o)
	if err != nil {
		return nil, err
	}
	var placed []placedFile
	for _, f := range files {
		placed = append(placed, placedFile{filepath.Join(graphDir, f.Name), f.Data})
	}
	if isolated(m) {
		data, err := pod.ContainerService(m, o)
		if err != nil {
			return nil, err
		}
		placed = append(placed, placedFile{filepath.Join(unitDir, pod.ContainerUnit(m.Name)), data})
	}
	return placed, nil
}
