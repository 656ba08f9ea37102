package podrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/internal/flock"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// A Runner creates, runs and removes pods on one manager. Each pod's units
// go to the manager's runtime unit directory; its state (manifest, status
// files, logs) to StateDir/pods/NAME.
type Runner struct {
	Mgr *manager.Conn
	// StateDir is the absolute directory that holds the pods' state.
	StateDir string
	// Binary is the absolute path of the unitrun binary the units call back.
	Binary string
	// Manager is the --manager value the units' hooks reach Mgr with.
	Manager string
	// ImageDir is the image store that apps' images are pulled into and
	// leased in; "" is image.DefaultDir.
	ImageDir string
	// Pull gets the image of app a of a pod being created into store s
	// under the app's pull policy ([pod.App.PullPolicy]), once per image
	// and policy of the pod; a Runner without one creates no pod that
	// names an image. Package podrun does not pull itself, so that
	// unitrun does not link go-containerregistry: unitrun runs
	// unitrun-pull (and shows the pull's progress), unitrun-node calls
	// image/registry's Pull with a Pod's imagePullSecrets and reports a
	// failed pull as the kubelet does. A *image.RefError, or an error
	// wrapping image.ErrNotFound (policy Never) or image.ErrUnknown,
	// refuses the manifest (an *InvalidError); any other fails the
	// creation (a *PullError).
	Pull func(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error)
}

// pollInterval is how often Start, Wait and Stop look at a pod's status files.
const pollInterval = 50 * time.Millisecond

// Create prepares the pod that manifest (the text of a manifest) describes:
// it validates it, writes the pod's state (a copy of the manifest, a
// Pending pod.json, empty logs) and its unit files, and reloads the
// manager. It starts nothing, and refuses a name that an existing pod has.
// An isolated pod's graph goes to its own unit path, and its container
// service (see [pod.ContainerUnit]) to the manager. A manifest that is
// invalid, or that asks for what this host lacks (a user, a group, a
// directory), is an *[InvalidError].
func (r *Runner) Create(ctx context.Context, manifest []byte) (*pod.Manifest, error) {
	return r.CreateWith(ctx, manifest, "")
}

// CreateWith is [Runner.Create] with isolation iso, if it is not "",
// instead of the manifest's; the choice is saved with the pod's state.
func (r *Runner) CreateWith(ctx context.Context, manifest []byte, iso pod.Isolation) (*pod.Manifest, error) {
	p, err := r.Resolve(ctx, manifest, iso)
	if err != nil {
		return nil, err
	}
	return r.CreateResolved(ctx, p, false)
}

// A Resolved pod is a manifest parsed for this host, its images pulled
// and applied ([Runner.Resolve]): what a creation checks before it
// creates anything. The store of its images stays held
// ([Runner.holdImages]), so that no image prune takes them, until it is
// created ([Runner.CreateResolved]) or Release is called.
type Resolved struct {
	m        *pod.Manifest
	manifest []byte
	release  func()
}

// Release lets image prunes take p's images again, if p is not created.
// It may be called more than once.
func (p *Resolved) Release() {
	p.release()
	p.release = func() {}
}

// Resolve parses manifest for this host with isolation iso and pulls
// and applies its images, creating nothing: what CreateWith checks, with
// its errors (an *InvalidError, a *PullError), so that the pods of a
// file can all be checked before any is created.
func (r *Runner) Resolve(ctx context.Context, manifest []byte, iso pod.Isolation) (*Resolved, error) {
	m, release, err := r.resolve(ctx, manifest, iso)
	if err != nil {
		return nil, err
	}
	return &Resolved{m: m, manifest: manifest, release: release}, nil
}

// CreateResolved creates pod p, as CreateWith does, or with replace as
// Replace does, and releases it.
func (r *Runner) CreateResolved(ctx context.Context, p *Resolved, replace bool) (*pod.Manifest, error) {
	defer p.Release()
	if replace {
		if _, err := os.Lstat(record.Dir(r.StateDir, p.m.Name)); err == nil {
			if err := r.Remove(ctx, p.m.Name, true); err != nil {
				return nil, fmt.Errorf("replace pod %s: %w", p.m.Name, err)
			}
		}
	}
	return r.create(ctx, p.m, p.manifest)
}

