package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// A run with a recording folder (ensemble run --record/--replay,
// docs/recording.md) records or replays every model request here, at the
// neutral layer: simulated users, tool loops, fallbacks, fan-out instances
// and child ensembles all go through route.chat.

// cassetteRequest is the neutral request as recorded: the profile's
// provider, model and parameters, and what is sent.
func cassetteRequest(p *ensemble.ModelProfile, req *ChatRequest) *cassette.Request {
	cr := &cassette.Request{
		Provider:    p.Provider,
		Model:       p.Model,
		MaxTokens:   p.MaxTokens,
		Temperature: p.Temperature,
		Options:     p.Options,
		System:      req.System,
		Messages:    make([]cassette.Message, len(req.Messages)),
	}
	for _, t := range req.Tools {
		cr.Tools = append(cr.Tools, cassette.Tool{Name: t.Name, Description: t.Description, Schema: t.Schema})
	}
	if o := req.Output; o != nil {
		cr.Output = &cassette.Output{Name: o.Name, Schema: o.Schema, Strict: o.Strict}
	}
	for i, m := range req.Messages {
		cr.Messages[i] = cassette.Message{Role: string(m.Role), Content: m.Content, ToolCalls: toCassetteCalls(m.ToolCalls),
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError}
	}
	return cr
}

func toCassetteCalls(calls []ToolCall) []cassette.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]cassette.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = cassette.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return out
}

// cassetteResponse is a reply, or the error of a request that ended
// without one, as recorded.
func cassetteResponse(resp *ChatResponse, err error) *cassette.Response {
	if err != nil {
		e := &cassette.Error{Message: err.Error()}
		var pe *providerError
		if errors.As(err, &pe) {
			e.Status, e.Unreachable = pe.status, pe.unreachable
		}
		return &cassette.Response{Error: e}
	}
	cr := &cassette.Response{Text: resp.Text, StopReason: resp.StopReason, Refusal: resp.Refusal,
		InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens, ToolCalls: toCassetteCalls(resp.ToolCalls)}
	return cr
}

// replayedResponse is a recorded exchange as the provider would have
// returned it; a recorded error comes back as the same provider error (a
// 5xx still falls back).
func replayedResponse(rec *cassette.Response) (*ChatResponse, error) {
	if e := rec.Error; e != nil {
		return nil, &providerError{msg: e.Message, status: e.Status, unreachable: e.Unreachable}
	}
	resp := &ChatResponse{Text: rec.Text, StopReason: rec.StopReason, Refusal: rec.Refusal,
		InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens}
	for _, c := range rec.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return resp, nil
}

// recorder is what one execution's route records and replays with.
type recorder struct {
	cas   *cassette.Cassette
	agent string // the agent's path (agent.Request.Name)
	sec   *secrets
	// maxReply caps a replayed reply as a live one is (MaxReply).
	maxReply int64
}

// replay looks req up for profile p: (nil, nil) when it goes to the model.
func (rc *recorder) replay(p *ensemble.ModelProfile, req *ChatRequest) (*cassette.Request, *cassette.Response, error) {
	if rc == nil {
		return nil, nil, nil
	}
	cr := cassetteRequest(p, req)
	cr = rc.redacted(cr)
	rec, err := rc.cas.Replayed(rc.agent, cr)
	if err == nil && rec != nil && rec.Size() > rc.maxReply {
		// As a live reply over the cap: failed, never passed on or
		// retried, whichever file it comes from.
		return cr, nil, fmt.Errorf("recording: %s: the reply recorded for agent %q: %w",
			rc.cas.Path(rc.agent), rc.agent, &errReplyTooLarge{limit: rc.maxReply})
	}
	return cr, rec, err
}

// redacted is cr with the keys redacted from its text, as it is recorded,
// so that a request carrying a key is found again.
func (rc *recorder) redacted(cr *cassette.Request) *cassette.Request {
	if rc.sec.r.Empty() {
		return cr
	}
	cp := *cr
	cp.System = rc.sec.redact(cp.System)
	cp.Options = cassette.RedactValue(cr.Options, rc.sec.redact).(map[string]any)
	cp.Messages = make([]cassette.Message, len(cr.Messages))
	for i, m := range cr.Messages {
		m.Content = rc.sec.redact(m.Content)
		if len(m.ToolCalls) > 0 {
			calls := make([]cassette.ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.Arguments = rc.sec.redact(c.Arguments)
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		cp.Messages[i] = m
	}
	return &cp
}

// record writes what a request to the model returned; a request cut short
// by cancellation is not recorded (it has no answer to replay).
func (rc *recorder) record(ctx context.Context, cr *cassette.Request, resp *ChatResponse, err error) error {
	if rc == nil || ctx.Err() != nil {
		return nil
	}
	return rc.cas.Record(rc.agent, cr, cassetteResponse(resp, err), rc.sec.redact)
}

// recordedTool runs a call, or serves its recorded result when the run's
// recording has one (recorded with --record-tools); with --record-tools it
// records what the call gave. A call cut short by cancellation is not
// recorded.
func (r *Runner) recordedTool(ctx context.Context, req *agent.Request, ts *toolSet, c ToolCall, sec *secrets) (string, error) {
	cas := opaque.Get(req.Services.Recording)
	if cas == nil {
		return r.runTool(ctx, req, ts, c)
	}
	agent := req.Name()
	rec, ok, err := cas.Tool(agent, c.Name, c.Arguments)
	if err != nil {
		return "", toolErrorf("tool %q: %v", c.Name, err)
	}
	if ok {
		if int64(len(rec.Result)) > r.maxToolOutput { // as a live result is
			return "", toolErrorf("tool %q: recording %s: the result recorded for agent %q is more than %d bytes",
				c.Name, cas.Path(agent), agent, r.maxToolOutput)
		}
		if rec.IsError {
			return "", toolErrorf("%s", rec.Result)
		}
		return rec.Result, nil
	}
	content, err := r.runTool(ctx, req, ts, c)
	if ctx.Err() == nil {
		res := cassette.ToolResult{Tool: c.Name, Arguments: c.Arguments, Result: content}
		if err != nil {
			res.Result, res.IsError = err.Error(), true
		}
		if rerr := cas.RecordTool(agent, res, sec.redact); rerr != nil {
			return "", toolErrorf("tool %q: %v", c.Name, rerr)
		}
	}
	return content, err
}
