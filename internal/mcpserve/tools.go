package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/serve"
)

// Both doors (stdio, and /mcp on ensemble serve) list the same tools and
// build the same results; what differs is how a call's run is executed,
// an Executor: the stdio door runs a session per call, as ensemble run
// does; a Keeper keeps its runs in a state database (serve's Runs), so
// that a run may wait for an answer: an ask agent becomes an elicitation
// request, or a suspended result continued with ensemble_answer.

// Executor runs the ensemble of a tool call.
type Executor interface {
	// Run runs e with input until it ends or waits for an answer;
	// progress is told of each turn completed (never nil). An error is
	// the call's error result.
	Run(ctx context.Context, e *ensemble.Ensemble, input string, progress func(turn int)) (*Outcome, error)
}

// Keeper is an Executor whose runs are saved: they may wait for answers,
// and are continued and read by run id.
type Keeper interface {
	Executor
	// Answer answers agent of run id, which must wait for it, and follows
	// the run as Run does.
	Answer(ctx context.Context, id, agent, answer string, progress func(turn int)) (*Outcome, error)
	// Status is run id as it is now (it may go on).
	Status(id string) (*Outcome, error)
	// ResultJSON is run id's result JSON, as state show prints it,
	// redacted.
	ResultJSON(id string) ([]byte, error)
	// Recent are the last runs saved, limit at most, oldest first.
	Recent(limit int) ([]serve.RunSummary, error)
}

// Outcome is what a run came to.
type Outcome struct {
	RunID  string // "" for a run that is not kept
	Status string // its completion reason, or a Keeper's status (running, queued, cancelled, ...)
	// Result is its result; Output is set when its file has output:.
	Result *engine.Result
	// Redact removes the run's secrets from what is sent.
	Redact func(string) string
}

// waits reports whether o waits for an answer it can be given.
func (o *Outcome) waits() bool {
	return o.Status == engine.AwaitingInput && len(o.Result.PendingInput) > 0
}

// door is one MCP server over an Executor.
type door struct {
	x        Executor
	keep     Keeper // x, when it keeps runs; nil otherwise
	byName   map[string]*ensemble.Ensemble
	stateful bool // the transport keeps a session: the server may send requests (elicitation)
}

// newServer is the MCP server of list, executed by x: a tool per
// ensemble, and, when x keeps its runs, ensemble_answer and
// ensemble_status; a resource per ensemble file, and, when x keeps its
// runs, a resource template for each run's result. stateful: the
// transport has a session (stdio), so that a client before MCP
// 2026-07-28 can be sent an elicitation request.
func newServer(list []*ensemble.Ensemble, x Executor, stateful bool) *mcp.Server {
	d := &door{x: x, byName: map[string]*ensemble.Ensemble{}, stateful: stateful}
	d.keep, _ = x.(Keeper)
	server := mcp.NewServer(&mcp.Implementation{Name: "ensemble", Version: "1"}, nil)
	for _, e := range list {
		d.byName[e.Name] = e
		server.AddTool(toolFor(e, d.keep != nil), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return d.call(ctx, req, e)
		})
	}
	if d.keep != nil {
		d.addRunTools(server)
	}
	d.addResources(server, list)
	return server
}

// toolFor is the tool of e.
func toolFor(e *ensemble.Ensemble, keeps bool) *mcp.Tool {
	desc := e.Description
	if desc == "" {
		desc = "Runs the ensemble " + e.Name + "."
	}
	desc += returns(e)
	if keeps && asks(e) {
		desc += " When it waits for a person's answer, it asks it (elicitation), or returns the run waiting: answer it with ensemble_answer."
	}
	inputDesc := "the run's input"
	if e.Input != "" {
		inputDesc += "; default: " + e.Input
	}
	return &mcp.Tool{
		Name:        e.Name,
		Description: desc,
		InputSchema: map[string]any{"type": "object", "additionalProperties": false,
			"properties": map[string]any{"input": map[string]any{"type": "string", "description": inputDesc}}},
		OutputSchema: outputSchema(e),
	}
}