// Install is for a pod created later, at boot (pod install's): it
// parses manifest for this host with isolation iso and pulls and applies
// its images, what CreateWith checks before it creates anything, with its
// errors (an *InvalidError, a *PullError); then it runs install(m), which
// installs the pod, and once that succeeds, takes the pod's leases on its
// images ([ImageHolder]) as its creation does, so that no image rm or
// prune takes them before the pod is created. The store stays held from
// before the pulls until the leases are taken. The pod's removal
// ([Runner.Remove]), or [Runner.ReleaseImages] where it was never
// created, drops them. It needs no Mgr, and creates nothing of the pod.
func (r *Runner) Install(ctx context.Context, manifest []byte, iso pod.Isolation, install func(*pod.Manifest) error) (*pod.Manifest, error) {
	m, release, err := r.resolve(ctx, manifest, iso)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := install(m); err != nil {
		return nil, err
	}
	if err := takeLeases(m); err != nil {
		return nil, fmt.Errorf("pod %s is installed, but its images could not be leased (an image prune may remove them before it starts; install it again): %w", m.Name, err)
	}
	return m, nil
}

// resolve is Resolve, the store of the manifest's images held
// ([Runner.holdImages]) until release is called: the pod's creation
// releases it once it has leased them, so that no image prune takes them
// in between.
func (r *Runner) resolve(ctx context.Context, manifest []byte, iso pod.Isolation) (m *pod.Manifest, release func(), err error) {
	m, err = ParseForHost(manifest, iso)
	if err != nil {
		return nil, nil, &InvalidError{Err: err}
	}
	s, release, err := r.holdImages(ctx, m)
	if err != nil {
		return nil, nil, err
	}
	if err := r.resolveImages(ctx, s, m); err != nil {
		release()
		return nil, nil, err
	}
	return m, release, nil
}

// create creates pod m, which resolve made of manifest.
func (r *Runner) create(ctx context.Context, m *pod.Manifest, manifest []byte) (*pod.Manifest, error) {
	dir := record.Dir(r.StateDir, m.Name)
	unitDir, err := r.Mgr.RuntimeUnitDir(ctx)
	if err != nil {
		return nil, err
	}
	files, err := r.unitFiles(m, unitDir)
	if err != nil {
		return nil, err
	}
	if err := r.checkSeen(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	// Root's alone: the pod's manifest holds its apps' env, its logs
	// their output; its hooks and the CLI run as root.
	if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		return nil, &ExistsError{Name: m.Name, StateDir: r.StateDir}
	} else if err != nil {
		return nil, err
	}
	// The units are the manager's: a pod of the same name in another
	// state directory would have them rewritten under it.
	if taken, err := podFiles(unitDir, m.Name); err != nil || len(taken) > 0 {
		os.Remove(dir)
		if err == nil {
			err = fmt.Errorf("pod %s already exists on this manager, with another state directory (its units are in %s, %s among them): pods of one manager need names of their own", m.Name, unitDir, taken[0])
		}
		return nil, err
	}
	if err := r.prepare(ctx, m, manifest, files); err != nil {
		r.removeFiles(ctx, m.Name, unitDir)
		return nil, err
	}
	return m, nil
}

// ExistsError is the error of creating a pod whose name a pod of the
// state directory has.
type ExistsError struct{ Name, StateDir string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("pod %s already exists in state dir %s", e.Name, e.StateDir)
}

// Replace is [Runner.CreateWith], but once the manifest is valid and its
// images are pulled, the pod of its name in the state directory, if
// there is one, is stopped and removed first ([Runner.Remove] with
// force), as podman's --replace does: a manifest or an image that
// cannot be had leaves that pod as it was. The store stays held from
// before the pulls until the new pod has leased its images, so that the
// old pod's removal, which releases its leases, lets no image prune take
// them in between.
func (r *Runner) Replace(ctx context.Context, manifest []byte, iso pod.Isolation) (*pod.Manifest, error) {
	p, err := r.Resolve(ctx, manifest, iso)
	if err != nil {
		return nil, err
	}
	return r.CreateResolved(ctx, p, true)
}

