// Package manpage writes the man pages of a cobra command tree with
// cobra's doc generator. Only builds tagged unitrun_man link it (the
// release's, see dist/release), so that the shipped binaries carry no
// man page generator and pay for none of its package inits.
package manpage

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/unitrun/unitrun/internal/buildinfo"
)

// Command returns the hidden command "man DIR", which writes the man pages
// of root and of each of its available subcommands, in section, to DIR,
// named as man looks them up (unitrun-run.1). Their date is
// $SOURCE_DATE_EPOCH's, as cobra takes it, so that a release rebuilt from
// the same commit has the same pages.
func Command(root *cobra.Command, section string) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages of " + root.Name() + " to DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root.DisableAutoGenTag = true
			return doc.GenManTree(root, &doc.GenManHeader{
				Section: section,
				Source:  fmt.Sprintf("%s %s", root.Name(), buildinfo.Read().Version),
				Manual:  root.Name() + " manual",
			}, args[0])
		},
	}
}