// asks reports whether e has an agent that asks a person.
func asks(e *ensemble.Ensemble) bool {
	return slices.ContainsFunc(e.Agents, agent.AsksHuman)
}

// call runs a tool call of e: a new run, or, on a retry that carries the
// answer to the question a result asked for (MCP 2026-07-28's input
// requests), the waiting run answered.
func (d *door) call(ctx context.Context, req *mcp.CallToolRequest, e *ensemble.Ensemble) (*mcp.CallToolResult, error) {
	progress := d.progress(ctx, req)
	var out *Outcome
	var err error
	if req.Params.RequestState != "" {
		var declined bool
		out, declined, err = d.retry(ctx, req, e, progress)
		if err == nil && declined {
			return d.result(out), nil // not asked again: the run waits
		}
	} else {
		var args struct {
			Input *string `json:"input"`
		}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return errorResult("invalid arguments: " + err.Error()), nil
			}
		}
		input := e.Input
		if args.Input != nil {
			input = *args.Input // an explicit empty input stays empty
		}
		out, err = d.x.Run(ctx, e, input, progress)
	}
	if err != nil {
		return d.errorResult(err), nil
	}
	return d.finish(ctx, req, out, progress)
}

// errorResult is the error result of err, redacted by an Executor that
// redacts (Runs: every served ensemble's keys).
func (d *door) errorResult(err error) *mcp.CallToolResult {
	msg := err.Error()
	if r, ok := d.x.(interface{ Redact(string) string }); ok {
		msg = r.Redact(msg)
	}
	return errorResult(msg)
}

// finish is the result of a call whose run came to out: a run that waits
// is asked (elicitation) when the client can be, else it is a suspended
// result.
func (d *door) finish(ctx context.Context, req *mcp.CallToolRequest, out *Outcome, progress func(int)) (*mcp.CallToolResult, error) {
	for d.keep != nil && out.waits() && canElicit(req) {
		p := out.Result.PendingInput[0]
		params := elicitParams(out, p)
		if newProtocol(req) {
			// MCP 2026-07-28: the question goes back in the result; the
			// client retries the call with the answer and this state.
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{inputID: params},
				RequestState: out.RunID + " " + p.Agent}, nil
		}
		if !d.stateful {
			break // a stateless server cannot send a request to an older client
		}
		res, err := req.Session.Elicit(ctx, params)
		if err != nil || ctx.Err() != nil {
			break
		}
		answer, ok := answerOf(res)
		if !ok {
			break // declined: the run goes on waiting
		}
		next, err := d.keep.Answer(ctx, out.RunID, p.Agent, answer, progress)
		if err != nil {
			return errorResult(out.Redact(err.Error())), nil
		}
		out = next
	}
	return d.result(out), nil
}

// inputID names the one input request of a result.
const inputID = "answer"

// retry answers the run named by a retried call's request state with
// the answer it carries; declined: the question was declined (or not
// answered), and out is the run as it waits.
func (d *door) retry(ctx context.Context, req *mcp.CallToolRequest, e *ensemble.Ensemble, progress func(int)) (out *Outcome, declined bool, err error) {
	if d.keep == nil {
		return nil, false, fmt.Errorf("requestState: this server keeps no run to continue")
	}
	id, agent, ok := strings.Cut(req.Params.RequestState, " ")
	if !ok {
		return nil, false, fmt.Errorf("requestState: not one this server gave")
	}
	out, err = d.keep.Status(id)
	if err != nil {
		return nil, false, fmt.Errorf("requestState: %v", err)
	}
	if out.Result.Ensemble != e.Name {
		return nil, false, fmt.Errorf("requestState: run %s is a run of %q, not of %q", id, out.Result.Ensemble, e.Name)
	}
	var res *mcp.ElicitResult
	if r, ok := req.Params.InputResponses[inputID]; ok {
		res, _ = r.(*mcp.ElicitResult)
	}
	answer, ok := answerOf(res)
	if !ok {
		return out, true, nil
	}
	out, err = d.keep.Answer(ctx, id, agent, answer, progress)
	return out, false, err
}

