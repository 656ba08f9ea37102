package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
)

// newWaitCmd returns the command "unitrun wait".
func newWaitCmd(g *globals) *cobra.Command {
	var o unitOutput
	cmd := &cobra.Command{
		Use:   "wait [flags] UNIT",
		Short: "Wait for the run of a service in progress and exit with its status",
		Long: `Wait for the run of service UNIT that is in progress, through the runs
its Restart= setting makes, until it is inactive or failed for good, and
exit with the last run's status as "unitrun run" does (the same exit
statuses, summary line and --json object). Its output is shown as
"unitrun start" shows it, from the run's first line.

A service that is not running (inactive, failed, active with its run
ended, or not loaded at all: never run, or its run ended and the unit was
collected, its outcome gone) is waited for until its next run if an
active timer triggers it (as "unitrun run --on-active" and the other
timer flags make one), and unitrun says so on stderr (unless -q); else it
is not waited for: unitrun says so on stderr (unless -q) and exits 0.
UNIT must be a service: NAME.service, or NAME, to which .service is
added as systemctl adds it; any other exits 2.

wait only watches: Ctrl-C, SIGTERM or SIGHUP ends the wait, never the unit, which
goes on running; unitrun then exits 128+N of the signal (130 for Ctrl-C),
as for an interrupted run, and --json prints the same object (unit,
exit_code 128+N, signal, error).`,
		Example: `  unitrun wait pivot.service
  unitrun wait --json -q os-update.service`,
		Args:              unitArg,
		ValidArgsFunction: g.completeUnits(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, _ := unit.Complete(args[0]) // checked by unitArg
			if !strings.HasSuffix(name, ".service") {
				return usageError(fmt.Errorf("unit %q: only a service has a run to wait for", name))
			}
			return o.withUnit(cmd, g, name, func(u *job.UnitCmd) error {
				ctx := cmd.Context()
				if !o.quiet {
					u.Awaiting = func(timer string) {
						fmt.Fprintf(cmd.ErrOrStderr(), "unitrun: %s has no run in progress; waiting for its next run, which %s starts\n", name, timer)
					}
				}
				st, err := u.Wait(ctx)
				if errors.Is(err, job.ErrNotRunning) {
					if !o.quiet {
						fmt.Fprintf(cmd.ErrOrStderr(), "unitrun: %v; nothing to wait for\n", err)
					}
					if o.asJSON {
						printLine(cmd.OutOrStdout(), newResult(name, nil, err))
					}
					return nil
				}
				// Interrupted, unitrun exits as an interrupted run or
				// start does (128+N; with --json the same object), and
				// the unit goes on (job.GoesOnError).
				return report(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), name, st, err, o.asJSON, o.quiet)
			})
		},
	}
	o.addFlags(cmd, "print neither the unit's output nor a summary line (nor that it is not running)")
	return cmd
}
