package main

import (
	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/schema"
)

func newSchemaCmd(io *stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the ensemble file format (for editors)",
		Long: `Print the JSON Schema (draft 2020-12) of the ensemble file format.

Editors that use yaml-language-server (VS Code's YAML extension, Neovim, Helix,
...) complete keys, show their documentation and flag mistakes with it. Save it
(schema > ensemble.schema.json) and start an ensemble file with

  # yaml-language-server: $schema=./ensemble.schema.json

The schema checks the shape of a file; validate checks everything else
(references between names, conditions, script files, agents that can never run).`,
		Args: io.noArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := io.out.Write(schema.JSON)
			return err
		},
	}
}
