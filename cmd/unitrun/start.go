package main

import (
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/job"
)

func newStartCmd(g *globals) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "start [flags] UNIT",
		Short: "Start an existing unit and wait for its job (and, for a oneshot or simple service, its run)",
		Long: `Start UNIT and wait for its start job. For a service of Type oneshot,
simple, exec or idle, wait for the run to end and exit with its status as
"unitrun run" does; for other units, exit 0 once the job is done. A job
that fails exits 125.

While it waits, unitrun shows what the run logs to the journal (the entries
of the run's invocation ID, its stdout and stderr among them), one line per
entry: entries of priority warning or more severe on stderr, the others on
stdout (the journal does not tell a service's stdout from its stderr; a
line's priority is its "<N>" prefix, else the unit's SyslogLevel=, info).
No line of an earlier run of the unit is shown. With --json they all go to
stderr; -q shows neither them nor the summary line.`,
		Example: `  unitrun start pivot.service
  unitrun start --json os-update.service`,
		Args: unitArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			mgr, err := g.open(ctx)
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			defer mgr.Close()
			u := job.Unit(mgr, args[0])
			showOutput(cmd, u, asJSON, quiet)
			st, err := u.Start(ctx)
			return report(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], st, err, asJSON, quiet)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one result object on stdout (the unit's output then goes to stderr)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print neither the unit's output nor a summary line")
	return cmd
}

// showOutput sends what the run of u logs to the journal to cmd's stdout
// and stderr; with --json, all of it to stderr; with -q, nowhere.
func showOutput(cmd *cobra.Command, u *job.UnitCmd, asJSON, quiet bool) {
	if quiet {
		return
	}
	u.Stdout, u.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
	if asJSON {
		u.Stdout = u.Stderr
	}
}
