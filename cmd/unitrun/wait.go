package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/job"
)

func newWaitCmd(g *globals) *cobra.Command {
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "wait [flags] UNIT",
		Short: "Wait for the run of a service in progress and exit with its status",
		Long: `Wait for the run of service UNIT that is in progress, through the runs
its Restart= setting makes, until it is inactive or failed for good, and
exit with the last run's status as "unitrun run" does (the same exit
statuses, summary line and --json object). Its output is shown as
"unitrun start" shows it, from the run's first line.

A service that is not running (inactive, failed, or active with its run
ended) is not waited for: unitrun says so on stderr and exits 0.

wait only watches: Ctrl-C or SIGTERM ends the wait, never the unit, which
goes on running; unitrun then exits 143, as for an interrupted run.`,
		Example: `  unitrun wait pivot.service
  unitrun wait --json -q os-update.service`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			mgr, err := g.open(ctx)
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			defer mgr.Close()
			u := job.Unit(mgr, args[0])
			showOutput(cmd, u, asJSON, quiet)
			st, err := u.Wait(ctx)
			if errors.Is(err, job.ErrNotRunning) {
				fmt.Fprintf(cmd.ErrOrStderr(), "unitrun: %v; nothing to wait for\n", err)
				if asJSON {
					json.NewEncoder(cmd.OutOrStdout()).Encode(newResult(args[0], nil, err))
				}
				return nil
			}
			return report(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], st, err, asJSON, quiet)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one result object on stdout (the unit's output then goes to stderr)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print neither the unit's output nor a summary line")
	return cmd
}