// checkSeen returns an error if the manager does not see the state
// directory (its nearest existing ancestor) as the runner does: the
// pod's hooks, which the manager runs, could then record nothing, and
// every app would fail to open its log.
func (r *Runner) checkSeen(ctx context.Context) error {
	dir := r.StateDir
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	if r.Mgr.Sees(ctx, dir) {
		return nil
	}
	return fmt.Errorf("state dir %s: the manager does not see it as unitrun does: the manager has a mount namespace of its own (the embedded manager has), without the file system that holds %s, mounted after the manager started, so the pod's hooks could record nothing; use a state dir the manager sees, or restart the manager (unitrun manager stop) so that it sees the mount", r.StateDir, dir)
}

func (r *Runner) prepare(ctx context.Context, m *pod.Manifest, manifest []byte, files []placedFile) error {
	if err := pod.WriteState(r.StateDir, m, manifest); err != nil {
		return err
	}
	if err := r.leaseImages(m); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Replace(f.path, f.data, 0o644); err != nil {
			return err
		}
	}
	return r.loadUnits(ctx, files)
}

// loadUnits makes the manager see the pod's new unit files. A manager
// loads a unit that it does not hold in memory from its unit path when
// the unit is first needed, once it has seen a unit directory change
// (systemd 246 and later), so the pod's start loads every one; a
// daemon-reload, which rereads every unit of the manager
// (`systemctl daemon-reload` took 12 ms with 16 units loaded on the test
// manager and 43 ms with 316; a system manager also reruns its
// generators), is needed only when one of the pod's units is in memory
// already, such as a failed unit of that name or one that another unit
// refers to.
func (r *Runner) loadUnits(ctx context.Context, files []placedFile) error {
	// The manager rebuilds its listing of the unit path when a unit
	// directory's mtime changes. File times come from a coarse clock, so
	// a rebuild between two of the writes could leave the later files out
	// with the mtime unchanged; an mtime set to the precise time after
	// the last write makes the next load rebuild it.
	now := time.Now()
	names := make([]string, len(files))
	dirs := make(map[string]bool)
	for i, f := range files {
		names[i] = filepath.Base(f.path)
		dirs[filepath.Dir(f.path)] = true
	}
	for dir := range dirs {
		if err := os.Chtimes(dir, now, now); err != nil {
			return err
		}
	}
	loaded, err := r.loaded(ctx, names)
	if err != nil || len(loaded) == 0 {
		return err
	}
	return r.Mgr.Reload(ctx)
}

// loaded returns those of the pod units names that the manager holds in
// memory, from one listing of every pod's units.
func (r *Runner) loaded(ctx context.Context, names []string) ([]string, error) {
	all, err := r.Mgr.ListUnitNames(ctx, record.UnitPrefix)
	if err != nil {
		return nil, err
	}
	ours := make(map[string]bool, len(names))
	for _, n := range names {
		ours[n] = true
	}
	var loaded []string
	for _, u := range all {
		if ours[u] {
			loaded = append(loaded, u)
		}
	}
	return loaded, nil
}

