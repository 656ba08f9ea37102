package provider

// This file is the provider's only door into unitrun: every call into the
// pod and manager packages is here, so that a change of their import paths
// or names is a change of this file alone. The rest of the provider speaks
// the manifest's wire format (JSON, which the manifest's YAML reader
// takes) and the types below.

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/registry"
	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/kube"
	"github.com/unitrun/unitrun/pod/podrun"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
)

// An engine runs unitrun pods on one manager.
type engine struct {
	r    *podrun.Runner
	conn *manager.Conn
	// images caches, by pod, how its containers' statuses name their
	// registry images ([engine.registryImages]).
	images sync.Map
}

// openEngine reaches the manager that spec names ("" is auto: the system
// manager where systemd is PID 1, else the user's, else the embedded one,
// booted if need be) and returns an engine whose pods keep their state in
// stateDir and whose units call binary, the unitrun command, back.
func openEngine(ctx context.Context, spec, stateDir, binary string) (*engine, error) {
	conn, err := manager.Open(ctx, spec, manager.Options{})
	if err != nil {
		return nil, err
	}
	hook := conn.Target().Spec
	if hook == "embedded" {
		hook = "private:" + manager.Options{}.Embedded().Socket()
	}
	e := newEngine(conn, stateDir, binary, hook)
	return e, nil
}

// newEngine returns an engine on conn; hookManager is the --manager value
// the pods' hooks reach conn's manager with.
func newEngine(conn *manager.Conn, stateDir, binary, hookManager string) *engine {
	return &engine{conn: conn, r: &podrun.Runner{Mgr: conn, StateDir: stateDir, Binary: binary, Manager: hookManager, Pull: pulled}}
}

// pulled is the pull of the engine's pods' creations: the provider has
// pulled each registry image with the Pod's credentials and policy before
// it creates the pod ([Provider.pullImages]), so the creation takes it
// from the store.
func pulled(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
	return registry.Pull(ctx, s, a.Image, image.PullOptions{Policy: image.PullNever})
}

// close releases the connection to the manager.
func (e *engine) close() error { return e.conn.Close() }

// check validates manifest as create would, including the host checks
// (users, groups, working directories, root filesystems): an error here is
// the manifest's, and will not go away by trying again. Once nothing is
// refused, it makes each app's workingDir that does not exist, as a
// container runtime makes a container's.
func (e *engine) check(manifest []byte) error {
	return podrun.CheckMakingDirs(manifest)
}

// errExists is create's error for a pod that exists already.
var errExists = errors.New("pod exists")

// create creates the pod of manifest, named name, without starting it. A
// pod of that name that exists already is left as it is (errExists).
func (e *engine) create(ctx context.Context, name string, manifest []byte) error {
	if e.exists(name) {
		return errExists
	}
	_, err := e.r.Create(ctx, manifest)
	return err
}

// start starts pod name if it has been created and not started, and
// returns once its sidecars have started and passed their startup probes,
// or the pod has ended. A pod that ended while it started is no error: its
// status says how it ended.
func (e *engine) start(ctx context.Context, name string) error {
	s, err := pod.ReadPod(e.r.StateDir, name)
	if err != nil {
		return err
	}
	if s.Phase != pod.PodPending {
		return nil
	}
	var ended *podrun.EndedError
	if err := e.r.Start(ctx, name, ""); err != nil && !errors.As(err, &ended) {
		return err
	}
	return nil
}

// exists reports whether pod name has a state directory.
func (e *engine) exists(name string) bool {
	_, err := os.Lstat(record.Dir(e.r.StateDir, name))
	return err == nil
}

// stop stops pod name gracefully if it runs: each app's main process
// gets its stop signal; what is left of the app once it has exited, or
// after kill (if positive) or the app's stop timeout, is killed. It
// returns the pod's last status; ok is false if there was no pod.
func (e *engine) stop(ctx context.Context, name string, kill time.Duration) (last podState, ok bool, err error) {
	if !e.exists(name) {
		return podState{}, false, nil
	}
	s, err := pod.ReadPod(e.r.StateDir, name)
	if err == nil && s.Phase == pod.PodRunning {
		s, err = e.r.Stop(ctx, name, kill)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return podState{}, false, nil
	}
	if err != nil {
		return podState{}, true, err
	}
	return e.fromPod(name, s), true, nil
}

// remove removes pod name, stopping what is left of it, and its
// memory-backed emptyDirs.
func (e *engine) remove(ctx context.Context, name string) error {
	e.images.Delete(name)
	if e.exists(name) {
		if err := e.r.Remove(ctx, name, true); err != nil {
			return err
		}
	}
	return e.removeMemoryDir(ctx, name)
}

// status reads pod name's status files.
func (e *engine) status(name string) (podState, error) {
	s, err := pod.ReadPod(e.r.StateDir, name)
	if err != nil {
		return podState{}, err
	}
	ps := e.fromPod(name, s)
	images := e.registryImages(name)
	for i, a := range ps.Apps {
		ps.Apps[i].Image = images[a.Name]
	}
	return ps, nil
}

