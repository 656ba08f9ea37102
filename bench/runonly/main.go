// Command runonly is the prototype that bench/cli.sh times beside
// "unitrun run" and "unitrun start": "runonly CMD [ARG...]" runs CMD as
// "unitrun run -q -- CMD..." does, with every guarantee of job.Cmd (the
// caller's fds, the unit kept for this process with AddRef=yes over the
// manager's bus, Ctrl-C stops the unit, the exact exit status), and
// "runonly -unit UNIT" starts UNIT as "unitrun start -q UNIT" does
// (job.UnitCmd); the manager is chosen as unitrun chooses it
// ($UNITRUN_MANAGER; a run goes over the bus where the manager is on
// one). It has no CLI: no cobra, no flags, and only the packages that job
// and manager link, so that its process starts with a fraction of
// unitrun's package inits. Built with CGO_ENABLED=0, as releases are, it
// tells what the process start of the one binary costs a run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: runonly CMD [ARG...] | runonly -unit UNIT")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	start := len(os.Args) == 3 && os.Args[1] == "-unit"
	mgr, err := manager.Open(ctx, "", manager.Options{OverBus: !start})
	if err != nil {
		fmt.Fprintln(os.Stderr, "runonly:", err)
		os.Exit(125)
	}
	if start {
		_, err = job.Unit(mgr, os.Args[2]).Run(ctx)
	} else {
		c := job.CommandContext(ctx, mgr, os.Args[1], os.Args[2:]...)
		c.Args[0] = c.Path
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = c.Run()
	}
	mgr.Close()
	var ee *job.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Status.Signal != 0:
		os.Exit(128 + int(ee.Status.Signal))
	case errors.As(err, &ee):
		os.Exit(ee.Status.ExitCode)
	default:
		fmt.Fprintln(os.Stderr, "runonly:", err)
		os.Exit(125)
	}
}
