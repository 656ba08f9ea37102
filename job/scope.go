package job

import (
	"context"
	"fmt"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// StartScope creates a transient scope, name (".scope"), on mgr that holds
// process pid, for the command line args, as "systemd-run --scope" makes
// one, and returns once its start job is done. props are set after the
// scope's Description (one derived from args, as a Cmd's), so they
// override it. systemd collects the scope when its last process is gone.
// A taken name is ErrUnitExists; a start job that is not done is a
// *JobError.
func StartScope(ctx context.Context, mgr *manager.Conn, name string, args []string, pid int, props []unit.Property) error {
	all := append([]unit.Property{
		{Name: "Description", Value: dbus.MakeVariant(describe(args))},
		{Name: "PIDs", Value: dbus.MakeVariant([]uint32{uint32(pid)})},
	}, props...)
	w := mgr.WatchProps(name) // its JobRemoved alone
	defer w.Close()
	job, err := mgr.StartTransientUnit(ctx, name, "fail", all)
	if manager.IsUnitExists(err) {
		return fmt.Errorf("%s: %w", name, ErrUnitExists)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	result, err := w.WaitJob(ctx, job, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if result != "done" {
		return &JobError{Unit: name, Result: result}
	}
	return nil
}