// registryImages returns how the statuses of pod name's containers whose
// images are registry images name them, by container, from the images
// its creation found ([pod.App.ImageID]); nil if it has none. The pod's
// spec does not change: it is read once.
func (e *engine) registryImages(name string) map[string]containerImage {
	if v, ok := e.images.Load(name); ok {
		return v.(map[string]containerImage)
	}
	m, err := pod.LoadSpec(e.r.StateDir, name)
	if err != nil {
		return nil
	}
	var images map[string]containerImage
	for _, a := range m.Apps {
		if a.ImageID != "" {
			if images == nil {
				images = map[string]containerImage{}
			}
			images[a.Name] = registryImage(a.Image, a.ImageID)
		}
	}
	e.images.Store(name, images)
	return images
}

// recordDir is the directory that pod name's records are written into,
// directly or in directories below it.
func (e *engine) recordDir(name string) string { return record.Dir(e.r.StateDir, name) }

// podOf is the name of the pod whose record (or directory of records) is
// at path; "" if path is not in a pod's directory.
func (e *engine) podOf(path string) string {
	rel, err := filepath.Rel(record.Dir(e.r.StateDir, ""), path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	name, _, _ := strings.Cut(rel, string(filepath.Separator))
	return name
}

// names lists the pods in the state directory.
func (e *engine) names() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(e.r.StateDir, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var names []string
	for _, d := range entries {
		if d.IsDir() {
			names = append(names, d.Name())
		}
	}
	return names, err
}

// logFile is the file that app of pod name writes its output to.
func (e *engine) logFile(name, app string) string { return pod.LogFile(e.r.StateDir, name, app) }

// nRestarts is systemd's NRestarts of app's unit in pod name; ok is false
// if the unit is not loaded (the pod has ended, or the pod is isolated and
// its units are on the pod's own manager).
func (e *engine) nRestarts(ctx context.Context, name, app string) (n uint32, ok bool) {
	u := pod.AppUnit(name, app)
	if loaded, err := e.conn.Loaded(ctx, u); err != nil || !loaded {
		return 0, false
	}
	props, err := e.conn.Properties(ctx, u, "org.freedesktop.systemd1.Service")
	if err != nil {
		return 0, false
	}
	v, ok := props["NRestarts"]
	if !ok {
		return 0, false
	}
	n, ok = v.Value().(uint32)
	return n, ok
}

// loadedUnits lists the units of pod name that the manager has loaded.
func (e *engine) loadedUnits(ctx context.Context, name string) ([]string, error) {
	all, err := e.conn.ListUnitNames(ctx, "unitrun-pod-")
	if err != nil {
		return nil, err
	}
	prefix := pod.SliceUnit(name)
	prefix = prefix[:len(prefix)-len(".slice")]
	var units []string
	for _, u := range all {
		if len(u) > len(prefix) && u[:len(prefix)] == prefix && (u[len(prefix)] == '.' || u[len(prefix)] == '-') {
			units = append(units, u)
		}
	}
	return units, nil
}

// The kubelet's bounds of a termination message: the file's first 4096
// bytes, or the log's last 80 lines, at most 2048 bytes.
const (
	maxTerminationMessage = 4096
	maxLogTailBytes       = 2048
	maxLogTailLines       = 80
)

// readHead returns the first n bytes of the file at path; "" if it cannot
// be read.
func readHead(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, n))
	return string(data)
}

// logTail returns the last maxLogTailLines lines of the log at path, at
// most maxLogTailBytes of them; "" if it cannot be read.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxLogTailBytes {
		if _, err := f.Seek(fi.Size()-maxLogTailBytes, io.SeekStart); err != nil {
			return ""
		}
	}
	data, _ := io.ReadAll(f)
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines[max(0, len(lines)-maxLogTailLines):], "")
}

// capabilityNames are the Linux capabilities an app's capabilities may
// name.
var capabilityNames = appexec.CapabilityNames

// writeFile replaces path with data atomically.
func writeFile(path string, data []byte) error { return atomicfile.Write(path, data, 0o600) }

// volumeDir is the directory of volume vol of the Pod whose unitrun pod is
// name: kube's, under the pod's state, which only root reads, so that a
// volume's files are seen only where a mount shows them; removing the pod
// removes it.
func volumeDir(stateDir, name, vol string) string { return kube.StateVolumeDir(stateDir, name, vol) }

// unitName is the unit that runs app of pod name, as containers' IDs show it.
func unitName(name, app string) string { return pod.AppUnit(name, app) }

