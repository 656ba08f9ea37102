package pod

import "slices"

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
)

// depKinds is the order in which a unit file lists its dependencies.
var depKinds = []DepKind{Requires, BindsTo, Wants, After, Conflicts, Before}

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
// (for AppRole, ReaperRole and ProbeRole), the slice it runs in ("" for the slice and
// the target) and every dependency it declares.
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
// each app its service, unless it is an init app its reaper, and if it has
// a probe its probe service. See the
// package documentation for what each unit does.
func Nodes(m *Manifest) []Node {
	p := m.Name
	slice := SliceUnit(p)
	stopAtShutdown := []Dep{{Conflicts, shutdownTarget}, {Before, shutdownTarget}}
	var stopOnExit []Dep
	for _, k := range []DepKind{Conflicts, Before} {
		for _, t := range []string{shutdownTarget, exitTarget, haltTarget, poweroffTarget} {
			stopOnExit = append(stopOnExit, Dep{k, t})
		}
	}

	target := Node{Name: TargetUnit(p), Role: TargetRole}
	for _, a := range m.Apps {
		target.Deps = append(target.Deps, Dep{Wants, AppUnit(p, a.Name)})
	}
	for _, a := range m.Apps {
		target.Deps = append(target.Deps, Dep{After, AppUnit(p, a.Name)})
	}
	target.Deps = append(target.Deps, stopAtShutdown...)

	nodes := []Node{
		{Name: slice, Role: SliceRole, Deps: slices.Clone(stopAtShutdown)},
		target,
		{Name: shutdownUnit(p), Role: ShutdownRole, Slice: slice, Deps: slices.Clone(stopOnExit)},
	}
	var inits []string
	for _, a := range m.Apps {
		if a.Init {
			inits = append(inits, AppUnit(p, a.Name))
		}
	}
	previousInit := ""
	for _, a := range m.Apps {
		name := AppUnit(p, a.Name)
		app := Node{Name: name, Role: AppRole, App: a.Name, Slice: slice}
		if a.Init {
			if previousInit != "" {
				app.Deps = append(app.Deps, Dep{Requires, previousInit}, Dep{After, previousInit})
			}
			previousInit = name
			app.Deps = append(app.Deps, stopAtShutdown...)
			nodes = append(nodes, app)
			continue
		}
		reaper := reaperUnit(p, a.Name)
		for _, i := range inits {
			app.Deps = append(app.Deps, Dep{Requires, i})
		}
		app.Deps = append(app.Deps, Dep{Wants, reaper})
		if a.Probe != nil {
			app.Deps = append(app.Deps, Dep{Wants, probeUnit(p, a.Name)})
		}
		app.Deps = append(app.Deps, Dep{After, reaper})
		for _, i := range inits {
			app.Deps = append(app.Deps, Dep{After, i})
		}
		app.Deps = append(app.Deps, stopAtShutdown...)
		nodes = append(nodes, app, Node{
			Name:  reaper,
			Role:  ReaperRole,
			App:   a.Name,
			Slice: slice,
			Deps:  append([]Dep{{Wants, shutdownUnit(p)}, {After, shutdownUnit(p)}}, stopOnExit...),
		})
		if a.Probe != nil {
			nodes = append(nodes, Node{
				Name:  probeUnit(p, a.Name),
				Role:  ProbeRole,
				App:   a.Name,
				Slice: slice,
				Deps:  append([]Dep{{BindsTo, name}, {After, name}}, stopAtShutdown...),
			})
		}
	}
	return nodes
}
