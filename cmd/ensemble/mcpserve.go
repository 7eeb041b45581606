package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/session"
)

func newMCPCmd(io *stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve ensembles to MCP clients",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newMCPServeCmd(io))
	return cmd
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
input when absent) and whose result is the run's result JSON, as ensemble run
--output json prints it. A run that does not complete is an error result.

Every call is one run, as ensemble run does it: scripts run for real, LLM
agents call their models, the MCP servers the file names start for the run.
Ask agents cannot ask (stdin is the client's): they fail unless answered.
With --responses, an ensemble that has a responses.yaml next to it runs with
those injected responses, and its LLM agents without an entry fail instead of
calling their model, like run --responses.

YAML files that are not ensembles (no top-level agents and name) are skipped;
a file that is not valid YAML and an ensemble that fails to load are
skipped with their errors on stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveMCP(cmd.Context(), io, args[0], &f, &mcp.IOTransport{
				Reader: io2ReadCloser(io.in), Writer: nopWriteCloser{io.out}})
		},
	}
	cmd.Flags().StringArrayVar(&f.profiles, "profiles", nil, "a profiles file with more model profiles (repeatable)")
	cmd.Flags().BoolVar(&f.responses, "responses", false, "run each ensemble with the responses.yaml next to it, when it has one")
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func io2ReadCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

// served is one ensemble served as a tool.
type served struct {
	e         *ensemble.Ensemble
	responses string // the responses file, with --responses
}

// serveMCP serves the ensembles of dir over t until the client leaves.
func serveMCP(ctx context.Context, io *stdio, dir string, f *mcpServeFlags, t mcp.Transport) error {
	list, err := findEnsembles(io, dir, f)
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "ensemble", Version: "1"}, nil)
	for _, s := range list {
		desc := s.e.Description
		if desc == "" {
			desc = "Runs the ensemble " + s.e.Name + "."
		}
		desc += " Returns the run's result JSON."
		inputDesc := "the run's input"
		if s.e.Input != "" {
			inputDesc += "; default: " + s.e.Input
		}
		server.AddTool(&mcp.Tool{
			Name:        s.e.Name,
			Description: desc,
			InputSchema: map[string]any{"type": "object", "additionalProperties": false,
				"properties": map[string]any{"input": map[string]any{"type": "string", "description": inputDesc}}},
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return runServed(ctx, io, s, req)
		})
	}
	return server.Run(ctx, t)
}

// findEnsembles loads every ensemble file under dir (ensemble.FindFiles).
// Those that fail to load are reported on stderr and skipped; two with one
// name keep the first (in path order).
func findEnsembles(io *stdio, dir string, f *mcpServeFlags) ([]*served, error) {
	paths, err := ensemble.FindFiles(dir)
	if err != nil {
		return nil, err
	}
	var list []*served
	names := map[string]string{}
	for _, path := range paths {
		sub := &stdio{in: io.in, out: io.out, err: io.err, getenv: io.getenv}
		e, err := loadEnsemble(sub, path, f.profiles)
		if err != nil {
			fmt.Fprintf(io.stderr(), "ensemble: skipping %s:\n%v\n", path, err)
			continue
		}
		if first, dup := names[e.Name]; dup {
			fmt.Fprintf(io.stderr(), "ensemble: skipping %s: the ensemble %q of %s has that name\n", path, e.Name, first)
			continue
		}
		names[e.Name] = path
		s := &served{e: e}
		if resp := filepath.Join(filepath.Dir(path), "responses.yaml"); f.responses && fileExists(resp) {
			s.responses = resp
		}
		list = append(list, s)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: no ensemble to serve", dir)
	}
	slices.SortFunc(list, func(a, b *served) int { return strings.Compare(a.e.Name, b.e.Name) })
	return list, nil
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// runServed runs one ensemble for a tool call, as ensemble run does.
func runServed(ctx context.Context, io *stdio, s *served, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Input *string `json:"input"`
	}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return errorResult("invalid arguments: " + err.Error()), nil
		}
	}
	e := s.e
	input := e.Input
	if args.Input != nil {
		input = *args.Input // an explicit empty input stays empty
	}
	// As ensemble run --no-input does, with the responses next to the file
	// (--responses): its LLM agents without an entry fail.
	sf := sharedFlags{responses: s.responses, noInput: true}
	opts, err := sf.sessionOptions(io, true, false)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	sess, err := session.Open(ctx, e, opts)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	defer sess.Close()
	r, err := sess.StartExact(input, session.RunOptions{})
	if err != nil {
		return errorResult(err.Error()), nil
	}
	res, _ := r.Run(ctx)
	red := sess.Secrets()
	var buf bytes.Buffer
	if err := res.WriteJSON(red.Writer(&buf)); err != nil {
		return nil, err
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: buf.String()}}}
	out.IsError = res.ExitCode() != 0
	return out, nil
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
