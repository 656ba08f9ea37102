package manager

import (
	"context"
	"path"
	"strings"
)

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

// ListUnitFileNames returns the names of the unit files in the manager's
// unit search path whose name has the given prefix (systemd's
// ListUnitFilesByPatterns, which reads the unit directories at each call,
// so a file written since the last reload is listed).
func (c *Conn) ListUnitFileNames(ctx context.Context, prefix string) ([]string, error) {
	var files []struct{ Path, State string }
	// The pattern is matched as ListUnitNames's is.
	if err := c.call(ctx, "ListUnitFilesByPatterns", []any{&files}, []string{}, []string{prefix + "*"}); err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if name := path.Base(f.Path); strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	return names, nil
}