// Start starts a created pod, under policy if it is not "" instead of the
// manifest's exit policy (the choice is saved with the pod's state), and
// returns once the start job of the pod's target is done and the run of
// every app has begun, as its record says ([Runner.awaitRuns]), so that a
// stop right after Start stops runs that started. If the pod is ending by
// then (it ended before or while it started), Start waits for its end and
// returns an *EndedError if it failed. Only a Pending pod starts.
func (r *Runner) Start(ctx context.Context, name string, policy record.ExitPolicy) error {
	if policy != "" {
		if err := policy.Check(); err != nil {
			return fmt.Errorf("exit policy %w", err)
		}
	}
	if err := r.exists(name); err != nil {
		return err
	}
	m, ps, err := pod.LoadState(r.StateDir, name)
	if err != nil {
		return err
	}
	if ps.Phase != pod.PodPending {
		return fmt.Errorf("pod %s is %s: only a Pending pod starts", name, ps.Phase)
	}
	if policy != "" && policy != ps.ExitPolicy {
		ps.ExitPolicy, m.ExitPolicy = policy, policy
		if err := record.WritePolicy(r.StateDir, m.Policy()); err != nil {
			return err
		}
	}
	ps.Phase, ps.StartedAt = pod.PodRunning, time.Now()
	if err := pod.WritePod(r.StateDir, ps); err != nil {
		return err
	}
	err = r.runJob(ctx, entryUnit(m), r.startUnit)
	if err == nil {
		err = r.awaitRuns(ctx, m)
	}
	if !record.Stopping(r.StateDir, name) {
		return err
	}
	// The pod has run and is ending already: its end stopped the target,
	// which cancels a start job not yet done, or its systemd failed to
	// boot, which fails the container service's start job once its
	// ExecStopPost= has recorded the end (systemd ends a start job when
	// the unit is inactive or failed, after its ExecStopPost=). A start
	// job done is then no sign that the pod runs.
	return r.endedStart(ctx, name)
}

// awaitRuns waits until the run of every app of pod m, whose start job is
// done, has begun: its exec hook has recorded it (or its end since). A
// Type=exec unit has started once its exec hook runs, before the hook
// records the run, and a stop before that record fails the app ("ended
// before its command ran"), so a stop right after Start would fail the
// apps whose hooks were still on their way. It stops waiting once the pod
// is ending, and for an app whose first run ended with no record of it
// (for an isolated pod, whose apps' units its own systemd holds: once its
// container service's process has ended).
func (r *Runner) awaitRuns(ctx context.Context, m *pod.Manifest) error {
	for !record.Stopping(r.StateDir, m.Name) {
		s, err := pod.ReadPod(r.StateDir, m.Name)
		if err != nil {
			return err
		}
		var units []string
		for _, a := range s.Apps {
			if a.State == record.AppWaiting {
				units = append(units, pod.AppUnit(m.Name, a.Name))
			}
		}
		if isolated(m) && len(units) > 0 {
			units = []string{pod.ContainerUnit(m.Name)}
		}
		running := false
		for _, u := range units {
			if running, err = r.firstRunOn(ctx, u); err != nil || running {
				break
			}
		}
		if err != nil || !running {
			return err
		}
		if !sleepUntil(ctx, time.Now().Add(pollInterval)) {
			return ctx.Err()
		}
	}
	return nil
}

// firstRunOn reports whether service u's main process runs, in the run
// that its start job started (systemd has not restarted it since); a
// manager that re-executes meanwhile leaves the question to the next poll.
func (r *Runner) firstRunOn(ctx context.Context, u string) (bool, error) {
	props, err := r.Mgr.Properties(ctx, u, manager.ServiceIface, "MainPID", "NRestarts")
	if manager.IsConnLost(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	pid, _ := props["MainPID"].Value().(uint32)
	restarts, _ := props["NRestarts"].Value().(uint32)
	return pid != 0 && restarts == 0, nil
}

// endedStart waits until pod name, which is ending, has ended and returns
// an *EndedError if it failed.
func (r *Runner) endedStart(ctx context.Context, name string) error {
	s, err := r.Wait(ctx, name)
	if err != nil {
		return err
	}
	if s.Phase == pod.PodFailed {
		return &EndedError{Status: s}
	}
	return nil
}

// An InvalidError is the error of a create whose manifest is invalid or
// asks for what this host lacks. Err says why, one line per field.
type InvalidError struct {
	Err error
}

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// An EndedError is the error of a start whose pod ended Failed before the
// start was over, such as an isolated pod whose systemd could not boot.
type EndedError struct {
	Status pod.PodStatus
}

func (e *EndedError) Error() string {
	code := "no exit code"
	if e.Status.ExitCode != nil {
		code = "exit code " + strconv.Itoa(*e.Status.ExitCode)
	}
	return fmt.Sprintf("pod %s ended %s (%s) while it started: see pod status and pod logs", e.Status.Name, e.Status.Phase, code)
}

// Wait waits until pod name has ended and returns its status (see
// [Runner.Ended]).
func (r *Runner) Wait(ctx context.Context, name string) (pod.PodStatus, error) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		s, ended, err := r.Ended(ctx, name)
		if err != nil || ended {
			return s, err
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-t.C:
		}
	}
}