// canElicit reports whether the client of req takes form elicitation.
func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	el := caps.Elicitation
	return el.Form != nil || el.URL == nil // an empty elicitation capability is form's
}

// newProtocol reports whether the client of req speaks MCP 2026-07-28 or
// later (questions in results, not requests).
func newProtocol(req *mcp.CallToolRequest) bool {
	return req.ProtocolVersion() >= "2026-07-28"
}

// elicitParams is the form that asks p's question: one string field,
// answer (an ask agent takes one line of text; JSON text is parsed).
func elicitParams(out *Outcome, p engine.PendingInput) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:            "form",
		Message:         out.Redact(p.Question),
		RequestedSchema: answerSchema(p.Agent),
	}
}

// answerSchema is the schema of an ask agent's answer.
func answerSchema(agent string) map[string]any {
	return map[string]any{"type": "object", "required": []string{"answer"},
		"properties": map[string]any{"answer": map[string]any{"type": "string", "title": agent,
			"description": "The answer of " + agent + " (one line; JSON text gives a value)"}}}
}

// answerOf is the answer of an accepted form; false when it was declined,
// cancelled, or has no answer.
func answerOf(res *mcp.ElicitResult) (string, bool) {
	if res == nil || res.Action != "accept" {
		return "", false
	}
	switch v := res.Content["answer"].(type) {
	case string:
		return v, true
	case nil:
		return "", false
	default:
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
}

// progress notifies the client of each turn completed, when the request
// has a progress token (a no-op otherwise).
func (d *door) progress(ctx context.Context, req *mcp.CallToolRequest) func(int) {
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return func(int) {}
	}
	return func(turn int) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
			Progress: float64(turn), Message: fmt.Sprintf("turn %d completed", turn)})
	}
}

// result is the tool result of a run's outcome.
func (d *door) result(out *Outcome) *mcp.CallToolResult {
	switch {
	case out.waits():
		return suspendedResult(out)
	case out.Status == serve.StatusRunning || out.Status == serve.StatusQueued || out.Status == serve.StatusInterrupted:
		return runningResult(out)
	}
	return finalResult(d.byName[out.Result.Ensemble], out)
}

// suspendedResult is a run that waits for an answer: its id, the agent,
// the question and the schema of the answer, as JSON text and structured
// content. It is an error result: the call did not give the tool's
// output (clients check an output against outputSchema only when the
// result is no error).
func suspendedResult(out *Outcome) *mcp.CallToolResult {
	p := out.Result.PendingInput[0]
	v := map[string]any{"status": "suspended", "run_id": out.RunID, "agent": p.Agent,
		"question": out.Redact(p.Question), "schema": map[string]any{"type": "string"},
		"continue": "call ensemble_answer with run_id, agent and answer"}
	return jsonResult(v, true)
}

// runningResult is a run that has not ended.
func runningResult(out *Outcome) *mcp.CallToolResult {
	return jsonResult(map[string]any{"status": out.Status, "run_id": out.RunID,
		"continue": "call ensemble_status with run_id later"}, false)
}

// jsonResult is v as text and structured content.
func jsonResult(v any, isError bool) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{IsError: isError, StructuredContent: json.RawMessage(b),
		Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// finalResult is the result of a run that ended: its output when the
// file names its output agent and the run succeeded, else its result
// JSON (an error result when it exits non-zero).
func finalResult(e *ensemble.Ensemble, out *Outcome) *mcp.CallToolResult {
	res := out.Result
	if e != nil && e.Output != "" && res.ExitCode() == 0 {
		r, err := outputResult(e, res, out.Redact)
		if err != nil {
			return errorResult(err.Error())
		}
		return r
	}
	var buf strings.Builder
	if err := res.WriteJSON(&buf); err != nil {
		return errorResult(err.Error())
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Redact(buf.String())}}}
	r.IsError = res.ExitCode() != 0
	return r
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
