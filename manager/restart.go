package manager

import (
	"context"

	"github.com/godbus/dbus/v5"
)

// RestartUnit restarts a unit (stops it if it runs, then starts it) and
// returns its job. The manager propagates the restart to the units that are
// bound to it or require it.
func (c *Conn) RestartUnit(ctx context.Context, name, mode string) (dbus.ObjectPath, error) {
	var job dbus.ObjectPath
	err := c.call(ctx, "RestartUnit", []any{&job}, name, mode)
	return job, err
}