// Ended returns the status of pod name and whether it has ended: its
// records say so or, for a running pod that is not isolated whose graph is
// over although its records could not say so, systemd does (the status is
// then [Runner.Status]'s). It reads one unit property at most, so that a
// poll of a pod of many apps stays cheap.
func (r *Runner) Ended(ctx context.Context, name string) (pod.PodStatus, bool, error) {
	s, err := pod.ReadPod(r.StateDir, name)
	if err != nil || s.Phase != pod.PodRunning || s.Isolation == pod.Namespaces {
		return s, s.Ended(), err
	}
	over, _, err := r.graphOver(ctx, name)
	if manager.IsConnLost(err) {
		// The manager re-executes or reloads: not an end, and the next
		// poll asks again.
		return s, false, nil
	}
	if err != nil || !over {
		return s, false, err
	}
	s, err = r.Status(ctx, name)
	if manager.IsConnLost(err) {
		return s, false, nil
	}
	return s, s.Ended(), err
}

// Stop stops pod name gracefully: every app gets its stop signal and its
// stopTimeout, and every exit is recorded. If timeout is positive and the
// stop takes longer, every app still stopping is killed (SIGKILL), and
// its exit recorded. An app in its postStart hook is stopped once the hook
// has ended, so that its preStop hook runs, or once its stop timeout or
// the timeout has passed ([Runner.stopAfterPostStarts]): the timeout
// counts that wait. Stop returns once the pod's units are stopped and its
// status is recorded. A ctx
// that ends, even before Stop is called, ends the wait, not the stop:
// the stop jobs are asked of systemd all the same.
func (r *Runner) Stop(ctx context.Context, name string, timeout time.Duration) (pod.PodStatus, error) {
	if err := r.exists(name); err != nil {
		return pod.PodStatus{}, err
	}
	m, ps, err := pod.LoadState(r.StateDir, name)
	if err != nil {
		return pod.PodStatus{}, err
	}
	if ps.Phase == pod.PodPending {
		return ps, fmt.Errorf("pod %s has not started", name)
	}
	// The mark tells the hooks that the stop was asked for; a mark that
	// cannot be written (the state directory is full) does not keep the
	// pod from stopping: the hooks, which cannot write either, then see
	// the stop job (stoppedByJob), and Wait reads the end from systemd.
	markErr := record.MarkStopping(r.StateDir, name)
	stopCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		stopCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	r.stopAfterPostStarts(stopCtx, m)
	err = r.stopUnits(stopCtx, unitsToStop(m))
	if err != nil && ctx.Err() == nil && stopCtx.Err() != nil {
		r.killApps(ctx, m, ps.Apps)
		err = r.stopUnits(ctx, unitsToStop(m))
	}
	if err != nil {
		return pod.PodStatus{}, errors.Join(err, markErr)
	}
	if err := r.endUnstarted(ctx, name); err != nil {
		return pod.PodStatus{}, err
	}
	return r.Wait(ctx, name)
}

