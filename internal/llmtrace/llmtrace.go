// Package llmtrace is the record of the model requests of one LLM
// execution (docs/llm.md#what-is-recorded): what the LLM kind stores in a
// record's Detail, and how the message list each request sent is rebuilt
// from it, the memory the agent had and the messages the execution added.
// The kind writes it, the inspector reads it; neither imports the other.
package llmtrace

import (
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Detail is the key of the record detail that holds a Trace.
const Detail = "model_requests"

// MaxBytes bounds a Trace's JSON: over it, the tools' descriptions and
// schemas and the response format's schema are dropped (Truncated).
const MaxBytes = 256 << 10

// Trace is the model requests of one execution. Messages are not copied:
// each request names the ranges of the execution's conversation it sent,
// which is the memory the agent had (Memory: a reference to the execution
// that left it) followed by the messages this execution added.
type Trace struct {
	// System is the system prompt every request sent ("" when none).
	System string `json:"system,omitempty"`
	// Memory is where the conversation before this execution comes from;
	// nil on an agent's first execution.
	Memory *MemoryRef `json:"memory_from,omitempty"`
	// Tools are the tools offered to the model, as sent.
	Tools []Tool `json:"tools,omitempty"`
	// ResponseFormat is the structured output asked for (an output_schema).
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// Truncated is set when schemas and descriptions were dropped (MaxBytes).
	Truncated bool      `json:"truncated,omitempty"`
	Requests  []Request `json:"requests"`
}

// MemoryRef names the execution of the same agent whose conversation was
// the memory sent: its first Messages messages, as the agent's memory held
// them after that execution's turn.
type MemoryRef struct {
	Turn      int `json:"turn"`
	Execution int `json:"execution"`
	Messages  int `json:"messages"`
}

// Tool is a tool as the model was offered it.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Schema      map[string]any `json:"schema,omitempty"`
}

// ResponseFormat is the native structured output a request asked for.
type ResponseFormat struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema,omitempty"`
	Strict bool           `json:"strict,omitempty"`
}

// Request is one model request of the tool loop (a fallback's attempt is
// one too).
type Request struct {
	Profile     string         `json:"profile"`
	Provider    string         `json:"provider"`
	Model       string         `json:"model"`
	Temperature *float64       `json:"temperature,omitempty"`
	MaxTokens   int            `json:"max_tokens,omitempty"`
	Options     map[string]any `json:"options,omitempty"`
	// Sent are the ranges [from, to) of the conversation the request sent,
	// in order (one range unless a context_window left messages out).
	Sent [][2]int `json:"sent"`
	// Reply is the place of the reply in the conversation, from 1; 0 when
	// it is not there (a failed request, a reply cut off before any text).
	Reply      int     `json:"reply,omitempty"`
	StopReason string  `json:"stop_reason,omitempty"`
	Error      string  `json:"error,omitempty"`
	LatencyMS  float64 `json:"latency_ms"`
	Usage      *Usage  `json:"usage,omitempty"`
}

// Usage is what one request used.
type Usage struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Cost         float64 `json:"cost,omitempty"`
}

// Bound drops what makes t larger than MaxBytes: the tools' descriptions
// and schemas, then the response format's schema.
func (t *Trace) Bound() {
	if size(t) <= MaxBytes {
		return
	}
	t.Truncated = true
	for i := range t.Tools {
		t.Tools[i].Description, t.Tools[i].Schema = "", nil
	}
	if t.ResponseFormat != nil {
		t.ResponseFormat.Schema = nil
	}
	if size(t) > MaxBytes && len(t.System) > MaxBytes/2 {
		n := MaxBytes / 2
		for n > 0 && !utf8.RuneStart(t.System[n]) {
			n--
		}
		t.System = t.System[:n]
	}
}

func size(t *Trace) int {
	b, _ := json.Marshal(t)
	return len(b)
}

// Sent is a request as it went out: the full message list, the system
// prompt first, and the reply.
type Sent struct {
	Request
	Messages []json.RawMessage `json:"messages"`
	Reply    json.RawMessage   `json:"reply,omitempty"`
	// Incomplete is set when the conversation rebuilt is shorter than the
	// ranges sent (a memory no longer stored).
	Incomplete bool `json:"incomplete,omitempty"`
	// Cut is set when the messages were left out: the requests before it
	// took up the size RebuildCapped allows.
	Cut bool `json:"cut,omitempty"`
}

// RebuildCapped is Rebuild, with the requests whose messages would take
// the message lists past limit bytes left without them (Cut).
func RebuildCapped(t *Trace, conv []json.RawMessage, limit int) []Sent {
	out := Rebuild(t, conv)
	total := 0
	for i := range out {
		n := 0
		for _, m := range out[i].Messages {
			n += len(m) + 1
		}
		if total+n > limit {
			out[i].Messages, out[i].Cut = nil, true
			continue
		}
		total += n
	}
	return out
}

// Rebuild is each request of t with the messages it sent, from conv: the
// memory sent (its first t.Memory.Messages messages) followed by the
// messages the execution added.
func Rebuild(t *Trace, conv []json.RawMessage) []Sent {
	var sys json.RawMessage
	if t.System != "" {
		sys, _ = json.Marshal(map[string]string{"role": "system", "content": t.System})
	}
	out := make([]Sent, len(t.Requests))
	for i, r := range t.Requests {
		s := Sent{Request: r}
		if sys != nil {
			s.Messages = append(s.Messages, sys)
		}
		for _, rg := range r.Sent {
			from, to := max(rg[0], 0), min(rg[1], len(conv))
			if to < rg[1] {
				s.Incomplete = true
			}
			for _, m := range conv[from:max(from, to)] {
				if m == nil {
					s.Incomplete = true
					continue
				}
				s.Messages = append(s.Messages, m)
			}
		}
		if r.Reply > 0 && r.Reply <= len(conv) {
			s.Reply = conv[r.Reply-1]
		}
		out[i] = s
	}
	return out
}

// Conversation is the conversation of an execution rebuilt from the memory
// it was sent (memSent, nil on a first execution) and the agent's memory
// after it (after): memSent, then what after holds beyond it. n is the
// number of memory messages the trace says were sent.
func Conversation(memSent, after []json.RawMessage, n int) []json.RawMessage {
	conv := slices.Clip(memSent[:min(n, len(memSent))])
	if n <= len(after) {
		conv = append(conv, after[n:]...)
	}
	return conv
}

// WithAdded is the conversation of an execution rebuilt from the memory
// it was sent (its first n messages; missing ones are nil) and the
// messages it added (its record's input_data, less the system prompt of a
// first execution), for an execution whose memory after is not at hand.
func WithAdded(memSent []json.RawMessage, n int, inputData any) []json.RawMessage {
	conv := make([]json.RawMessage, n)
	copy(conv, memSent)
	b, err := json.Marshal(inputData)
	if err != nil {
		return conv
	}
	var added []json.RawMessage
	if json.Unmarshal(b, &added) != nil {
		return conv
	}
	if len(added) > 0 {
		var first struct{ Role string }
		if json.Unmarshal(added[0], &first) == nil && first.Role == "system" {
			added = added[1:]
		}
	}
	return append(conv, added...)
}

// Messages are the messages of a stored memory ({"version":1,"messages":[...]}).
func Messages(memory json.RawMessage) []json.RawMessage {
	var m struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(memory, &m) != nil {
		return nil
	}
	return m.Messages
}
