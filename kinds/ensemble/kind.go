// Package ensemble is the kind of agent that runs a child ensemble
// (docs/semantics.md#ensembles-of-ensembles): `ensemble: FILE`, optionally
// looped until a condition holds, and `dispatch:`, which chooses the child
// file at run time. Each execution runs the child from a fresh state with
// the registry's runner, as a run of its own inside the parent's execution.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package ensemble

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	format "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/state"
)

// IterationsDetail is the detail of a looping agent's record: how many runs
// of the child it made (docs/semantics.md#ensembles-of-ensembles).
const IterationsDetail = "iterations"

func init() { state.RegisterDetail(state.ChildDetail, IterationsDetail) }

// Kind is `ensemble: FILE`, with its own fields output and loop.
type Kind struct{}

// Dispatch is `dispatch: {on, cases, default}`.
type Dispatch struct{}

var (
	_ agent.Kind = Kind{}
	_ agent.Kind = Dispatch{}
)

// Spec is what an ensemble or dispatch agent has of its own (Agent.Spec).
type Spec struct {
	// File is the child's path as written; Child the loaded child (nil in
	// a file that failed to load). For dispatch, Cases and Default.
	File  string
	Child *format.Ensemble
	// Output is the child agent whose output is the execution's; "" is
	// what the child returns: the agent of its own top-level output:, or
	// without one its whole final state.
	Output string
	Loop   *Loop

	On      string // dispatch: the expression yielding the key
	on      *conditions.Select
	Cases   []*Case
	Default *Case
}

// Loop is an ensemble agent's loop: block.
type Loop struct {
	Until         string
	until         *conditions.Select
	MaxIterations int
	Carry         string
	carry         *conditions.Select
	// Succeed is on_exhausted: succeed.
	Succeed bool
	// Continue is on_iteration_error: continue.
	Continue bool
}

// Case is one child file a dispatch may run.
type Case struct {
	Key   string // "" for the default
	File  string
	Child *format.Ensemble
}

// SpecOf is a's Spec; an empty one when a has none.
func SpecOf(a *format.Agent) *Spec {
	if s, ok := a.Spec.(*Spec); ok {
		return s
	}
	return &Spec{}
}

// String is "ensemble".
func (Kind) String() string { return "ensemble" }

// Key is ensemble: the child's file.
func (Kind) Key() string { return "ensemble" }

// Fields are output, loop and allow_outside.
func (Kind) Fields() []string { return []string{"output", "loop", "allow_outside"} }

// Decode loads the child with the parent and checks output and loop.
func (Kind) Decode(f *format.Fields, a *format.Agent) {
	s := &Spec{}
	a.Spec = s
	if f.Has("ensemble") {
		s.File = f.String("ensemble")
		s.Child = f.Ensemble("ensemble", f.Bool("allow_outside"))
	}
	if f.Has("output") {
		s.Output = f.String("output")
		f.Require("output", s.Output == "")
		if s.Child != nil && s.Output != "" && s.Child.Agent(s.Output) == nil {
			f.Bad("output", "names no agent of %s: %q%s", s.File, s.Output, format.Suggest(s.Output, s.Child.AgentNames()))
		}
	}
	if lf := f.Mapping("loop", "until", "max_iterations", "carry", "on_exhausted", "on_iteration_error"); lf != nil {
		l := &Loop{}
		l.Until, l.until = loopExpr(lf, "until")
		l.MaxIterations = lf.Positive("max_iterations")
		lf.Require("max_iterations", false)
		if lf.Has("carry") {
			l.Carry, l.carry = loopExpr(lf, "carry")
		}
		output := s.Output
		if output == "" && s.Child != nil {
			output = s.Child.Output // what the child returns
		}
		if l.until != nil {
			lf.CheckLiterals("until", opaque.Make[format.CompiledCondition](&l.until.Program), s.Child, output)
		}
		if l.carry != nil {
			lf.CheckLiterals("carry", opaque.Make[format.CompiledCondition](&l.carry.Program), s.Child, output)
		}
		switch v := lf.String("on_exhausted"); v {
		case "", "fail":
		case "succeed":
			l.Succeed = true
		default:
			lf.Bad("on_exhausted", "must be fail or succeed, got %q", v)
		}
		switch v := lf.String("on_iteration_error"); v {
		case "", "fail":
		case "continue":
			l.Continue = true
		default:
			lf.Bad("on_iteration_error", "must be fail or continue, got %q", v)
		}
		s.Loop = l
	}
}

// expr decodes and compiles a required expression.
func expr(f *format.Fields, key string) (string, *conditions.Select) {
	return compileExpr(f, key, conditions.CompileSelect)
}

// loopExpr is expr for a loop's until and carry, which also see the
// iteration's status and error.
func loopExpr(f *format.Fields, key string) (string, *conditions.Select) {
	return compileExpr(f, key, conditions.CompileLoop)
}

