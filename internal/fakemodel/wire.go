package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// finish is the reply's finish reason in the Chat Completions format.
func (rep Reply) finish() string {
	switch {
	case rep.Finish != "":
		return rep.Finish
	case len(rep.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (rep Reply) calls() []Call {
	out := make([]Call, len(rep.Calls))
	for i, c := range rep.Calls {
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(i+1)
		}
		if c.Args == "" {
			c.Args = "{}"
		}
		out[i] = c
	}
	return out
}

func model(req Request) string {
	if req.Model == "" {
		return "fake-model"
	}
	return req.Model
}

// chatBody is a reply in the Chat Completions format.
func chatBody(req Request, rep Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rep.Text}
	if calls := rep.calls(); len(calls) > 0 {
		if rep.Text == "" {
			msg["content"] = nil
		}
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = tcs
	}
	return map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": model(req),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.finish(), "logprobs": nil}},
		"usage":   chatUsage(rep.Usage),
	}
}

func chatUsage(u *Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.In, "completion_tokens": u.Out, "total_tokens": u.In + u.Out}
}

// pieces are the text a streamed reply sends, piece by piece.
func (rep Reply) pieces() []string {
	if rep.Chunks != nil {
		return rep.Chunks
	}
	if rep.Text == "" {
		return nil
	}
	return []string{rep.Text}
}

// sse writes server-sent events, flushing each.
type sse struct{ w http.ResponseWriter }

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	return sse{w}
}

func (s sse) send(event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(s.w, "event: %s\n", event)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// chatStream streams a reply as Chat Completions chunks: the role with the
// first piece of text, the other pieces, each tool call (its name, then its
// arguments), the finish reason, the usage when the request asked for it
// (stream_options.include_usage), and [DONE].
func chatStream(w http.ResponseWriter, req Request, rep Reply) {
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000, "model": model(req),
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	delta := map[string]any{"role": "assistant", "content": ""}
	for _, p := range rep.pieces() {
		delta["content"] = p
		s.send("", chunk(delta, nil))
		delta = map[string]any{}
	}
	for i, c := range rep.calls() {
		head := map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
		delta["tool_calls"] = []any{head}
		s.send("", chunk(delta, nil))
		delta = map[string]any{}
		s.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c.Args}}}}, nil))
	}
	s.send("", chunk(map[string]any{}, rep.finish()))
	if opts, _ := req.Body["stream_options"].(map[string]any); opts["include_usage"] == true {
		s.send("", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000,
			"model": model(req), "choices": []any{}, "usage": chatUsage(rep.Usage)})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// anthropicStop is the reply's stop reason in the Messages format.
func (rep Reply) anthropicStop() string {
	switch rep.finish() {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "stop":
		return "end_turn"
	}
	return rep.Finish
}

// anthropicBlocks are the reply's content blocks.
func (rep Reply) anthropicBlocks() []map[string]any {
	var blocks []map[string]any
	if rep.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.calls() {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Args)})
	}
	return blocks
}

// anthropicBody is a reply in the Messages format.
func anthropicBody(req Request, rep Reply) map[string]any {
	return map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model(req),
		"content": rep.anthropicBlocks(), "stop_reason": rep.anthropicStop(), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": rep.Usage.In, "output_tokens": rep.Usage.Out},
	}
}

// anthropicStream streams a reply as the Messages API's events.
func anthropicStream(w http.ResponseWriter, rep Reply) {
	s := newSSE(w)
	s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "content": []any{}, "stop_reason": nil,
		"usage": map[string]any{"input_tokens": rep.Usage.In, "output_tokens": 1}}})
	i := 0
	if pieces := rep.pieces(); len(pieces) > 0 {
		s.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces {
			s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": p}})
		}
		s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for _, c := range rep.calls() {
		s.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": c.Args}})
		s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	s.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": rep.anthropicStop(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.Usage.Out}})
	s.send("message_stop", map[string]any{"type": "message_stop"})
}
