package llm

import (
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/llmtrace"
	"github.com/ensemble-run/ensemble/state"
)

// The record of an execution's model requests (docs/llm.md#what-is-recorded),
// kept in its llmtrace.Detail. Messages are never copied: a request names
// the ranges of the conversation (the memory, then the execution's own
// messages) it sent, and the memory is a reference to the execution that
// left it, read from the memory itself, so recording costs no look-up of
// the run's history.

func init() { state.RegisterDetail(llmtrace.Detail) }

type callTrace struct{ llmtrace.Trace }

// newTrace starts the trace of an execution whose memory holds n messages,
// left by from (nil: a memory of an older version, or none).
func newTrace(system string, from *memoryFrom, n int) *callTrace {
	t := &callTrace{}
	t.System = system
	if n > 0 && from != nil {
		t.Memory = &llmtrace.MemoryRef{Turn: from.Turn, Execution: from.Execution, Messages: n}
	}
	return t
}

// offer notes the tools and response format the requests carry.
func (t *callTrace) offer(req *ChatRequest) {
	for _, s := range req.Tools {
		t.Tools = append(t.Tools, llmtrace.Tool{Name: s.Name, Description: s.Description, Schema: s.Schema})
	}
	if o := req.Output; o != nil {
		t.ResponseFormat = &llmtrace.ResponseFormat{Name: o.Name, Schema: o.Schema, Strict: o.Strict}
	}
}

// add records one request to p that sent sent, a selection of conv.
func (t *callTrace) add(p *ensemble.ModelProfile, conv, sent []Message, resp *ChatResponse, u *state.Usage, err error, d time.Duration, sec *secrets) {
	r := llmtrace.Request{Profile: p.Name, Provider: p.Provider, Model: p.Model, Temperature: p.Temperature,
		MaxTokens: p.MaxTokens, Sent: ranges(conv, sent), LatencyMS: float64(d.Microseconds()) / 1000}
	if len(p.Options) > 0 {
		r.Options = p.Options
	}
	if err != nil {
		r.Error = sec.redactError(err).Error()
	} else {
		r.StopReason = resp.StopReason
	}
	if u != nil {
		r.Usage = &llmtrace.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost}
	}
	t.Requests = append(t.Requests, r)
}

// replyAt sets where the last request's reply is in the conversation (from
// 1; 0 for nowhere).
func (t *callTrace) replyAt(n int) {
	if len(t.Requests) > 0 {
		t.Requests[len(t.Requests)-1].Reply = n
	}
}

// ranges are the ranges of conv that sent holds: sent is conv, or conv
// with some messages left out (trimWindow), in order.
func ranges(conv, sent []Message) [][2]int {
	if len(sent) == len(conv) {
		return [][2]int{{0, len(conv)}}
	}
	var out [][2]int
	j := 0
	for i := range sent {
		for j < len(conv) && !sameMessage(&conv[j], &sent[i]) {
			j++
		}
		if j == len(conv) {
			break
		}
		if n := len(out); n > 0 && out[n-1][1] == j {
			out[n-1][1] = j + 1
		} else {
			out = append(out, [2]int{j, j + 1})
		}
		j++
	}
	return out
}

func sameMessage(a, b *Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && len(a.ToolCalls) == len(b.ToolCalls) &&
		(len(a.ToolCalls) == 0 || &a.ToolCalls[0] == &b.ToolCalls[0] || a.ToolCalls[0].ID == b.ToolCalls[0].ID)
}
