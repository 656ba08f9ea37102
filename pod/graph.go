package pod

import (
	"slices"

	"github.com/unitrun/unitrun/pod/record"
)

// A DepKind is a dependency directive of a unit's [Unit] section.
type DepKind string

// The dependency directives the graph uses.
const (
	Requires  DepKind = "Requires"
	BindsTo   DepKind = "BindsTo"
	Wants     DepKind = "Wants"
	After     DepKind = "After"
	Before    DepKind = "Before"
	Conflicts DepKind = "Conflicts"
	PartOf    DepKind = "PartOf"
)

// depKinds is the order in which a unit file lists its dependencies.
var depKinds = []DepKind{Requires, BindsTo, PartOf, Wants, After, Conflicts, Before}

// A Dep is one dependency of a unit on another unit.
type Dep struct {
	Kind DepKind
	Unit string
}

// A Role is what a unit does in a pod's graph.
type Role string

// Roles of units; the package documentation describes each.
const (
	SliceRole    Role = "slice"
	TargetRole   Role = "target"
	AppRole      Role = "app"
	ReaperRole   Role = "reaper"
	ShutdownRole Role = "shutdown"
	ProbeRole    Role = "probe"
)

// A Node is one unit of a pod's graph: its name and role, the app it serves
// (for AppRole, ReaperRole and ProbeRole), the slice it runs in ("" for the slice,
// the targets and the reaper target of an app that never restarts) and every
// dependency it declares.
type Node struct {
	Name  string
	Role  Role
	App   string
	Slice string
	Deps  []Dep
}

// Special units of the managers a pod runs under (systemd.special(7)).
const (
	shutdownTarget = "shutdown.target"
	exitTarget     = "exit.target"
	haltTarget     = "halt.target"
	poweroffTarget = "poweroff.target"
)

// Nodes returns the units of m's graph and their dependencies, in the order
// Graph renders them: the slice, the target, the shutdown service, then for
// each app its service, unless it is an init app that is not retried its
// reaper, and if it has a probe its probe service. See the
// package documentation for what each unit does.
func Nodes(m *Manifest) []Node {
	p := m.Name
	slice := SliceUnit(p)
	var apps []string
	for _, a := range m.Apps {
		apps = append(apps, AppUnit(p, a.Name))
	}
	target := Node{Name: TargetUnit(p), Role: TargetRole, Deps: deps(nil, Wants, After, apps...)}
	target.Deps = append(target.Deps, stopAtShutdown...)
	nodes := []Node{
		{Name: slice, Role: SliceRole, Deps: slices.Clone(stopAtShutdown)},
		target,
		{Name: ShutdownUnit(p), Role: ShutdownRole, Slice: slice, Deps: stopOnExit()},
	}
	// An init app or a sidecar starts after the init apps and sidecars
	// listed before it (inits, sidecars), every other app after all of them.
	var inits, sidecars, allInits, allSidecars []string
	// A unit requires the init apps it starts after but the retried ones
	// ([Manifest.RetriedInitsBefore]), whose success its await hook waits for.
	retried := map[string]bool{}
	required := func(inits []string) []string {
		return slices.DeleteFunc(slices.Clone(inits), func(u string) bool { return retried[u] })
	}
	for _, a := range m.Apps {
		if a.Init {
			allInits = append(allInits, AppUnit(p, a.Name))
			retried[AppUnit(p, a.Name)] = a.Retried()
		} else if a.Sidecar {
			allSidecars = append(allSidecars, AppUnit(p, a.Name))
		}
	}
	for _, a := range m.Apps {
		name := AppUnit(p, a.Name)
		switch {
		case a.Init:
			app := Node{Name: name, Role: AppRole, App: a.Name, Slice: slice}
			// Each init app runs once the one before it has succeeded.
			if n := len(inits); n > 0 {
				app.Deps = deps(app.Deps, Requires, "", required(inits[n-1:])...)
				app.Deps = deps(app.Deps, After, "", inits[n-1])
			}
			app.Deps = deps(app.Deps, Wants, After, sidecars...)
			app.Deps = append(app.Deps, stopAtShutdown...)
			if !a.Retried() {
				// It has no reaper: at a stop of the pod, ordered
				// After= the shutdown service as a reaper is, it
				// stops, and its ExecStopPost= records its exit,
				// before the shutdown service computes the pod's.
				app.Deps = deps(app.Deps, After, "", ShutdownUnit(p))
				nodes = append(nodes, app)
			} else {
				// A stop between two runs, where no hook of the app
				// runs, ends its last restart in its reaper.
				app.Deps = deps(app.Deps, Wants, After, reaperUnit(p, &a))
				nodes = append(nodes, app, reaperNode(p, &a))
			}
			inits = append(inits, name)
		case a.Sidecar:
			nodes = append(nodes, serviceNodes(p, &a, inits, required(inits), sidecars)...)
			sidecars = append(sidecars, name)
		default:
			nodes = append(nodes, serviceNodes(p, &a, allInits, required(allInits), allSidecars)...)
		}
	}
	return nodes
}

// stopAtShutdown are the dependencies that stop a unit at the manager's
// shutdown.
var stopAtShutdown = []Dep{{Conflicts, shutdownTarget}, {Before, shutdownTarget}}

