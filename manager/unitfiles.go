package manager

import "context"

// EnableUnitFiles enables unit files (their [Install] sections), in the
// runtime configuration (until reboot) or the persistent one, as systemctl
// enable does.
func (c *Conn) EnableUnitFiles(ctx context.Context, files []string, runtime bool) error {
	var carries bool
	var changes []struct{ Type, Path, Source string }
	return c.call(ctx, "EnableUnitFiles", []any{&carries, &changes}, files, runtime, true)
}

// DisableUnitFiles undoes EnableUnitFiles.
func (c *Conn) DisableUnitFiles(ctx context.Context, files []string, runtime bool) error {
	var changes []struct{ Type, Path, Source string }
	return c.call(ctx, "DisableUnitFiles", []any{&changes}, files, runtime)
}

// UnitFileState returns the enablement state of a unit file: enabled,
// enabled-runtime, disabled, static, ... as systemctl is-enabled says.
func (c *Conn) UnitFileState(ctx context.Context, name string) (string, error) {
	var state string
	err := c.call(ctx, "GetUnitFileState", []any{&state}, name)
	return state, err
}
