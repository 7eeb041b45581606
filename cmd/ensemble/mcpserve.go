package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/mcpserve"
	"github.com/ensemble-run/ensemble/serve"
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
	state     string
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
Ask agents cannot ask (stdin is the client's): they fail unless answered,
or, with --state FILE, every call is a durable run saved in FILE: a question
is asked of the client (elicitation), or the run waits and the tools
ensemble_answer and ensemble_status continue it.
With --responses, an ensemble that has a responses.yaml next to it runs with
those injected responses, and its LLM agents without an entry fail instead of
calling their model, like run --responses.

At the end of stdin it reads no more, answers the calls it has read (each
runs to its end, within its limits), then exits 0; Ctrl-C and SIGTERM stop it
at once, cancelling the calls still running.

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
	cmd.Flags().StringVar(&f.state, "state", "", "keep every run in the state database `FILE`: ask agents ask the client or wait")
	return cmd
}

// serveMCP serves the ensembles of dir over t until the client leaves.
func serveMCP(ctx context.Context, io *stdio, dir string, f *mcpServeFlags, t mcp.Transport) error {
	skipped := func(path string, why error) {
		var dup *mcpserve.DuplicateError
		var sdup *serve.DuplicateError
		if errors.As(why, &dup) || errors.As(why, &sdup) {
			fmt.Fprintf(io.stderr(), "ensemble: skipping %s: %v\n", path, why)
			return
		}
		fmt.Fprintf(io.stderr(), "ensemble: skipping %s:\n%v\n", path, why)
	}
	if f.state != "" {
		srv, err := serve.New(serve.Options{Paths: []string{dir}, State: f.state, NoUI: true,
			Profiles: f.profiles, Responses: f.responses, LookupEnv: io.lookupEnv, Stderr: io.stderr(), Skipped: skipped})
		if err != nil {
			return &exitError{code: engine.ExitUsage, err: err}
		}
		srv.Recover() // runs cut short when it last stopped go on
		runs := srv.Runs()
		defer runs.Close(0)
		return mcpserve.Serve(ctx, mcpserve.NewRunsServer(runs, true), t)
	}
	server, err := mcpserve.New(dir, mcpserve.Options{Profiles: f.profiles, LookupEnv: io.lookupEnv, Responses: f.responses,
		Skipped: skipped})
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	return mcpserve.Serve(ctx, server, t)
}
