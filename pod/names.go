package pod

import (
	"errors"
	"fmt"
	"strings"

	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

// maxUnitName is the longest unit name systemd takes.
const maxUnitName = 255

// reservedApp is the one app name whose unit would be the pod's shutdown
// service.
const reservedApp = "shutdown"

// checkPodName reports whether name is a valid pod name.
func checkPodName(name string) error {
	if !record.IsPodName(name) {
		return errors.New(record.PodNameRule)
	}
	return nil
}

// checkAppName reports whether app is a valid name for an app of pod: it
// matches the pattern and, if pod is a valid pod name, the longest unit
// name of the app fits systemd's limit. It does not refuse the reserved
// name, which is the manifest's rule.
func checkAppName(pod, app string) error {
	if !record.IsAppName(app) {
		return errors.New(record.AppNameRule)
	}
	if u := reaperService(pod, app); checkPodName(pod) == nil && len(u) > maxUnitName {
		return fmt.Errorf("makes the unit name %s %d characters long with pod name %s, more than systemd's %d: use fewer '-' (each is 4 characters in a unit name) or a shorter name", u, len(u), pod, maxUnitName)
	}
	return nil
}

// CheckNames reports whether pod is a valid pod name and each of apps a
// valid name for one of its apps.
func CheckNames(pod string, apps ...string) error {
	if err := checkPodName(pod); err != nil {
		return fmt.Errorf("name %q: %v", pod, err)
	}
	for _, a := range apps {
		if err := checkAppName(pod, a); err != nil {
			return fmt.Errorf("app name %q: %v", a, err)
		}
	}
	return nil
}

// CheckAppName reports whether app may name an app of pod in a manifest: a valid name, not the reserved one. Its error is
// the rule, without the name.
func CheckAppName(pod, app string) error {
	if err := checkAppName(pod, app); err != nil {
		return err
	}
	if app == reservedApp {
		return errors.New("reserved for the pod's shutdown service")
	}
	return nil
}

// component is name as it appears inside a unit name.
func component(name string) string { return unit.Escape(name) }

// SliceUnit is the name of the slice that holds every service of pod.
func SliceUnit(pod string) string { return record.UnitPrefix + component(pod) + ".slice" }

// TargetUnit is the name of pod's target, which wants every app.
func TargetUnit(pod string) string { return record.UnitPrefix + component(pod) + ".target" }

// AppUnit is the name of the service that runs app of pod.
func AppUnit(pod, app string) string {
	return record.UnitPrefix + component(pod) + "-" + component(app) + ".service"
}

// reaperUnit is the name of the unit that marks app a of pod finished: a
// service for an app that may restart, whose ExecStop= has work to do,
// else a target, which runs no process.
func reaperUnit(pod string, a *App) string {
	if a.RestartPolicy == record.Never {
		return reaperName(pod, a.Name) + ".target"
	}
	return reaperService(pod, a.Name)
}

// reaperService is the name of the reaper service of app of pod, the
// longest unit name an app makes.
func reaperService(pod, app string) string { return reaperName(pod, app) + ".service" }

// reaperName is the name of the reaper of app of pod, without its suffix.
func reaperName(pod, app string) string {
	return record.UnitPrefix + component(pod) + "-" + component(app) + "-reaper"
}

// ShutdownUnit is the name of the service that ends pod: once it has run
// and stopped, the graph of a pod that is not isolated is over.
func ShutdownUnit(pod string) string {
	return record.UnitPrefix + component(pod) + "-shutdown.service"
}

// probeUnit is the name of the service that runs the health probe of app of
// pod.
func probeUnit(pod, app string) string {
	return record.UnitPrefix + component(pod) + "-" + component(app) + "-probe.service"
}

// ContainerUnit is the name of the service on the runner's manager that
// runs isolated pod's own systemd.
func ContainerUnit(pod string) string { return record.UnitPrefix + component(pod) + ".service" }

// PodUnitPrefix starts the name of every unit of pod.
func PodUnitPrefix(pod string) string { return record.UnitPrefix + component(pod) }

// IsPodUnit reports whether u is the name of a unit of pod: its slice, target
// or container service, or a unit named after one of its apps. Pod and app
// names are escaped in unit names ('-' is \x2d), so the '-' after the pod's
// name is no other pod's.
func IsPodUnit(u, pod string) bool {
	base := PodUnitPrefix(pod)
	switch u {
	case SliceUnit(pod), TargetUnit(pod), ContainerUnit(pod):
		return true
	}
	return strings.HasPrefix(u, base+"-")
}
