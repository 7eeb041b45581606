// Package mcpserve serves ensembles to MCP clients: ensemble mcp serve
// (stdio) and /mcp on ensemble serve (Streamable HTTP, stateless). Each
// ensemble file of a folder is a tool named after the ensemble, whose
// argument "input" is the run's input (the file's own when absent) and
// whose result is the run's result JSON, as ensemble run --output json
// prints it; or, for a file that names its output agent (output:), that
// agent's output when the run succeeds (output.go).
//
// Both doors share the tools and their results (tools.go); a call's run
// is an Executor's. New's runs a session per call, assembled as every run
// is (package session): ask agents cannot ask (the client has the
// terminal) nor wait. Runs (runs.go) runs it through serve's run
// machinery: the run is durable, an ask agent's question is elicited
// from the client or the run waits, for the tools ensemble_answer and
// ensemble_status (docs/serve.md#mcp).
package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds/ask"
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
// MCP server whose tools run them, each call a session of its own (no
// state: an ask agent cannot wait). Two ensembles with one name keep the
// first (in path order). A folder with nothing to serve is an error.
func New(dir string, o Options) (*mcp.Server, error) {
	list, err := find(dir, o)
	if err != nil {
		return nil, err
	}
	x := &sessions{o: o, responses: map[*ensemble.Ensemble]string{}}
	var es []*ensemble.Ensemble
	for _, s := range list {
		es = append(es, s.e)
		x.responses[s.e] = s.responses
	}
	return newServer(es, x, true), nil
}

// find loads every ensemble file under dir.
func find(dir string, o Options) ([]*served, error) {
	paths, err := ensemble.FindFiles(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such folder", dir)
	}
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
	child := ensemble.Included(paths)
	for _, path := range paths {
		e, err := session.Load(path, nil, session.LoadOptions{Profiles: o.Profiles, LookupEnv: o.LookupEnv})
		if err != nil {
			if !child[filepath.Clean(path)] { // a child that does not load alone runs within its parent
				skip(path, err)
			}
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

// sessions is the Executor of New: a session per call, as ensemble run
// --no-input runs it.
type sessions struct {
	o         Options
	responses map[*ensemble.Ensemble]string // the responses file of each, with Options.Responses
}

// Run runs e, as ensemble run --no-input does.
func (x *sessions) Run(ctx context.Context, e *ensemble.Ensemble, input string, progress func(int)) (*Outcome, error) {
	opts := session.Options{LookupEnv: x.o.LookupEnv, Ask: ask.Options{NoInput: true}}
	if file := x.responses[e]; file != "" {
		resp, err := responses.LoadResponsesFor(file, e)
		if err != nil {
			return nil, err
		}
		opts.Models.Responses, opts.Models.ResponsesFile = resp, file
	}
	sess, err := session.Open(ctx, e, opts)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	r, err := sess.StartExact(input, session.RunOptions{Events: func(ev events.Event) {
		if ev.Type == events.TurnCompleted {
			progress(ev.Turn)
		}
	}})
	if err != nil {
		return nil, err
	}
	res, _ := r.Run(ctx)
	res.SetOutput(e)
	return &Outcome{Status: res.CompletionReason, Result: res, Redact: sess.Secrets().String}, nil
}
