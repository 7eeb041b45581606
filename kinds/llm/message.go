package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/runners"
)

// Role is the author of a message.
type Role string

// The roles of a conversation. System messages are never stored: the system
// prompt is rebuilt from the profile and the agent on every execution.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // the result of one tool call
)

// Message is one message of a conversation in provider-neutral form. It is
// also the stored form (Result.Memory, the --state file), so its JSON is part
// of the state format: keep it backward compatible.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID, ToolName and IsError describe a tool result (RoleTool).
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
}

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the arguments object as JSON text, exactly as the model
	// sent it (it may be invalid).
	Arguments string `json:"arguments"`
}

// memoryVersion is the version of the stored conversation format.
const memoryVersion = 1

// memory is what Result.Memory holds: the agent's whole conversation, never
// trimmed, without the system prompt.
type memory struct {
	Version  int       `json:"version"`
	Messages []Message `json:"messages"`
	// From names the execution that left this memory (its turn and
	// number), which the record of the next execution refers to instead of
	// copying the messages (llmtrace.MemoryRef); absent in memories of
	// older versions.
	From *memoryFrom `json:"from,omitempty"`
}

type memoryFrom struct {
	Turn      int `json:"turn"`
	Execution int `json:"execution"`
}

func decodeMemory(raw json.RawMessage) ([]Message, *memoryFrom, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil, nil
	}
	var m memory
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, fmt.Errorf("stored conversation is unreadable: %w", err)
	}
	if m.Version > memoryVersion {
		return nil, nil, fmt.Errorf("stored conversation has version %d; this build reads up to %d", m.Version, memoryVersion)
	}
	return m.Messages, m.From, nil
}

func encodeMemory(msgs []Message, from *memoryFrom) json.RawMessage {
	if msgs == nil {
		msgs = []Message{}
	}
	b, err := json.Marshal(memory{Version: memoryVersion, Messages: msgs, From: from})
	if err != nil { // cannot happen: only strings and bools
		return nil
	}
	return b
}

// systemPrompt is the profile's system prompt, then the agent's (docs/llm.md#messages-and-memory).
func systemPrompt(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	return b.String()
}

// userMessage builds the user message of one execution (docs/llm.md#messages-and-memory).
//
// The first execution (no stored conversation) gets the run's input and the
// output behind every satisfied edge, in the order of the agent's
// dependencies; later ones get only the outputs named in req.Fresh. Request
// parameters (docs/semantics.md#agent-requests) are added to either. Each output is labelled with the
// dependency's name; outputs that are not strings are JSON-encoded:
//
//	Input:
//	Sales figures for Q3
//
//	Output of data_extractor:
//	{"region":"EMEA","revenue":12}
//
//	Request parameters:
//	{"focus":"EMEA"}
//
// An agent with an input template is given its text instead, at every
// execution (docs/semantics.md#what-an-agent-receives).
func userMessage(req *agent.Request, first bool) string {
	if m, ok := runners.Given(req); ok {
		if strings.TrimSpace(m) == "" {
			return "(no input)"
		}
		return m
	}
	if m := runners.Labelled(req, first, depOrder(req, first)); m != "" {
		return m
	}
	if first {
		return "(no input)"
	}
	return "(no new input)"
}

// depOrder lists the dependencies to show: every satisfied one on the first
// execution (Request.DependencyOrder), only the fresh ones later.
func depOrder(req *agent.Request, first bool) []string {
	if !first {
		out := make([]string, 0, len(req.Fresh))
		for _, n := range req.Fresh {
			if _, ok := req.Dependencies[n]; ok {
				out = append(out, n)
			}
		}
		return out
	}
	return req.DependencyOrder()
}

// memoryCache remembers the conversations this runner encoded, by a hash of
// their JSON, so that the next execution of the agent (which hands the same
// bytes back through the engine's state) does not decode them again: with
// long conversations decoding is the largest part of the loop's own cost.
// Entries are immutable; the cache is cleared when full.
type memoryCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[uint64]memoryEntry
}

type memoryEntry struct {
	size int
	msgs []Message
	from *memoryFrom
}

const memoryCacheMax = 1024

func newMemoryCache() *memoryCache {
	return &memoryCache{seed: maphash.MakeSeed(), m: map[uint64]memoryEntry{}}
}

func (c *memoryCache) put(raw []byte, msgs []Message, from *memoryFrom) {
	if len(raw) == 0 {
		return
	}
	key := maphash.Bytes(c.seed, raw)
	c.mu.Lock()
	if len(c.m) >= memoryCacheMax {
		clear(c.m)
	}
	c.m[key] = memoryEntry{size: len(raw), msgs: msgs, from: from}
	c.mu.Unlock()
}

// decode is decodeMemory through the cache. The result must not be
// modified.
func (c *memoryCache) decode(raw []byte) ([]Message, *memoryFrom, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	key := maphash.Bytes(c.seed, raw)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && e.size == len(raw) {
		return e.msgs, e.from, nil
	}
	msgs, from, err := decodeMemory(raw)
	if err == nil {
		c.put(raw, msgs, from)
	}
	return msgs, from, err
}
