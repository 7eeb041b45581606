package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/internal/skeleton"
)

func newInitCmd(io *stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter ensemble (a script, an LLM agent, its replies, a test) to DIR",
		Long: `Writes a small working ensemble to DIR (default: the current folder):
ensemble.yaml (a script agent and an LLM agent that depends on it),
responses.yaml (the LLM agent's replies, so that no model is called),
scripts/gather.py (python3) and ensemble.feature (a test with the built-in
steps). Nothing is overwritten: when one of these files exists, init lists
them and exits 2.`,
		Args: io.args(0, 1, "at most one DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return initEnsemble(io, dir)
		},
	}
}

func initEnsemble(io *stdio, dir string) error {
	if err := skeleton.Check(dir); err != nil {
		return usageErr("init: %v", err)
	}
	created, err := skeleton.Write(dir)
	for _, p := range created {
		fmt.Fprintf(io.out, "created %s\n", p)
	}
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	ens, resp := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml")
	fmt.Fprintf(io.out, "\nTry it (no model is called; the script needs python3):\n  %[1]s run %[2]s --responses %[3]s\n  %[1]s test %[4]s\n",
		io.program(), shellQuote(ens), shellQuote(resp), shellQuote(dir))
	return nil
}
