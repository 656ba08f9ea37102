package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/internal/buildinfo"
)

// setVersion gives root its --version flag, which prints
// "unitrun VERSION commit COMMIT GOVERSION" and exits 0.
func setVersion(root *cobra.Command) {
	root.Version = buildinfo.Read().String()
	root.SetVersionTemplate("unitrun {{.Version}}\n")
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print unitrun's version, the commit it was built from and the Go version",
		Long: `Print unitrun's version, the commit it was built from (with "(modified)"
when the checkout had changes not committed, "unknown" when the build
recorded none) and the Go version, as "unitrun --version" does. --json
prints {"version", "commit", "modified", "go_version"}.`,
		Example: "  unitrun version\n  unitrun --version\n  unitrun version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Read()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), info)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "unitrun", info)
			return err
		},
	}
	jsonFlag(cmd, &asJSON, `print {"version", "commit", "modified", "go_version"} as JSON`)
	return cmd
}
