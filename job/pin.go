package job

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// PinName returns the name of the pin of the service (see Cmd.Pin): the
// timer of the same name, which systemd makes trigger that service.
func PinName(service string) string {
	return strings.TrimSuffix(service, ".service") + ".timer"
}

// pinUnit returns the properties that make a service pinned: the Wants= of
// its pin, which the service's start job then starts too, and the pin, to
// create beside it.
func pinUnit(service string) (unit.Property, manager.Aux) {
	pin := PinName(service)
	wants := unit.Property{Name: "Wants", Value: dbus.MakeVariant([]string{pin})}
	return wants, manager.Aux{Name: pin, Properties: []unit.Property{
		{Name: "Description", Value: dbus.MakeVariant("unitrun: keeps " + service + " loaded until its outcome is read")},
		// A timer that never elapses (its next elapse is infinity): it
		// stays active ("waiting") and never starts the service, and
		// unlike a path unit it takes no inotify instance of the
		// manager's, whose number is bounded (128 by default).
		{Name: "TimersMonotonic", Value: dbus.MakeVariant([]struct {
			Base  string
			Value uint64
		}{{"OnActiveSec", math.MaxUint64}})},
		// Collected once stopped even if it failed (to start), so that no
		// failed pin stays loaded, holding the service.
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
	}}
}

// pinnedBy returns the service's pin if the state, read from the Unit
// interface, shows the service wants it, else "".
func (s state) pinnedBy(service string) string {
	wants, _ := s["Wants"].Value().([]string)
	if pin := PinName(service); slices.Contains(wants, pin) {
		return pin
	}
	return ""
}

// unpin stops the run's pin, if it has one, and waits for the stop job
// (on a watch of the pin's own), so that systemd may
// collect the unit, and the name may be used again, once it returns. A
// stop call lost with the connection (the manager re-executing) is made
// again, until ctx ends; a pin already gone is no error.
func (r *run) unpin(ctx context.Context) {
	if r.pin == "" {
		return
	}
	w := r.mgr.WatchProps(r.pin) // its JobRemoved alone
	defer w.Close()
	for ctx.Err() == nil {
		job, err := r.mgr.StopUnit(ctx, r.pin, "replace")
		var reply dbus.Error
		switch {
		case err == nil:
			w.WaitJob(ctx, job, nil)
			return
		case errors.As(err, &reply):
			return // systemd's own answer: the pin is gone
		}
		time.Sleep(releaseRetry)
	}
}
