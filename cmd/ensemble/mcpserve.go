package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/mcpserve"
)

func newMCPCmd(io *stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve ensembles to MCP clients",
	}
	cmd.AddCommand(newMCPServeCmd(io))
	return io.group(cmd)
}

type mcpServeFlags struct {
	profiles  []string
	responses bool
}

func newMCPServeCmd(io *stdio) *cobra.Command {
	var f mcpServeFlags
	cmd := &cobra.Command{
		Use:   "serve DIR",
		Short: "Expose every ensemble in DIR as an MCP tool, over stdio",
		Long: `Serve the ensembles of DIR to an MCP client (an IDE assistant, an agent) on
stdin and stdout: each ensemble file in DIR or its subfolders is a tool named
after the ensemble, whose argument "input" is the run's input (the file's own
input when absent) and whose result is the run's result JSON, as run
--output json prints it. A run that does not complete is an error result.

Every call is one run, as run does it: scripts run for real, LLM
agents call their models, the MCP servers the file names start for the run.
Ask agents cannot ask (stdin is the client's): they fail unless answered.
With --responses, an ensemble that has a responses.yaml next to it runs with
those injected responses, and its LLM agents without an entry fail instead of
calling their model, like run --responses.

YAML files that are not ensembles (no top-level agents and name) are skipped;
a file that is not valid YAML and an ensemble that fails to load are
skipped with their errors on stderr.`,
		Args: io.args(1, 1, "one DIR of ensembles"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveMCP(cmd.Context(), io, args[0], &f, mcpserve.Transport(io.in, io.out))
		},
	}
	cmd.Flags().StringArrayVar(&f.profiles, "profiles", nil, "model profiles `FILE` for every ensemble (repeatable)")
	cmd.Flags().BoolVar(&f.responses, "responses", false, "run each ensemble with the responses.yaml next to it, when it has one")
	return cmd
}

// serveMCP serves the ensembles of dir over t until the client leaves.
func serveMCP(ctx context.Context, io *stdio, dir string, f *mcpServeFlags, t mcp.Transport) error {
	server, err := mcpserve.New(dir, mcpserve.Options{Profiles: f.profiles, LookupEnv: io.lookupEnv, Responses: f.responses,
		Skipped: func(path string, why error) {
			var dup *mcpserve.DuplicateError
			if errors.As(why, &dup) {
				fmt.Fprintf(io.stderr(), "ensemble: skipping %s: %v\n", path, why)
				return
			}
			fmt.Fprintf(io.stderr(), "ensemble: skipping %s:\n%v\n", path, why)
		}})
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	return server.Run(ctx, t)
}
