package inject

import (
	"context"
	"strings"

	"github.com/unitrun/unitrun/manager"
)

// execProps are the service properties whose commands a service runs.
var execProps = []string{"ExecCondition", "ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost"}

// InUse returns the paths that the services loaded in mgr run (the first
// word of each of their commands, ExecStart= as ExecStopPost= and the
// others of execProps: a pod's exit hook and its shutdown service's
// unitrun run at a stop): the files that GC must keep.
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
		for _, prop := range execProps {
			cmds, _ := props[prop].Value().([][]any)
			for _, c := range cmds {
				if len(c) > 0 {
					if p, ok := c[0].(string); ok {
						inUse[p] = true
					}
				}
			}
		}
	}
	return inUse, nil
}
