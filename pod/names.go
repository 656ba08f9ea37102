package pod

import (
	"fmt"
	"strings"

	"github.com/unitrun/unitrun/internal/lazyregexp"
	"github.com/unitrun/unitrun/unit"
)

// namePattern is the rule for pod and app names. At most 29 characters keep
// the longest unit name of a pod, unitrun-pod-P-A-reaper.service with every
// '-' of P and A escaped as \x2d, within systemd's 255.
const namePattern = `^[a-z0-9][a-z0-9-]{0,28}$`

var nameRE = lazyregexp.New(namePattern)

// reservedApp is the one app name whose unit would be the pod's shutdown
// service.
const reservedApp = "shutdown"

// checkName reports whether name is a valid pod or app name.
func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("must match %s", namePattern)
	}
	return nil
}

// unitPrefix starts the name of every unit of every pod.
const UnitPrefix = "unitrun-pod-"

// component is name as it appears inside a unit name.
func component(name string) string { return unit.Escape(name) }

// SliceUnit is the name of the slice that holds every service of pod.
func SliceUnit(pod string) string { return UnitPrefix + component(pod) + ".slice" }

// TargetUnit is the name of pod's target, which wants every app.
func TargetUnit(pod string) string { return UnitPrefix + component(pod) + ".target" }

// AppUnit is the name of the service that runs app of pod.
func AppUnit(pod, app string) string {
	return UnitPrefix + component(pod) + "-" + component(app) + ".service"
}

// reaperUnit is the name of the service that marks app of pod finished.
func reaperUnit(pod, app string) string {
	return UnitPrefix + component(pod) + "-" + component(app) + "-reaper.service"
}

// ShutdownUnit is the name of the service that ends pod: once it has run
// and stopped, the graph of a pod that is not isolated is over.
func ShutdownUnit(pod string) string {
	return UnitPrefix + component(pod) + "-shutdown.service"
}

// probeUnit is the name of the service that runs the health probe of app of
// pod.
func probeUnit(pod, app string) string {
	return UnitPrefix + component(pod) + "-" + component(app) + "-probe.service"
}

// ContainerUnit is the name of the service on the runner's manager that
// runs isolated pod's own systemd.
func ContainerUnit(pod string) string { return UnitPrefix + component(pod) + ".service" }

// PodUnitPrefix starts the name of every unit of pod.
func PodUnitPrefix(pod string) string { return UnitPrefix + component(pod) }

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