// stopOnExit are the dependencies that stop a unit, after the apps, at
// every way a manager ends.
func stopOnExit() []Dep {
	var list []Dep
	for _, k := range []DepKind{Conflicts, Before} {
		for _, t := range []string{shutdownTarget, exitTarget, haltTarget, poweroffTarget} {
			list = append(list, Dep{k, t})
		}
	}
	return list
}

// serviceNodes returns the units of a, an app of pod p that is not an
// init app: its service, which starts after the init apps inits (and
// requires those of them in requires) and the sidecars sidecars, its
// reaper and, if it has probes, its probe service.
func serviceNodes(p string, a *App, inits, requires, sidecars []string) []Node {
	slice, name, reaper := SliceUnit(p), AppUnit(p, a.Name), reaperUnit(p, a)
	wants := []string{reaper}
	if a.HasProbes() {
		wants = append(wants, probeUnit(p, a.Name))
	}
	app := Node{Name: name, Role: AppRole, App: a.Name, Slice: slice}
	app.Deps = deps(app.Deps, Requires, "", requires...)
	app.Deps = deps(app.Deps, Wants, "", slices.Concat(wants, sidecars)...)
	app.Deps = deps(app.Deps, After, "", reaper)
	app.Deps = deps(app.Deps, After, "", slices.Concat(inits, sidecars)...)
	app.Deps = append(app.Deps, stopAtShutdown...)
	nodes := []Node{app, reaperNode(p, a)}
	if a.HasProbes() {
		nodes = append(nodes, Node{
			Name:  probeUnit(p, a.Name),
			Role:  ProbeRole,
			App:   a.Name,
			Slice: slice,
			Deps:  append(deps(nil, BindsTo, After, name), stopAtShutdown...),
		})
	}
	return nodes
}

// reaperNode returns the reaper of a, an app of pod p. The reaper of a
// sidecar or an init app does not keep the shutdown service needed: the
// pod ends with its other apps, and its end stops the sidecars; an init
// app that succeeded stays active until then. An init app's reaper is
// still After= the shutdown service, so that at the pod's end it has
// recorded the app's last exit before the shutdown service computes the
// pod's.
func reaperNode(p string, a *App) Node {
	var d []Dep
	switch {
	case a.Init:
		d = deps(nil, After, "", ShutdownUnit(p))
	case !a.Sidecar:
		d = deps(nil, Wants, After, ShutdownUnit(p))
	}
	r := Node{Name: reaperUnit(p, a), Role: ReaperRole, App: a.Name, Deps: append(d, stopOnExit()...)}
	if a.RestartPolicy != record.Never {
		r.Slice = SliceUnit(p)
	} else {
		// A target is in no slice: PartOf= puts its stop in the same
		// job as the slice's, so that a stop of the pod stops the app,
		// then the reaper, then the shutdown service, in that order, and
		// a reaper whose app never started stops with the pod.
		r.Deps = append(r.Deps, Dep{PartOf, SliceUnit(p)})
	}
	return r
}

// deps appends to list a dependency of kind on each of units, then, if
// also is not "", one of kind also on each.
func deps(list []Dep, kind, also DepKind, units ...string) []Dep {
	for _, u := range units {
		list = append(list, Dep{kind, u})
	}
	if also != "" {
		list = deps(list, also, "", units...)
	}
	return list
}

// The hooks of a pod's graph: what its units run, as "unitrun pod
// unit-hook NAME --state-dir DIR [--manager SPEC] POD [APP]"
// (record.HookCommand). Each runs only in its own unit ([HookUnit]). Those
// of an app's service that the small hook binary runs are package record's:
// record.HookStart, record.HookLogCopy, record.HookReapApp, record.HookEnd.
const (
	HookAwait           = "await"            // an app's ExecStartPre=: waits for the sidecar or init apps before it
	HookMountRoot       = "mount-root"       // an image app's ExecStartPre= in a host pod: mounts its root
	HookPostStart       = "post-start"       // an app's ExecStartPost=: its postStart hook
	HookPreStop         = "pre-stop"         // an app's ExecStop=: its preStop hook
	HookReap            = "reap"             // a reaper's ExecStop=
	HookProbe           = "probe"            // a probe service's ExecStart=
	HookShutdown        = "shutdown"         // the shutdown service's ExecStop=
	HookContainer       = "container"        // an isolated pod's container service: its own systemd
	HookContainerExited = "container-exited" // the container service's ExecStopPost=
)

// HookUnit returns the unit that runs hook for pod (and app, for the
// hooks of an app): the app's service for the hooks of an app (HookEnd
// runs in the app's whose exit ended the pod), its probe service, its
// reaper service, the pod's shutdown service or its container service;
// false for a name that is no hook.
func HookUnit(hook, pod, app string) (string, bool) {
	switch hook {
	case record.HookStart, record.HookLogCopy, HookAwait, HookMountRoot, HookPostStart, HookPreStop, record.HookReapApp, record.HookEnd:
		return AppUnit(pod, app), true
	case HookProbe:
		return probeUnit(pod, app), true
	case HookReap:
		return reaperService(pod, app), true
	case HookShutdown:
		return ShutdownUnit(pod), true
	case HookContainer, HookContainerExited:
		return ContainerUnit(pod), true
	}
	return "", false
}
