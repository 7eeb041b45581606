package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newVersionCmd is `ensemble version`, which prints what --version prints.
func newVersionCmd(io *stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version this binary was built from (as --version)",
		Args:  io.noArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(io.out, "%s version %s\n", c.Root().Name(), c.Root().Version)
			return err
		},
	}
}
