package responses

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/runners"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// InjectedRunner runs agents from injected responses (docs/testing.md#the-responses-file) and hands
// every agent without an entry to Next.
//
// For an agent with an entry, execution N (agent.Request.Execution, 1-based; 0 is
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
// agent.Result.InputData of an injected execution is what the agent would have
// been given, less the shared context: agent, input, dependencies, turn,
// execution and request_parameters (plus parameters for script agents),
// and "injected_response": N, the 1-based number of the response used.
//
// An entry {simulate: ...} calls Simulate, which the LLM runner provides.
type InjectedRunner struct {
	Responses *Responses
	Next      agent.Runner
	// Simulate plays the agent with a model profile and a prompt (docs/testing.md#the-responses-file).
	// Nil: simulated entries fail with a clear error.
	Simulate func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result
	// Live, when not nil, guards the real models: an LLM agent with no
	// entry is handed to Next only when Live returns nil for it; otherwise
	// its execution fails with Live's error and no request reaches the
	// model. Script and ask agents are not guarded. Nil: every agent
	// without an entry goes to Next.
	Live func(agent string) error

	mu      sync.Mutex
	repairs map[string]int // responses taken as repairs, by entry (its agent)
	taken   map[string]int // responses taken by path (pathEntry)
}

var _ agent.Runner = (*InjectedRunner)(nil)

// Injected wraps next with the responses r (which may be nil: then every
// agent goes to next).
func Injected(r *Responses, next agent.Runner) *InjectedRunner {
	return &InjectedRunner{Responses: r, Next: next}
}

// Run injects or delegates.
func (ir *InjectedRunner) Run(ctx context.Context, req *agent.Request) *agent.Result {
	a := req.Agent
	ent, n, err := ir.injectedEntry(req)
	if err != nil {
		return &agent.Result{InputData: injectedInputData(req, n), Err: err}
	}
	if ent == nil {
		if ir.Live != nil && agent.IsGuarded(a.Kind) {
			if err := ir.Live(cmp.Or(req.Path, a.Name)); err != nil {
				return &agent.Result{InputData: injectedInputData(req, 0), Err: err}
			}
		}
		if ir.Next == nil {
			return &agent.Result{Err: fmt.Errorf("agent %q: no runner is configured", a.Name)}
		}
		return ir.Next.Run(ctx, req)
	}
	if s := ent.Simulate; s != nil {
		if ir.Simulate == nil {
			return &agent.Result{
				InputData: injectedInputData(req, 0),
				Err: fmt.Errorf("agent %q: its responses are simulated with model profile %q, and no provider is available yet to run it",
					a.Name, s.ModelProfile),
			}
		}
		return ir.Simulate(ctx, req, s.ModelProfile, s.Prompt)
	}

	// Responses taken as repairs by earlier executions shift this one's
	// (docs/testing.md#the-responses-file).
	n += ir.repairsTaken(req, ent)
	res := &agent.Result{InputData: injectedInputData(req, n)}
	for repairs := 0; ; repairs++ {
		if n > len(ent.Values) {
			res.Err = exhausted(req, ent, n)
			return res
		}
		res.Output, res.Err = injectedOutput(a, ent.Values[n-1], n, ent.Position(n))
		if res.Err == nil || a.OutputSchema == nil || repairs >= ir.maxRepairs(req) {
			return res
		}
		if n >= len(ent.Values) {
			// The repair turn would take the next response, and there is
			// none: the failure is this response's, not the list's end.
			res.Err = fmt.Errorf("%w; a repair turn would take response %d, and the list has %d", res.Err, n+1, len(ent.Values))
			return res
		}
		// A response that fails the output_schema is answered with a
		// repair turn, as a model's reply would be: the next response is the
		// corrected reply.
		n++
		ir.takeRepair(ent)
		res.InputData = injectedInputData(req, n)
	}
}

// maxQuotedReply is how much of a reply an error quotes.
const maxQuotedReply = 300

// QuoteReply is a reply quoted in an error: its start (300 characters),
// on one line, so that what a model said shows where a failure is
// reported.
func QuoteReply(reply string) string {
	q := strings.Join(strings.Fields(reply), " ")
	if r := []rune(q); len(r) > maxQuotedReply {
		q = string(r[:maxQuotedReply-1]) + "…"
	}
	return strconv.Quote(q)
}

// injectedOutput is the output of injected response v (number n) of agent a,
// from at ("FILE:LINE", or ""): text is parsed as a reply would be, any
// other value is the output itself; either must satisfy a's output_schema.
func injectedOutput(a *ensemble.Agent, v any, n int, at string) (any, error) {
	resp := fmt.Sprintf("injected response %d", n)
	if at != "" {
		resp += " (" + at + ")"
	}
	var out any
	switch v := v.(type) {
	case string:
		if agent.JSONReply(a) {
			o, err := runners.ParseJSONReply(v)
			if err != nil {
				if a.OutputSchema != nil {
					return nil, fmt.Errorf("agent %q: %s: output_schema needs JSON: %w; the reply was %s", a.Name, resp, err, QuoteReply(v))
				}
				return nil, fmt.Errorf("agent %q: %s: output_format is json: %w; the reply was %s", a.Name, resp, err, QuoteReply(v))
			}
			out = o
		} else {
			o, err := runners.ParseOutput(v)
			if err != nil {
				return nil, fmt.Errorf("agent %q: %s: %w", a.Name, resp, err)
			}
			out = o
		}
	default:
		if runners.ValueDepth(v) > runners.MaxOutputDepth {
			return nil, fmt.Errorf("agent %q: %s: %w", a.Name, resp, runners.ErrTooDeep)
		}
		out = jsonvalue.Copy(v)
	}
	if err := runners.CheckSchema(a, out); err != nil {
		return nil, fmt.Errorf("agent %q: %s: %w", a.Name, resp, err)
	}
	return out, nil
}

// maxRepairs is how many repair turns an execution's injected responses
// get: the kind's output_repairs, none for a fan-out instance (its
// responses are numbered across instances that run at once).
func (ir *InjectedRunner) maxRepairs(req *agent.Request) int {
	if req.Instance != nil {
		return 0
	}
	return agent.OutputRepairs(req.Agent)
}

// repairsTaken is how many responses of ent earlier executions took as
// repairs.
func (ir *InjectedRunner) repairsTaken(req *agent.Request, ent *ResponseEntry) int {
	if req.Instance != nil {
		return 0
	}
	ir.mu.Lock()
	defer ir.mu.Unlock()
	return ir.repairs[ent.Agent]
}

func (ir *InjectedRunner) takeRepair(ent *ResponseEntry) {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	if ir.repairs == nil {
		ir.repairs = map[string]int{}
	}
	ir.repairs[ent.Agent]++
}

func injectedInputData(req *agent.Request, n int) map[string]any {
	var m map[string]any
	if k, ok := req.Agent.Kind.(agent.InputDescriber); ok {
		m = k.InputData(req)
	} else {
		m = scriptexec.BaseInputData(req)
	}
	if n > 0 {
		m["injected_response"] = n
	}
	return m
}