// endUnstarted ends pod name, which is stopped, as its shutdown service
// would have ([Shutdown]) if that service never started: a stop that came
// while the start jobs of the pod's units still waited (for the slice's,
// say, right after the pod's start) canceled them all, the shutdown
// service's too, so no hook ran, and the pod would stay Running for good.
// An isolated pod's container service records its end itself.
func (r *Runner) endUnstarted(ctx context.Context, name string) error {
	props, err := r.Mgr.Properties(ctx, pod.ShutdownUnit(name), manager.UnitIface)
	if err != nil && !manager.IsNoSuchUnit(err) {
		return err
	}
	if left, _ := props["InactiveExitTimestampMonotonic"].Value().(uint64); err == nil && (left != 0 || !ended(props)) {
		return nil
	}
	unlock, err := record.Lock(r.StateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	m, ps, err := pod.LoadState(r.StateDir, name)
	if err != nil || isolated(m) || ps.Ended() {
		return err
	}
	return errors.Join(unmountRoots(r.StateDir, m), endRecorded(ctx, r.Mgr, r.StateDir, m, ps))
}

// killApps sends SIGKILL to every process of each app that is still
// stopping, but not to one that is already recording its exit
// (ExecStopPost= runs in the app's cgroup, in state stop-post and after).
func (r *Runner) killApps(ctx context.Context, m *pod.Manifest, apps []record.AppStatus) {
	name := m.Name
	if isolated(m) {
		killIsolatedApps(r.StateDir, name, apps)
		return
	}
	for _, a := range apps {
		u := pod.AppUnit(name, a.Name)
		props, err := r.Mgr.Properties(ctx, u, manager.UnitIface)
		if err != nil {
			continue
		}
		switch props["SubState"].Value() {
		case "stop-post", "final-sigterm", "final-sigkill", "dead", "failed":
			continue
		}
		// An app that ended meanwhile has nothing left to kill.
		r.Mgr.KillUnit(ctx, u, "all", int32(syscall.SIGKILL))
	}
}

// unitsToStop are the units whose stop stops pod m: its slice, and with it
// every service of the pod, then its target; or an isolated pod's
// container service.
func unitsToStop(m *pod.Manifest) []string {
	if isolated(m) {
		return []string{pod.ContainerUnit(m.Name)}
	}
	return []string{pod.SliceUnit(m.Name), pod.TargetUnit(m.Name)}
}

// stopUnits stops units in turn, waiting for each job. The stops reach
// systemd whatever ctx: once ctx has ended (a second Ctrl-C of pod run),
// each job is still asked for, and only the waiting ends.
func (r *Runner) stopUnits(ctx context.Context, units []string) error {
	stop := func(ctx context.Context, u, mode string) (dbus.ObjectPath, error) {
		return r.Mgr.StopUnit(context.WithoutCancel(ctx), u, mode)
	}
	for i, u := range units {
		// A unit that is not loaded (an isolated pod's service,
		// collected once its systemd exited) has nothing to stop.
		err := r.runJob(ctx, u, stop)
		if err == nil || manager.IsNoSuchUnit(err) {
			continue
		}
		if ctx.Err() != nil {
			for _, u := range units[i+1:] {
				stop(ctx, u, "replace")
			}
		}
		return err
	}
	return nil
}

// runJob runs a job for u with enqueue, as [manager.Conn.RunJob] does.
func (r *Runner) runJob(ctx context.Context, u string, enqueue func(context.Context, string, string) (dbus.ObjectPath, error)) error {
	return r.Mgr.RunJob(ctx, u, enqueue)
}

// Remove deletes pod name: its units, its state and its logs. It refuses a
// pod that has started and not ended, unless force, which stops it first.
// Forced, it reads nothing of the pod's state: it stops the pod's units and
// deletes what the pod left by the names every pod's units and state have,
// so that a pod whose state is broken or oversized is removed too. Once no
// other pod is loaded, it also stops the parent slices that the pods'
// slice names imply (unitrun-pod.slice, unitrun.slice), so that no unit of
// unitrun's pods remains. It refuses, forced too, to delete the state
// while something is mounted under it in the manager's mount namespace
// (an image root of a host pod whose shutdown hook did not run).
func (r *Runner) Remove(ctx context.Context, name string, force bool) error {
	if pod.CheckNames(name) != nil {
		return &NoPodError{Name: name, StateDir: r.StateDir}
	}
	unitDir, err := r.Mgr.RuntimeUnitDir(ctx)
	if err != nil {
		return err
	}
	if force {
		if err := r.left(ctx, name, unitDir); err != nil {
			return err
		}
	} else if err := r.removable(ctx, name); err != nil {
		return err
	}
	// The hooks that the stop runs read the mark; a removal goes on
	// without it, whatever the state directory holds: a full one, say.
	record.MarkStopping(r.StateDir, name)
	if err := r.stopUnits(ctx, []string{pod.ContainerUnit(name), pod.SliceUnit(name), pod.TargetUnit(name)}); err != nil {
		return err
	}
	if err := r.checkNoMounts(ctx, name); err != nil {
		return err
	}
	if err := r.removeFiles(ctx, name, unitDir); err != nil {
		return err
	}
	return r.stopParents(ctx, pod.SliceUnit(name))
}

// removable returns nil if pod name may be removed without force: it
// exists, its pod.json can be read and it is not running, by its records
// or, where they could not be written, by systemd ([Runner.Status]).
func (r *Runner) removable(ctx context.Context, name string) error {
	ps, err := r.Status(ctx, name)
	if np := (*NoPodError)(nil); errors.As(err, &np) {
		return err
	}
	if err != nil {
		return &NotRemovableError{Name: name, Err: err}
	}
	if ps.Phase == pod.PodRunning {
		return &NotRemovableError{Name: name}
	}
	return nil
}

// A NotRemovableError is [Runner.Remove]'s refusal, without force, of a
// pod that is running (Err nil) or whose state cannot be read (Err).
type NotRemovableError struct {
	Name string
	Err  error
}

func (e *NotRemovableError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("pod %s is running: stop it first, or remove it with force", e.Name)
	}
	return fmt.Sprintf("pod %s: %v (remove it with force whatever its state)", e.Name, e.Err)
}

