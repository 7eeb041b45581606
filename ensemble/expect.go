package ensemble

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"go.yaml.in/yaml/v3"
)

// Expectation is one of the file's expect: (or a command's --expect): a
// condition over the final state of a completed run, which must hold for
// the run to pass (docs/semantics.md#expectations).
type Expectation struct {
	// Where is where it was written, for messages: FILE:LINE:COL of the
	// file's expect:, or the flag (--expect) it was given with.
	Where   string
	Source  string
	Program CompiledExpectation
}

// CompileExpectation compiles an expectation given outside the file (a
// command's --expect, named by where). The error names where.
func CompileExpectation(src, where string) (*Expectation, error) {
	p, err := conditions.CompileExpectation(src)
	if err != nil {
		return nil, fmt.Errorf("%s %q does not compile: %w", where, src, err)
	}
	return &Expectation{Where: where, Source: src, Program: opaque.Make[CompiledExpectation](p)}, nil
}

// CheckExpectation checks an expectation given outside the file against
// it, as the loader checks the file's own: the keys of context it names
// must be the state key of some agent, and the agents of executions must
// exist; a misspelled one would make the expectation false (or true) on
// every run.
func (e *Ensemble) CheckExpectation(x *Expectation) error {
	keys := map[string]bool{}
	for _, a := range e.Agents {
		keys[a.StateKey()] = true
	}
	for _, k := range x.Program.get().ContextKeys {
		if !keys[k.Name] {
			return fmt.Errorf("%s %q names context.%s, but no agent of %s has the state key %q%s",
				x.Where, x.Source, k.Name, e.Name, k.Name, suggest(k.Name, slices.Sorted(maps.Keys(keys))))
		}
	}
	scope := literalScope{byKey: schemaAgents(e.Agents)}
	if prs := scope.problems(x.Program.get().Comparisons); len(prs) > 0 {
		return fmt.Errorf("%s %q: %s", x.Where, x.Source, prs[0].text)
	}
	for _, k := range x.Program.get().ExecutionKeys {
		if e.Agent(k.Name) == nil {
			names := make([]string, len(e.Agents))
			for i, a := range e.Agents {
				names[i] = a.Name
			}
			return fmt.Errorf("%s %q names executions.%s, but %s has no agent %q%s",
				x.Where, x.Source, k.Name, e.Name, k.Name, suggest(k.Name, names))
		}
	}
	return nil
}

// expectations decodes expect: a list of expressions, each compiled as
// an expectation and checked, with the conditions, against the agents'
// state keys and output schemas once the agents are decoded.
func (d *decoder) expectations(f field) []*Expectation {
	items := d.list(f)
	var out []*Expectation
	for i, n := range items {
		item := field{name: fmt.Sprintf("expect #%d", i+1), parent: f.val, key: n, val: n}
		if resolve(n).Kind != yaml.ScalarNode {
			d.str(item) // reports it
			continue
		}
		src := d.str(item)
		if strings.TrimSpace(src) == "" {
			d.bad(item, "must not be empty")
			continue
		}
		p, err := conditions.CompileExpectation(src)
		if err != nil {
			d.bad(item, "does not compile: %v", err)
			continue
		}
		d.conds = append(d.conds, condRef{f: item, p: &p.Program, what: "expectation"})
		out = append(out, &Expectation{Where: fmt.Sprintf("%s:%d:%d", d.file, n.Line, n.Column), Source: src, Program: opaque.Make[CompiledExpectation](p)})
	}
	return out
}