func compileExpr(f *format.Fields, key string, compile func(string) (*conditions.Select, error)) (string, *conditions.Select) {
	src := f.String(key)
	f.Require(key, strings.TrimSpace(src) == "")
	if strings.TrimSpace(src) == "" {
		return src, nil
	}
	p, err := compile(src)
	if err != nil {
		f.Bad(key, "does not compile: %v", err)
		return src, nil
	}
	return src, p
}

// String is "dispatch".
func (Dispatch) String() string { return "dispatch" }

// Key is dispatch: the block.
func (Dispatch) Key() string { return "dispatch" }

// Fields: output and allow_outside, besides the block.
func (Dispatch) Fields() []string { return []string{"output", "allow_outside"} }

// Decode compiles on and loads every case's file with the parent.
func (Dispatch) Decode(f *format.Fields, a *format.Agent) {
	s := &Spec{}
	a.Spec = s
	df := f.Mapping("dispatch", "on", "cases", "default")
	if df == nil {
		return
	}
	s.On, s.on = expr(df, "on")
	outside := f.Bool("allow_outside")
	df.Require("cases", false)
	if cf := df.Mapping("cases"); cf != nil {
		keys := cf.Keys()
		if len(keys) == 0 {
			df.Require("cases", true)
		}
		for _, k := range keys {
			s.Cases = append(s.Cases, &Case{Key: k, File: cf.String(k), Child: cf.Ensemble(k, outside)})
		}
	}
	if df.Has("default") {
		s.Default = &Case{File: df.String("default"), Child: df.Ensemble("default", outside)}
	}
	if f.Has("output") {
		// Whichever case runs, its child must have the agent: each case's
		// file is checked, at its case.
		s.Output = f.String("output")
		f.Require("output", s.Output == "")
		if s.Output == "" {
			return
		}
		cf := df.Mapping("cases")
		for _, c := range s.Cases {
			if c.Child != nil && c.Child.Agent(s.Output) == nil && cf != nil {
				cf.Bad(c.Key, "output names no agent of %s: %q%s", c.File, s.Output, format.Suggest(s.Output, c.Child.AgentNames()))
			}
		}
		if c := s.Default; c != nil && c.Child != nil && c.Child.Agent(s.Output) == nil {
			df.Bad("default", "output names no agent of %s: %q%s", c.File, s.Output, format.Suggest(s.Output, c.Child.AgentNames()))
		}
	}
}

// Children are the files an agent of either kind may run: for the
// injected responses' paths and the drawing's clusters.
func (Kind) Children(a *format.Agent) []*format.Ensemble { return SpecOf(a).children() }

// Children are the files a dispatch may run.
func (Dispatch) Children(a *format.Agent) []*format.Ensemble { return SpecOf(a).children() }

func (s *Spec) children() []*format.Ensemble {
	var out []*format.Ensemble
	if s.Child != nil {
		out = append(out, s.Child)
	}
	for _, c := range append(s.Cases, s.Default) {
		if c != nil && c.Child != nil {
			out = append(out, c.Child)
		}
	}
	return out
}

// Describe: "ensemble: FILE", the output and the loop.
func (Kind) Describe(_ *format.Ensemble, a *format.Agent) []string {
	s := SpecOf(a)
	lines := []string{"ensemble: " + s.File}
	if s.Output != "" {
		lines = append(lines, "output: "+s.Output)
	}
	if l := s.Loop; l != nil {
		lines = append(lines, fmt.Sprintf("loop ≤ %d until %s", l.MaxIterations, l.Until))
	}
	return lines
}

// Describe: "dispatch on EXPR" and the cases.
func (Dispatch) Describe(_ *format.Ensemble, a *format.Agent) []string {
	s := SpecOf(a)
	lines := []string{"dispatch on " + s.On}
	if s.Output != "" {
		lines = append(lines, "output: "+s.Output)
	}
	for _, c := range s.Cases {
		lines = append(lines, c.Key+": "+filepath.ToSlash(c.File))
	}
	if s.Default != nil {
		lines = append(lines, "default: "+filepath.ToSlash(s.Default.File))
	}
	return lines
}

var subroutine = agent.Shape{
	Mermaid:      [2]string{"[[", "]]"},
	MermaidClass: "fill:#eef3fb,stroke:#3b5b92,color:#1a1a1a",
	DOT:          `shape=box, peripheries=2, fillcolor="#eef3fb", color="#3b5b92"`,
}

// Shape: a box with double sides (a subroutine).
func (Kind) Shape() agent.Shape { return subroutine }

// Shape: a hexagon.
func (Dispatch) Shape() agent.Shape {
	return agent.Shape{
		Mermaid:      [2]string{"{{", "}}"},
		MermaidClass: "fill:#eef3fb,stroke:#3b5b92,color:#1a1a1a",
		DOT:          `shape=hexagon, fillcolor="#eef3fb", color="#3b5b92"`,
	}
}

// Runner runs the child with h's dispatching runner (or the runner of the
// parent's run, which wraps it: injected responses).
func (Kind) Runner(h *agent.Host) agent.Runner { return &Runner{Host: h} }

// Runner is the same as Kind's: the spec says which file to run.
func (Dispatch) Runner(h *agent.Host) agent.Runner { return &Runner{Host: h} }
