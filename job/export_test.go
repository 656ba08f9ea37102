package job

import (
	"context"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// StartTransient is the call that creates a run's unit.
type StartTransient = func(*manager.Conn, context.Context, string, string, []unit.Property, ...manager.Aux) (dbus.ObjectPath, error)

// SetStartTransient makes f the call that creates a run's unit, until
// the function it returns is called; f gets the call it replaces.
func SetStartTransient(f func(real StartTransient) StartTransient) (restore func()) {
	old := startTransient
	startTransient = f(old)
	return func() { startTransient = old }
}