func (e *NotRemovableError) Unwrap() error { return e.Err }

// left returns a *NoPodError if pod name left nothing: no state directory,
// no unit file and no unit loaded.
func (r *Runner) left(ctx context.Context, name, unitDir string) error {
	if _, err := os.Lstat(record.Dir(r.StateDir, name)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	files, err := podFiles(unitDir, name)
	if err != nil || len(files) > 0 {
		return err
	}
	loaded, err := r.loadedOf(ctx, name)
	if err != nil || len(loaded) > 0 {
		return err
	}
	return &NoPodError{Name: name, StateDir: r.StateDir}
}

// podFiles lists the unit files of pod name in unitDir.
func podFiles(unitDir, name string) ([]string, error) {
	entries, err := os.ReadDir(unitDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var files []string
	for _, e := range entries {
		if pod.IsPodUnit(e.Name(), name) {
			files = append(files, e.Name())
		}
	}
	return files, err
}

// loadedOf lists the units of pod name that the manager holds in memory.
func (r *Runner) loadedOf(ctx context.Context, name string) ([]string, error) {
	all, err := r.Mgr.ListUnitNames(ctx, pod.PodUnitPrefix(name))
	if err != nil {
		return nil, err
	}
	var units []string
	for _, u := range all {
		if pod.IsPodUnit(u, name) {
			units = append(units, u)
		}
	}
	return units, nil
}

// removeFiles deletes pod name's unit files and state and resets the pod's
// units still loaded (failed ones), so that the manager unloads every one:
// it collects the inactive units that no other unit refers to. No
// daemon-reload is needed for that (it would reread every unit of the
// manager).
func (r *Runner) removeFiles(ctx context.Context, name, unitDir string) error {
	files, err := podFiles(unitDir, name)
	errs := []error{err}
	for _, f := range files {
		if err := os.Remove(filepath.Join(unitDir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, r.ReleaseImages(name), os.RemoveAll(record.Dir(r.StateDir, name)))
	// One listing instead of a reset call for each of the 2N+3 units, most
	// of them collected already.
	loaded, err := r.loadedOf(ctx, name)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, u := range loaded {
		if err := r.Mgr.ResetFailedUnit(ctx, u); err != nil && !manager.IsNoSuchUnit(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Parent slices of every pod's slice, innermost first.
var parentSlices = []string{"unitrun-pod.slice", "unitrun.slice"}

// parentsLockFile, in the manager's runtime unit directory (a hidden
// file, which systemd does not take for a unit), is the lock that orders
// the start jobs of pods ([Runner.startUnit]) against a removal's look at
// what the parent slices hold and its stop of them ([Runner.stopParents]),
// across every process that runs pods on the manager: a pod whose start
// was queued between the look, which did not see the pod, and the stop
// would have its start jobs canceled by the stop.
const parentsLockFile = ".unitrun-parents.lock"

// lockParents takes the lock of the parent slices (parentsLockFile) and
// returns its release.
func (r *Runner) lockParents(ctx context.Context) (func(), error) {
	dir, err := r.Mgr.RuntimeUnitDir(ctx)
	if err != nil {
		return nil, err
	}
	return flock.Lock(ctx, filepath.Join(dir, parentsLockFile))
}

// startUnit queues the start job of u, the unit that starts a pod, as
// [manager.Conn.StartUnit] does, holding the lock of the parent slices
// ([Runner.lockParents]) while it does.
func (r *Runner) startUnit(ctx context.Context, u, mode string) (dbus.ObjectPath, error) {
	unlock, err := r.lockParents(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	return r.Mgr.StartUnit(ctx, u, mode)
}

// stopParents stops the parent slices that nothing else holds
// ([Runner.idleParents]), innermost first, holding the lock of the parent
// slices from the look until the stops are done ([Runner.lockParents]).
func (r *Runner) stopParents(ctx context.Context, removed string) error {
	unlock, err := r.lockParents(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	idle, err := r.idleParents(ctx, removed)
	if err != nil {
		return err
	}
	return r.stopUnits(ctx, idle)
}

// idleParents returns the parent slices that are loaded, innermost first,
// up to the first that holds something other than the parent before it
// and removed, the slice of the pod just removed (stopped, it may stay
// loaded a moment before systemd collects it): no other pod's slice, and
// no unit that something else put there.
func (r *Runner) idleParents(ctx context.Context, removed string) ([]string, error) {
	loaded, err := r.Mgr.ListUnitNames(ctx, "unitrun")
	if err != nil {
		return nil, err
	}
	var idle []string
	for i, s := range parentSlices {
		if !slices.Contains(loaded, s) {
			continue
		}
		props, err := r.Mgr.Properties(ctx, s, manager.UnitIface)
		if err != nil {
			return nil, err
		}
		children, _ := props["SliceOf"].Value().([]string)
		for _, c := range children {
			if c != removed && (i == 0 || c != parentSlices[i-1]) {
				return idle, nil
			}
		}
		idle = append(idle, s)
	}
	return idle, nil
}

// Status returns the status of pod name, from its status files. For a
// running pod that is not isolated, an app whose record says it has not
// ended but whose unit has, and the pod itself once its graph is over,
// are given the end that systemd holds, marked FromSystemd: the hook that
// should have recorded it could not write.
func (r *Runner) Status(ctx context.Context, name string) (pod.PodStatus, error) {
	if err := r.exists(name); err != nil {
		return pod.PodStatus{}, err
	}
	s, err := pod.ReadPod(r.StateDir, name)
	if err != nil || s.Phase != pod.PodRunning {
		return s, err
	}
	m, err := pod.LoadSpec(r.StateDir, name)
	if err != nil {
		return s, err
	}
	return r.completeFromSystemd(ctx, m, s)
}

// Manifest returns the manifest pod name was created from.
func (r *Runner) Manifest(name string) (*pod.Manifest, error) {
	if err := r.exists(name); err != nil {
		return nil, err
	}
	m, _, err := pod.LoadState(r.StateDir, name)
	return m, err
}

// A NoPodError is the error for a pod that does not exist.
type NoPodError struct {
	Name     string
	StateDir string
}

func (e *NoPodError) Error() string {
	name := e.Name
	if pod.CheckNames(name) != nil {
		name = strconv.Quote(name)
	}
	return fmt.Sprintf("no pod named %s in state dir %s", name, e.StateDir)
}

// exists returns a *NoPodError unless pod name has a state directory.
func (r *Runner) exists(name string) error {
	if pod.CheckNames(name) != nil {
		return &NoPodError{Name: name, StateDir: r.StateDir}
	}
	if _, err := os.Lstat(record.Dir(r.StateDir, name)); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &NoPodError{Name: name, StateDir: r.StateDir}
	}
	return nil
}
