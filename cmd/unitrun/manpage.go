//go:build unitrun_man

package main

import (
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/internal/manpage"
)

func init() {
	addManCommand = func(root *cobra.Command) { root.AddCommand(manpage.Command(root, "1")) }
}
