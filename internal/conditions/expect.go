package conditions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// Expectation is an expectation over the final state of a completed run
// (the file's expect:, run --expect; docs/semantics.md#expectations): a
// condition that also sees held_back, the agents the run held back, and
// errors, the run's failed executions. It is immutable and safe for
// concurrent use.
type Expectation struct {
	Program
	// Names are the names of the final state other than context and
	// executions that the expectation reads (held_back, errors,
	// turn_count, input, history), in the order of first use.
	Names []string
}

// Final is what an expectation sees: the conditions' names over the final
// state, and the run's outcome.
type Final struct {
	Env
	// HeldBack are the names of the agents the run held back (ready
	// again, but at their limit: a loop that ran out of max_turns).
	HeldBack []string
	// Errors are the run's failed executions, each a map of the result's
	// errors (turn_number, agent_name, message, handled).
	Errors []any
}

// expectEnv is the names an expectation may use.
type expectEnv struct {
	Env
	HeldBack []string `expr:"held_back"`
	Errors   []any    `expr:"errors"`
}

// expectEvalEnv is expectEnv with the evaluation's meter, as evalEnv is Env.
type expectEvalEnv struct {
	expectEnv
	m *meter
}

// expectWhat names an expectation in messages.
const expectWhat = "expectation"

// CompileExpectation checks an expectation once, as Compile does a
// condition: it must be boolean. The error, if any, is a *CompileError.
func CompileExpectation(src string) (*Expectation, error) {
	p, err := compile(src, expectWhat, expectEnv{}, &expectEvalEnv{}, expr.AsBool())
	if err != nil {
		if ce, ok := err.(*CompileError); ok {
			ce.Msg = strings.Replace(ce.Msg, "condition must be", "expectation must be", 1)
		}
		return nil, err
	}
	x := &Expectation{Program: *p}
	// The program compiled: read the names it uses from the source as
	// written (the guarded program has names of its own).
	if tree, err := expr.Compile(src, commonOptions(expectEnv{})...); err == nil {
		n := &names{}
		ast.Walk(new(tree.Node()), n)
		x.Names = n.found
	}
	return x, nil
}

// names collects the names of the final state an expression uses, other
// than context and executions (whose reads are listed by key).
type names struct{ found []string }

func (n *names) Visit(node *ast.Node) {
	id, ok := (*node).(*ast.IdentifierNode)
	if !ok {
		return
	}
	switch id.Value {
	case "held_back", "errors", "turn_count", "input", "history":
		if !slices.Contains(n.found, id.Value) {
			n.found = append(n.found, id.Value)
		}
	}
}

// EvalContext runs the expectation in the sandbox over f. A run-time error
// is returned (a *RuntimeError) with false: the expectation does not hold.
func (x *Expectation) EvalContext(ctx context.Context, f *Final) (result bool, err error) {
	r, err := runnerFor(ctx, expectWhat)
	if err != nil {
		return false, err
	}
	defer recovered(&result, &err, expectWhat)
	env := &expectEvalEnv{m: &r.meter}
	if f != nil {
		env.expectEnv = expectEnv{Env: f.Env, HeldBack: f.HeldBack, Errors: f.Errors}
	}
	if env.HeldBack == nil {
		env.HeldBack = []string{}
	}
	if env.Errors == nil {
		env.Errors = []any{}
	}
	r.meter = meter{bytes: MaxBytes, steps: MaxSteps, ctx: ctx}
	r.vm.MemoryBudget = MaxMemory
	out, runErr := r.vm.Run(x.prog, env)
	r.reset()
	runnerPool.Put(r)
	if runErr != nil {
		re := runtimeError(runErr, x.Source)
		re.What = expectWhat
		re.Msg = strings.Replace(re.Msg, "condition must be", "expectation must be", 1)
		return false, re
	}
	b, ok := out.(bool)
	if !ok {
		return false, &RuntimeError{Msg: fmt.Sprintf("expectation must be boolean, but it returned %s", typeWords(typeName(out))), What: expectWhat}
	}
	return b, nil
}

// Read is a value an expectation read from the final state: its path
// (context.judge.verdict, executions.fix, held_back) and its value there,
// or Missing when the path leads nowhere (a key that is absent).
type Read struct {
	Path    string
	Value   any
	Missing bool
}

// Reads are the values the expectation reads from f, for a report of why
// it held or not: each path of context it reads with constant names
// (only the longest of context.a and context.a.b), each agent of
// executions, and the other names it uses (held_back, errors, turn_count,
// input; history is named, without its value). Paths are in source order.
func (x *Expectation) Reads(f *Final) []Read {
	type at struct {
		path      []string
		line, col int
	}
	var paths []at
	for _, k := range x.ContextKeys {
		paths = append(paths, at{[]string{k.Name}, k.Line, k.Column})
	}
	for _, cf := range x.ContextFields {
		paths = append(paths, at{cf.Path, cf.Line, cf.Column})
	}
	slices.SortStableFunc(paths, func(a, b at) int { return cmp.Or(a.line-b.line, a.col-b.col) })
	var out []Read
	seen := map[string]bool{}
	for _, p := range paths {
		// A prefix of a longer path read too says less than it.
		longer := slices.ContainsFunc(paths, func(q at) bool {
			return len(q.path) > len(p.path) && slices.Equal(q.path[:len(p.path)], p.path)
		})
		key := strings.Join(p.path, ".")
		if longer || seen[key] {
			continue
		}
		seen[key] = true
		r := Read{Path: "context." + key}
		v, found := lookup(f.Context, p.path)
		r.Value, r.Missing = v, !found
		out = append(out, r)
	}
	for _, k := range x.ExecutionKeys {
		key := "executions." + k.Name
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, Read{Path: key, Value: f.Executions[k.Name]})
	}
	for _, name := range x.Names {
		r := Read{Path: name}
		switch name {
		case "held_back":
			r.Value = f.HeldBack
			if f.HeldBack == nil {
				r.Value = []string{}
			}
		case "errors":
			r.Value = f.Errors
			if f.Errors == nil {
				r.Value = []any{}
			}
		case "turn_count":
			r.Value = f.TurnCount
		case "input":
			r.Value = f.Input
		case "history":
			r.Value = fmt.Sprintf("(%d records)", len(f.History))
		}
		out = append(out, r)
	}
	return out
}

// lookup follows path through maps from m: the value, and whether every
// key was there.
func lookup(m map[string]any, path []string) (any, bool) {
	var v any = m
	for _, k := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
