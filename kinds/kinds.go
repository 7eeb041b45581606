// Package kinds is the one place where the kinds of agent are wired
// together: Builtin lists them, and a Registry builds from them the runner
// that both `ensemble run` and `ensemble test` use. Adding a kind is one
// package of its own plus one line in Builtin.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package kinds

import (
	"context"
	"fmt"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds/ask"
	nested "github.com/ensemble-run/ensemble/kinds/ensemble"
	"github.com/ensemble-run/ensemble/kinds/llm"
	"github.com/ensemble-run/ensemble/kinds/script"
)

// Builtin returns the kinds every program knows, in the order the file
// format lists them.
func Builtin() *Registry {
	r := New()
	r.Register(script.Kind{})
	r.Register(llm.Kind{})
	r.Register(ask.Kind{})
	r.Register(nested.Kind{})
	r.Register(nested.Dispatch{})
	return r
}

// Registry is a set of kinds, in the order they were registered.
type Registry struct {
	list   []agent.Kind
	byName map[string]agent.Kind
}

// New returns an empty Registry.
func New() *Registry { return &Registry{byName: map[string]agent.Kind{}} }

// Register adds k. Two kinds with one name are a programming error: it
// panics.
func (r *Registry) Register(k agent.Kind) {
	if _, dup := r.byName[k.String()]; dup {
		panic(fmt.Sprintf("kinds: kind %q registered twice", k.String()))
	}
	r.list = append(r.list, k)
	r.byName[k.String()] = k
}

// Kinds lists the kinds in registration order.
func (r *Registry) Kinds() []agent.Kind { return r.list }

// Load are the load options that decode agents of these kinds.
func (r *Registry) Load(opts ensemble.LoadOptions) ensemble.LoadOptions {
	opts.Kinds = make([]ensemble.Kind, len(r.list))
	for i, k := range r.list {
		opts.Kinds[i] = k
	}
	return opts
}

// Kind returns the kind with that name, or nil.
func (r *Registry) Kind(name string) agent.Kind { return r.byName[name] }

// Runner builds every kind's runner from h, except those replaced (by kind
// name) in replace, and returns one runner that hands each agent to the
// runner of its kind.
//
// The kinds' runners get h with Kinds and Dispatch set to the registry's
// kinds and to the returned runner.
func (r *Registry) Runner(h *agent.Host, replace map[string]agent.Runner) *Dispatch {
	d := &Dispatch{byName: make(map[string]agent.Runner, len(r.list))}
	host := *h
	host.Kinds, host.Dispatch = r.Load(ensemble.LoadOptions{}).Kinds, d
	for _, k := range r.list {
		run, ok := replace[k.String()]
		if !ok {
			run = k.Runner(&host)
		}
		d.byName[k.String()] = run
		d.order = append(d.order, run)
	}
	return d
}

// Dispatch runs each agent with the runner of its kind.
type Dispatch struct {
	byName map[string]agent.Runner
	order  []agent.Runner // registration order
}

var _ agent.Runner = (*Dispatch)(nil)

// Run runs req with the runner of req.Agent's kind.
func (d *Dispatch) Run(ctx context.Context, req *agent.Request) *agent.Result {
	a := req.Agent
	if a.Kind == nil {
		return &agent.Result{Err: fmt.Errorf("agent %q has no kind", a.Name)}
	}
	run, ok := d.byName[a.Kind.String()]
	switch {
	case !ok:
		return &agent.Result{Err: fmt.Errorf("agent %q: unknown agent kind %v", a.Name, a.Kind)}
	case run == nil:
		return &agent.Result{Err: fmt.Errorf("agent %q: no runner is configured for %s agents", a.Name, a.Kind)}
	}
	return run.Run(ctx, req)
}

// Simulator returns the Simulate method of the first runner that plays
// simulated users (the LLM kind's), or nil when none does.
func (d *Dispatch) Simulator() func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result {
	for _, run := range d.order {
		if s, ok := run.(agent.Simulator); ok {
			return s.Simulate
		}
	}
	return nil
}
