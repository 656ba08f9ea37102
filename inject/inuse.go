package inject

import (
	"context"
	"strings"

	"github.com/unitrun/unitrun/manager"
)

// InUse returns the paths that the services loaded in mgr run (the first
// word of each of their ExecStart= commands): the files that GC must keep.
// A service whose properties cannot be read, such as one unloaded
// meanwhile, is passed over.
func InUse(ctx context.Context, mgr *manager.Conn) (map[string]bool, error) {
	names, err := mgr.ListUnitNames(ctx, "")
	if err != nil {
		return nil, err
	}
	inUse := make(map[string]bool)
	for _, name := range names {
		if !strings.HasSuffix(name, ".service") {
			continue
		}
		props, err := mgr.Properties(ctx, name, manager.ServiceIface)
		if err != nil {
			continue
		}
		cmds, _ := props["ExecStart"].Value().([][]any)
		for _, c := range cmds {
			if len(c) > 0 {
				if p, ok := c[0].(string); ok {
					inUse[p] = true
				}
			}
		}
	}
	return inUse, nil
}