// fromPod copies what the provider reads of the status s of pod name, with
// the termination message and, for a failure, the log's tail of each app
// that does not run.
func (e *engine) fromPod(name string, s pod.PodStatus) podState {
	ps := podState{
		Phase: string(s.Phase), ExitCode: s.ExitCode,
		CreatedAt: s.CreatedAt, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
	}
	for _, a := range s.Apps {
		ps.Apps = append(ps.Apps, appState{
			Name: a.Name, State: string(a.State), ExitCode: a.ExitCode, Signal: a.Signal,
			Result: a.Result, Restarts: a.Restarts, Backoff: a.Backoff, Message: a.Message,
			StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, LastExitAt: a.LastExitAt, LastStartedAt: a.LastStartedAt,
			Ready: a.Ready, StartupPassed: a.Startup != nil && a.Startup.LastResult == "success",
			Warnings: probeWarnings(a), ProbeFailures: probeFailures(a),
			PostStartFailed: a.State != record.AppRunning && strings.HasPrefix(a.Message, podrun.PostStartFailed),
		})
		if a.State == record.AppRunning || a.ExitCode == nil {
			continue
		}
		as := &ps.Apps[len(ps.Apps)-1]
		as.TerminationMessage = readHead(record.TerminationFile(e.r.StateDir, name, a.Name), maxTerminationMessage)
		if as.TerminationMessage == "" && *a.ExitCode != 0 {
			as.LogTail = logTail(e.logFile(name, a.Name))
		}
	}
	return ps
}

// probeFailures are a's probes whose last check failed, by kind; nil if
// none has.
func probeFailures(a record.AppStatus) map[string]probeFailure {
	var f map[string]probeFailure
	for kind, pr := range map[string]*record.ProbeStatus{"Liveness": a.Probe, "Readiness": a.Readiness, "Startup": a.Startup} {
		if pr != nil && pr.LastResult != record.ProbeSuccess {
			if f == nil {
				f = map[string]probeFailure{}
			}
			f[kind] = probeFailure{Message: pr.Message, Failures: pr.ConsecutiveFailures, Acting: pr.Acted != ""}
		}
	}
	return f
}

// probeWarnings are the notes of a's probes whose last check succeeded
// with one, by kind; nil if none has.
func probeWarnings(a record.AppStatus) map[string]string {
	var w map[string]string
	for kind, pr := range map[string]*record.ProbeStatus{"Liveness": a.Probe, "Readiness": a.Readiness, "Startup": a.Startup} {
		if pr != nil && pr.LastResult == record.ProbeSuccess && pr.Message != "" {
			if w == nil {
				w = map[string]string{}
			}
			w[kind] = pr.Message
		}
	}
	return w
}

// podUsage is what the apps of a pod use, as pod stats samples it.
type podUsage struct {
	at   time.Time
	apps []appUsage
}

// appUsage is what one app uses: its CPU time in nanoseconds and its
// memory in bytes, nil where not known (the app does not run). app is ""
// for an isolated pod's apps together.
type appUsage struct {
	app         string
	cpu, memory *uint64
}

// podUsage samples what pod name's apps use (podrun.Runner.Stats).
func (e *engine) podUsage(ctx context.Context, name string) (podUsage, error) {
	s, err := e.r.Stats(ctx, name)
	if err != nil {
		return podUsage{}, err
	}
	u := podUsage{at: s.At}
	for _, a := range s.Apps {
		u.apps = append(u.apps, appUsage{app: a.Name, cpu: a.CPUNSec, memory: a.MemoryBytes})
	}
	return u, nil
}

// execCommand returns the command that runs argv in app of pod name as
// "unitrun pod exec" runs it (podrun.Runner.Exec): in the app's cgroup,
// namespaces and identity, with the stdin it is given. The app must be
// running: else the error names what is missing, as NotFound (no such
// pod or app) or InvalidInput (not running).
func (e *engine) execCommand(ctx context.Context, name, app string, argv []string) (*exec.Cmd, error) {
	if err := e.checkRunning(name, app); err != nil {
		return nil, err
	}
	args := e.r.ExecArgv(e.r.Manager, name, app, argv)
	return exec.CommandContext(ctx, args[0], args[1:]...), nil
}

// checkRunning returns nil if app of pod name is running, else why not,
// as NotFound (no such pod or app) or InvalidInput (not running).
func (e *engine) checkRunning(name, app string) error {
	err := e.r.CheckExec(name, app)
	var noPod *podrun.NoPodError
	var noApp *podrun.NoAppError
	var notRunning *podrun.NotRunningError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &noPod):
		return errdefs.NotFound(err.Error())
	case errors.As(err, &noApp):
		return errdefs.NotFoundf("container %q not found", app)
	case errors.As(err, &notRunning):
		return errdefs.InvalidInputf("container %q is not running (it is %s)", app, notRunning.State)
	}
	return err
}

// followLog copies to w what app of pod name writes from now on, until
// ctx ends or the app's run has ended.
func (e *engine) followLog(ctx context.Context, name, app string, w io.Writer) error {
	logs, err := pod.OpenLogs(e.r.StateDir, name, []string{app}, pod.LogOptions{Follow: true, Since: time.Now()})
	if err != nil {
		return err
	}
	defer logs.Close()
	return logs.Copy(ctx, w, func() bool { return e.r.CheckExec(name, app) != nil })
}
