package runners

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// InjectedRunner runs agents from injected responses (docs/testing.md#the-responses-file) and hands
// every agent without an entry to Next.
//
// For an agent with an entry, execution N (Request.Execution, 1-based; 0 is
// taken as 1) takes response N instead of running: no script, no model, no
// human.
//   - A string is reply text: parsed with ParseOutput, except that for an LLM
//     agent with output_format: json it must be JSON (a ```json fenced block
//     is accepted, see ParseJSONReply) or the execution fails.
//   - Any other value is the output as it is. An injected
//     {"success": false, ...} is NOT a failure: the script protocol's
//     envelope belongs to scripts; an injection is the output itself.
//   - When the list is used up the execution fails: `agent "x": injected
//     responses exhausted after N`.
//
// Result.InputData of an injected execution is what the agent would have
// been given, less the shared context: agent, input, dependencies, turn,
// execution and request_parameters (plus parameters for script agents),
// and "injected_response": N, the 1-based number of the response used.
//
// An entry {simulate: ...} calls Simulate, which the LLM runner provides.
type InjectedRunner struct {
	Responses *Responses
	Next      Runner
	// Simulate plays the agent with a model profile and a prompt (docs/testing.md#the-responses-file).
	// Nil: simulated entries fail with a clear error.
	Simulate func(ctx context.Context, req *Request, modelProfile, prompt string) *Result
	// Live, when not nil, guards the real models: an LLM agent with no
	// entry is handed to Next only when Live returns nil for it; otherwise
	// its execution fails with Live's error and no request reaches the
	// model. Script and ask agents are not guarded. Nil: every agent
	// without an entry goes to Next.
	Live func(agent string) error

	mu    sync.Mutex
	taken map[string]int // responses taken by path (pathEntry)
}

var _ Runner = (*InjectedRunner)(nil)

// Injected wraps next with the responses r (which may be nil: then every
// agent goes to next).
func Injected(r *Responses, next Runner) *InjectedRunner {
	return &InjectedRunner{Responses: r, Next: next}
}

// Run injects or delegates.
func (ir *InjectedRunner) Run(ctx context.Context, req *Request) *Result {
	a := req.Agent
	ent, n := ir.injectedEntry(req)
	if ent == nil {
		if g, ok := a.Kind.(guarded); ir.Live != nil && ok && g.Guarded() {
			if err := ir.Live(cmp.Or(req.Path, a.Name)); err != nil {
				return &Result{InputData: injectedInputData(req, 0), Err: err}
			}
		}
		if ir.Next == nil {
			return &Result{Err: fmt.Errorf("agent %q: no runner is configured", a.Name)}
		}
		return ir.Next.Run(ctx, req)
	}
	if s := ent.Simulate; s != nil {
		if ir.Simulate == nil {
			return &Result{
				InputData: injectedInputData(req, 0),
				Err: fmt.Errorf("agent %q: its responses are simulated with model profile %q, and no provider is available yet to run it",
					a.Name, s.ModelProfile),
			}
		}
		return ir.Simulate(ctx, req, s.ModelProfile, s.Prompt)
	}

	res := &Result{InputData: injectedInputData(req, n)}
	if n > len(ent.Values) {
		res.Err = exhausted(req, ent, n)
		return res
	}
	switch v := ent.Values[n-1].(type) {
	case string:
		if j, ok := a.Kind.(jsonReplies); ok && j.JSONReply(a) {
			out, err := ParseJSONReply(v)
			if err != nil {
				res.Err = fmt.Errorf("agent %q: injected response %d: output_format is json, but %w", a.Name, n, err)
				return res
			}
			res.Output = out
		} else if res.Output, res.Err = ParseOutput(v); res.Err != nil {
			res.Err = fmt.Errorf("agent %q: injected response %d: %w", a.Name, n, res.Err)
		}
	default:
		if valueDepth(v) > MaxOutputDepth {
			res.Err = fmt.Errorf("agent %q: injected response %d: %w", a.Name, n, ErrTooDeep)
			return res
		}
		res.Output = jsonvalue.Copy(v)
	}
	return res
}

// What the injected runner asks of an agent's kind.
type (
	// guarded kinds reach a model that costs money: Live guards them.
	guarded interface{ Guarded() bool }
	// jsonReplies kinds say whether a's reply text must be JSON.
	jsonReplies interface{ JSONReply(a *ensemble.Agent) bool }
	// inputData kinds give more input data than BaseInputData.
	inputData interface {
		InputData(req *Request) map[string]any
	}
)

func injectedInputData(req *Request, n int) map[string]any {
	var m map[string]any
	if k, ok := req.Agent.Kind.(inputData); ok {
		m = k.InputData(req)
	} else {
		m = BaseInputData(req)
	}
	if n > 0 {
		m["injected_response"] = n
	}
	return m
}
