package main

import (
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
)

// newStartCmd returns the command "unitrun start".
func newStartCmd(g *globals) *cobra.Command {
	var o unitOutput
	cmd := &cobra.Command{
		Use:   "start [flags] UNIT",
		Short: "Start an existing unit and wait for its job (and, for a oneshot or simple service, its run)",
		Long: `Start UNIT and wait for its start job. A UNIT without a type suffix is a
service: "pivot" is "pivot.service", as for systemctl. For a service of
Type oneshot, simple, exec or idle, wait for the run to end (through the
restarts its Restart= makes) and exit with its last run's status as
"unitrun run" does; for other units (a notify service once it is ready,
a forking one once its first process has exited), and for a service that
is active with its run ended (RemainAfterExit=yes), which makes no run,
exit 0 once the job is done. A job that fails exits 125.

While it waits, unitrun shows what the run logs to the journal (the entries
of the run's invocation ID, its stdout and stderr among them), one line per
entry: entries of priority warning or more severe on stderr, the others on
stdout (the journal does not tell a service's stdout from its stderr; a
line's priority is its "<N>" prefix, else the unit's SyslogLevel=, info).
No line of an earlier run of the unit is shown. With --json they all go to
stderr; -q shows neither them nor the summary line.

A unit already running (active, activating or reloading, started by
someone else) is not started again, as systemctl start leaves it: unitrun
waits for that run and shows its lines from its first, as "unitrun wait"
does. Ctrl-C, SIGTERM or SIGHUP stops the unit if this start made its run;
a run it joined goes on, and unitrun says "stopped waiting for UNIT, which
goes on". Either way it exits 128+N of the signal (130 for Ctrl-C).`,
		Example: `  unitrun start pivot.service
  unitrun start --json os-update.service`,
		Args:              unitArg,
		ValidArgsFunction: g.completeUnits(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, _ := unit.Complete(args[0]) // checked by unitArg
			return o.withUnit(cmd, g, name, func(u *job.UnitCmd) error {
				st, err := u.Run(cmd.Context())
				return report(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), name, st, err, o.asJSON, o.quiet)
			})
		},
	}
	o.addFlags(cmd, "print neither the unit's output nor a summary line")
	return cmd
}

// unitOutput is how start and wait show a unit's run: their --json and -q.
type unitOutput struct{ asJSON, quiet bool }

// addFlags adds --json, and -q with quietHelp, to cmd.
func (o *unitOutput) addFlags(cmd *cobra.Command, quietHelp string) {
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one result object on stdout (the unit's output then goes to stderr)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, quietHelp)
}

// withUnit opens the manager and calls do with unit name on it, whose run
// logs to the journal are shown on cmd's stdout and stderr; with --json,
// all of them on stderr; with -q, nowhere.
func (o *unitOutput) withUnit(cmd *cobra.Command, g *globals, name string, do func(*job.UnitCmd) error) error {
	mgr, err := g.open(cmd.Context())
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer mgr.Close()
	u := job.Unit(mgr, name)
	if !o.quiet {
		u.Stdout, u.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
		if o.asJSON {
			u.Stdout = u.Stderr
		}
	}
	return do(u)
}
