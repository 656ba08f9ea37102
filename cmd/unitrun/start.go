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
that fails exits 125.`,
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
			st, err := job.Start(ctx, mgr, args[0])
			return report(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], st, err, asJSON, quiet)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one result object on stdout")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print no summary line")
	return cmd
}
