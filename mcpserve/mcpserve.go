// Package mcpserve serves ensembles to MCP clients (ensemble mcp serve):
// each ensemble file of a folder is a tool named after the ensemble, whose
// argument "input" is the run's input (the file's own when absent) and
// whose result is the run's result JSON, as ensemble run --output json
// prints it; or, for a file that names its output agent (output:), that
// agent's output when the run succeeds (output.go). A call is one run, assembled as every run is (package
// session): scripts run for real, LLM agents call their models, the MCP
// servers the file names start for the run; ask agents cannot ask (the
// client has the terminal), and a run that does not complete is an error
// result.
package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/runners"
	"github.com/ensemble-run/ensemble/session"
)

// Options tune New.
type Options struct {
	// Profiles are model profiles files (--profiles); LookupEnv reads the
	// environment (nil: os.LookupEnv).
	Profiles  []string
	LookupEnv func(string) (string, bool)
	// Responses runs each ensemble that has a responses.yaml next to it
	// with those injected responses: its LLM agents without an entry fail
	// instead of calling their model.
	Responses bool
	// Skipped is told of every ensemble file that is not served, and why
	// (it does not load, or another has its name); nil: nobody is.
	Skipped func(path string, why error)
}

// DuplicateError is an ensemble not served: another, served, has its name.
type DuplicateError struct{ Name, First string }

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("the ensemble %q of %s has that name", e.Name, e.First)
}

// served is one ensemble served as a tool.
type served struct {
	e         *ensemble.Ensemble
	responses string // the responses file, with Options.Responses
}

// New loads the ensembles under dir (ensemble.FindFiles) and returns the
// MCP server whose tools run them. Two ensembles with one name keep the
// first (in path order). A folder with nothing to serve is an error.
func New(dir string, o Options) (*mcp.Server, error) {
	list, err := find(dir, o)
	if err != nil {
		return nil, err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "ensemble", Version: "1"}, nil)
	for _, s := range list {
		desc := s.e.Description
		if desc == "" {
			desc = "Runs the ensemble " + s.e.Name + "."
		}
		desc += returns(s.e)
		inputDesc := "the run's input"
		if s.e.Input != "" {
			inputDesc += "; default: " + s.e.Input
		}
		server.AddTool(&mcp.Tool{
			Name:        s.e.Name,
			Description: desc,
			InputSchema: map[string]any{"type": "object", "additionalProperties": false,
				"properties": map[string]any{"input": map[string]any{"type": "string", "description": inputDesc}}},
			OutputSchema: outputSchema(s.e),
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.run(ctx, o, req)
		})
	}
	return server, nil
}

// find loads every ensemble file under dir.
func find(dir string, o Options) ([]*served, error) {
	paths, err := ensemble.FindFiles(dir)
	if err != nil {
		return nil, err
	}
	skip := func(path string, why error) {
		if o.Skipped != nil {
			o.Skipped(path, why)
		}
	}
	var list []*served
	names := map[string]string{}
	for _, path := range paths {
		e, err := session.Load(path, nil, session.LoadOptions{Profiles: o.Profiles, LookupEnv: o.LookupEnv})
		if err != nil {
			skip(path, err)
			continue
		}
		if first, dup := names[e.Name]; dup {
			skip(path, &DuplicateError{Name: e.Name, First: first})
			continue
		}
		names[e.Name] = path
		s := &served{e: e}
		resp := filepath.Join(filepath.Dir(path), "responses.yaml")
		if info, err := os.Stat(resp); o.Responses && err == nil && info.Mode().IsRegular() {
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

// run runs the ensemble for a tool call, as ensemble run --no-input does.
func (s *served) run(ctx context.Context, o Options, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Input *string `json:"input"`
	}
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return errorResult("invalid arguments: " + err.Error()), nil
		}
	}
	input := s.e.Input
	if args.Input != nil {
		input = *args.Input // an explicit empty input stays empty
	}
	opts := session.Options{LookupEnv: o.LookupEnv, NoInput: true}
	if s.responses != "" {
		resp, err := runners.LoadResponsesFor(s.responses, s.e)
		if err != nil {
			return errorResult(err.Error()), nil
		}
		opts.Responses, opts.ResponsesFile = resp, s.responses
	}
	sess, err := session.Open(ctx, s.e, opts)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	defer sess.Close()
	r, err := sess.StartExact(input, session.RunOptions{})
	if err != nil {
		return errorResult(err.Error()), nil
	}
	res, _ := r.Run(ctx)
	if s.e.Output != "" && res.ExitCode() == 0 {
		return outputResult(s.e, res, sess.Secrets().String)
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(sess.Secrets().Writer(&buf)); err != nil {
		return nil, err
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: buf.String()}}}
	out.IsError = res.ExitCode() != 0
	return out, nil
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
