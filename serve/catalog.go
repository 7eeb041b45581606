package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
)

// served is one ensemble the server runs.
type served struct {
	e         *ensemble.Ensemble
	responses string // its responses.yaml, with Options.Responses
	secrets   *secrets.Redactor
	refs      durable.Resolved // what its runs are saved with
	resp      *responses.Responses
	mcp       bool // an agent uses an MCP server: a session per run (sessions.go)
}

// DuplicateError is an ensemble not served: another, served, has its name.
type DuplicateError struct{ Name, First string }

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("the ensemble %q of %s has that name", e.Name, e.First)
}

// findEnsembles loads the ensembles of paths: each an ensemble file, or a
// folder whose ensemble files (ensemble.FindFiles) are all served. Two
// ensembles with one name keep the first; a file that does not load is
// skipped (told to skipped) when found in a folder, an error when named;
// a child ensemble of another file of the folder that does not load on
// its own is left out quietly, as validate leaves it: its parent runs it.
func findEnsembles(paths []string, o *Options) ([]*served, error) {
	var list []*served
	names := map[string]string{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file or folder", p)
		}
		if err != nil {
			return nil, err
		}
		files, named, child := []string{p}, true, map[string]bool(nil)
		if fi.IsDir() {
			if files, err = ensemble.FindFiles(p); err != nil {
				return nil, err
			}
			named, child = false, ensemble.Included(files)
		}
		for _, path := range files {
			e, err := session.Load(path, nil, session.LoadOptions{Profiles: o.Profiles, LookupEnv: o.LookupEnv})
			switch {
			case err != nil && named:
				return nil, err
			case err != nil && child[filepath.Clean(path)]:
				continue // a child that needs its parent's profiles or tools: served within it
			case err != nil:
				o.skipped(path, err)
				continue
			}
			if first, dup := names[e.Name]; dup {
				o.skipped(path, &DuplicateError{Name: e.Name, First: first})
				continue
			}
			names[e.Name] = path
			s := &served{e: e, secrets: secrets.OfEnsemble(e, o.LookupEnv)}
			resp := filepath.Join(filepath.Dir(path), "responses.yaml")
			if info, err := os.Stat(resp); o.Responses && err == nil && info.Mode().IsRegular() {
				s.responses = resp
			}
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: no ensemble to serve", strings.Join(paths, ", "))
	}
	slices.SortFunc(list, func(a, b *served) int { return strings.Compare(a.e.Name, b.e.Name) })
	return list, nil
}

// EnsembleInfo is what GET /v1/ensembles says of an ensemble.
type EnsembleInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Input is the file's default input ("" when none).
	Input string `json:"input"`
	// InputSchema is the JSON Schema of the run's input (a string, with
	// the file's input as its default); OutputSchema that of its output
	// (the output: agent's output_schema; null when the file names no
	// output agent, or that agent has no schema).
	InputSchema  map[string]any `json:"input_schema"`
	OutputSchema map[string]any `json:"output_schema"`
	// Asks are the agents that wait for a person.
	Asks []AskInfo `json:"asks"`
}

// AskInfo is an agent that waits for a person: its question, and the
// JSON Schema its answer must meet (null: any answer, text or JSON; the
// format declares none for ask agents yet).
type AskInfo struct {
	Agent        string         `json:"agent"`
	Question     string         `json:"question"`
	AnswerSchema map[string]any `json:"answer_schema"`
}

// info describes s.
func (s *served) info() EnsembleInfo {
	// The output schema is the output_schema of the file's output: agent
	// (null without one: the result is then the whole final state).
	in := EnsembleInfo{Name: s.e.Name, Description: s.e.Description, Input: s.e.Input, Asks: []AskInfo{},
		InputSchema: s.e.InputSchema(), OutputSchema: s.e.OutputSchema()}
	for _, a := range s.e.Agents {
		if !agent.AsksHuman(a) {
			continue
		}
		in.Asks = append(in.Asks, AskInfo{Agent: a.Name, Question: ask.SpecOf(a).Question})
	}
	return in
}
