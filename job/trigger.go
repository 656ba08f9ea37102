package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

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
	return startOnly(ctx, mgr, name, append([]unit.Property{
		{Name: "Description", Value: dbus.MakeVariant(describe(args))},
		{Name: "PIDs", Value: dbus.MakeVariant([]uint32{uint32(pid)})},
	}, props...))
}

// StartTimer creates a transient timer with the properties timer (its
// OnActiveSec=, OnCalendar=, ...) and, beside it, the service that runs
// the command each time the timer elapses, as "systemd-run --on-active=..."
// makes them, and returns the timer's name once its start job is done.
// The service (Name, or Prefix and random hex, and ".service"; its Unit)
// runs on its own, as Detached describes but kept loaded as failed after
// a failed run (CollectMode=inactive), with Env, Dir, Description and
// Properties; the timer has its name with ".timer" and goes once it has
// elapsed for the last time (RemainAfterElapse=no). The command line goes
// over D-Bus, every '$' doubled, so it must be valid UTF-8, and a
// daemon-reload before a run gives it to the command with systemd's
// escapes in it where a word held '$' or ';' (see Cmd.Start). Stdin,
// Stdout, Stderr, Timeout, BindToCaller, Retry, Pin and the hooks are not
// used. A taken name (of the timer or the service) is ErrUnitExists, and
// the name returned is then that of the unit that holds it.
func (c *Cmd) StartTimer(timer []unit.Property) (string, error) {
	if c.lookErr != nil {
		return "", c.lookErr
	}
	if err := c.check(); err != nil {
		return "", err
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	for i, a := range c.Args {
		if !utf8.ValidString(a) {
			return "", fmt.Errorf("job: Args[%d]: not valid UTF-8, which a timer's command line must be", i)
		}
	}
	name := c.unitName()
	props, err := c.properties(true, false)
	if err != nil {
		return "", err
	}
	// A failed run stays loaded as failed, to be read and inspected, as
	// systemd-run leaves it (CollectMode=inactive).
	props = append(append(props, Detached()...), unit.Property{Name: "CollectMode", Value: dbus.MakeVariant("inactive")})
	props = append(props, c.Properties...)
	if len(c.env) > 0 {
		props = append(props, unit.Property{Name: "Environment", Value: dbus.MakeVariant(c.env)})
	}
	timerName := strings.TrimSuffix(name, ".service") + ".timer"
	timer = append([]unit.Property{
		{Name: "Description", Value: dbus.MakeVariant(c.description())},
		{Name: "RemainAfterElapse", Value: dbus.MakeVariant(false)},
	}, timer...)
	if err := startOnly(c.ctx, c.Manager, timerName, timer, manager.Aux{Name: name, Properties: props}); err != nil {
		if errors.Is(err, ErrUnitExists) {
			// The manager's answer names neither: the timer, if loaded,
			// else the service holds the name.
			taken := name
			if p, perr := c.Manager.Properties(c.ctx, timerName, manager.UnitIface, "LoadState"); perr == nil && p["LoadState"].Value() != "not-found" {
				taken = timerName
			}
			return taken, fmt.Errorf("%s: %w", taken, ErrUnitExists)
		}
		return "", err
	}
	c.Unit = name
	return timerName, nil
}

// startOnly creates the transient unit name (and the aux units beside it)
// and waits for its start job, as a unit that unitrun does not follow
// further.
func startOnly(ctx context.Context, mgr *manager.Conn, name string, props []unit.Property, aux ...manager.Aux) error {
	w := mgr.WatchProps(name) // its JobRemoved alone
	defer w.Close()
	job, err := mgr.StartTransientUnit(ctx, name, "fail", props, aux...)
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
