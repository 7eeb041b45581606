package fakemodel

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// maxBody is how much of a request body the server reads.
const maxBody = 8 << 20

// Request is one request as the server received it, and what it says.
type Request struct {
	N       int // its place, from 0
	Method  string
	Path    string
	Query   string // raw
	Header  http.Header
	Raw     string         // the body
	Body    map[string]any // the body decoded (nil if it is not a JSON object)
	Context context.Context

	Model    string
	Stream   bool
	System   string    // the system (and developer) messages' text
	Messages []Message // every message, the system ones included
	Tools    []string  // the names of the tools offered
}

// Message is one message of a request. An Anthropic user message made of
// tool results has the role "tool".
type Message struct {
	Role       string
	Content    string // its text: a string content, or its parts' text joined
	ToolCallID string
	Calls      []Call
}

// Last is the request's last message (empty if it has none).
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// LastUser is the text of the request's last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Auth is the API key the request carries (Authorization: Bearer, or
// x-api-key).
func (r Request) Auth() string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func read(r *http.Request) Request {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(),
		Raw: string(raw), Context: r.Context()}
	_ = json.Unmarshal(raw, &req.Body)
	var body struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"` // Anthropic's
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Name     string `json:"name"` // Anthropic's
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return req
	}
	req.Model, req.Stream = body.Model, body.Stream
	if len(body.System) > 0 {
		req.System = text(body.System)
		req.Messages = append(req.Messages, Message{Role: "system", Content: req.System})
	}
	for _, m := range body.Messages {
		msg := Message{Role: m.Role, Content: text(m.Content), ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.Calls = append(msg.Calls, Call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments})
		}
		if m.Role == "user" && toolResults(m.Content) {
			msg.Role = "tool"
		}
		if m.Role == "system" || m.Role == "developer" {
			req.System += msg.Content
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range body.Tools {
		name := t.Function.Name
		if name == "" {
			name = t.Name
		}
		req.Tools = append(req.Tools, name)
	}
	return req
}

// part is a part of a message's content, in either wire format.
type part struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // an Anthropic tool result's
}

// text is a content's text: a string, or its parts' text joined.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []part
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "tool_result" {
			b.WriteString(text(p.Content))
			continue
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

func toolResults(raw json.RawMessage) bool {
	var parts []part
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if p.Type != "tool_result" {
			return false
		}
	}
	return true
}
