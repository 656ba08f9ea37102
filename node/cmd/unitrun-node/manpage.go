//go:build unitrun_man

package main

import (
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/internal/manpage"
)

func init() {
	addManCommand = func(root *cobra.Command) {
		root.CompletionOptions.DisableDefaultCmd = true // the shipped unitrun-node has none
		root.AddCommand(manpage.Command(root, "8"))
	}
}
