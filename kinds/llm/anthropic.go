package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"
)

// anthropicProvider speaks the Anthropic Messages API.
type anthropicProvider struct {
	cfg providerConfig
	ep  *endpoint
}

// anthropicBaseURL is Anthropic's API, the base_url when the profile sets
// none.
const anthropicBaseURL = "https://api.anthropic.com"

// anthropicVersion is the version of the Messages API spoken.
const anthropicVersion = "2023-06-01"

// anthropicDefaultTimeout is the per-request timeout when the profile sets
// none.
const anthropicDefaultTimeout = 10 * time.Minute

func newAnthropic(cfg providerConfig) *anthropicProvider {
	if cfg.profile.Timeout <= 0 {
		prof := *cfg.profile
		prof.Timeout = anthropicDefaultTimeout
		cfg.profile = &prof
	}
	base := cmp.Or(cfg.baseURL, anthropicBaseURL)
	header := http.Header{}
	header.Set("X-Api-Key", cfg.apiKey)
	header.Set("Anthropic-Version", anthropicVersion)
	ep := newEndpoint(cfg, ProviderAnthropic, strings.TrimRight(base, "/")+"/v1/messages", header)
	ep.retryTimeouts = true
	ep.apiError = anthropicError
	return &anthropicProvider{cfg: cfg, ep: ep}
}

// anthropicError is the error of an error response:
// {"type": "error", "error": {"type", "message"}}, or the body as sent.
func anthropicError(status int, body []byte) error {
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error.Message != "" {
		return apiError(ProviderAnthropic, status, env.Error.Type, env.Error.Message)
	}
	return apiError(ProviderAnthropic, status, "", strings.TrimSpace(string(body)))
}

// The request body of the Messages API.
type (
	anRequest struct {
		Model       string        `json:"model"`
		MaxTokens   int           `json:"max_tokens"`
		System      []anBlock     `json:"system,omitempty"`
		Messages    []anMessage   `json:"messages"`
		Temperature *float64      `json:"temperature,omitempty"`
		Tools       []anTool      `json:"tools,omitempty"`
		ToolChoice  *anToolChoice `json:"tool_choice,omitempty"`
		Stream      bool          `json:"stream,omitempty"`
	}
	anMessage struct {
		Role    string    `json:"role"`
		Content []anBlock `json:"content"`
	}
	// anBlock is a content block: text, tool_use or tool_result.
	anBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   []anBlock       `json:"content,omitempty"`
		IsError   *bool           `json:"is_error,omitempty"`
	}
	anTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
	anToolChoice struct {
		Type string `json:"type"`
		Name string `json:"name,omitempty"`
	}
)

// The reply of the Messages API, and its streamed events.
type (
	anMessageReply struct {
		Content    []anReplyBlock `json:"content"`
		StopReason string         `json:"stop_reason"`
		Usage      anUsage        `json:"usage"`
	}
	anReplyBlock struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	anUsage struct {
		InputTokens              count `json:"input_tokens"`
		OutputTokens             count `json:"output_tokens"`
		CacheCreationInputTokens count `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     count `json:"cache_read_input_tokens"`
	}
	anEvent struct {
		Type         string         `json:"type"`
		Message      anMessageReply `json:"message"`
		Index        int            `json:"index"`
		ContentBlock anReplyBlock   `json:"content_block"`
		Delta        struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Usage anUsage         `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
)

func (p *anthropicProvider) params(req *ChatRequest) *anRequest {
	prof := p.cfg.profile
	params := &anRequest{
		Model:       prof.Model,
		MaxTokens:   cmp.Or(max(prof.MaxTokens, 0), DefaultAnthropicMaxTokens),
		Messages:    anthropicMessages(req.Messages),
		Temperature: prof.Temperature,
	}
	if req.System != "" {
		params.System = []anBlock{textBlock(req.System)}
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: anthropicSchema(t.Schema)})
	}
	outputTool(params, req.Output, req.Tools)
	return params
}

func textBlock(s string) anBlock { return anBlock{Type: "text", Text: s} }

// anthropicMessages maps the neutral messages: tool results become
// tool_result blocks (with is_error) of a user message, consecutive messages
// of one role are merged into one message, and a conversation that (after
// trimming) starts with the assistant gets a short user note first, since
// the API wants the user to speak first.
func anthropicMessages(msgs []Message) []anMessage {
	out := make([]anMessage, 0, len(msgs)+1)
	add := func(role string, blocks ...anBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anMessage{Role: role, Content: blocks})
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case RoleUser:
			if m.Content != "" {
				add("user", textBlock(m.Content))
			}
		case RoleTool:
			content := m.Content
			if content == "" {
				content = "(no output)"
			}
			isError := m.IsError
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: []anBlock{textBlock(content)}, IsError: &isError})
		case RoleAssistant:
			var blocks []anBlock
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, textBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				input := json.RawMessage(`{}`)
				if json.Valid([]byte(tc.Arguments)) && strings.HasPrefix(strings.TrimSpace(tc.Arguments), "{") {
					input = json.RawMessage(tc.Arguments)
				}
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
			add("assistant", blocks...)
		}
	}
	if len(out) > 0 && out[0].Role != "user" {
		note := anMessage{Role: "user", Content: []anBlock{textBlock("(earlier messages omitted)")}}
		out = append([]anMessage{note}, out...)
	}
	return out
}

// anthropicSchema is a JSON Schema as an input_schema, whose type must be
// object.
func anthropicSchema(schema map[string]any) map[string]any {
	s := maps.Clone(schema)
	if s == nil {
		s = map[string]any{}
	}
	s["type"] = "object"
	return s
}

func (p *anthropicProvider) Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	params := p.params(req)
	var (
		msg *anMessageReply
		err error
	)
	if req.OnText != nil {
		msg, err = p.stream(ctx, params, req.OnText)
	} else {
		msg, err = exchange[anMessageReply](ctx, p.ep, params, "a message")
	}
	if err != nil {
		return nil, p.ep.wrap(ctx, err)
	}
	u := msg.Usage
	out := &ChatResponse{
		InputTokens:  tokenCount(int64(u.InputTokens), int64(u.CacheCreationInputTokens), int64(u.CacheReadInputTokens)),
		OutputTokens: tokenCount(int64(u.OutputTokens)),
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Text = text.String()
	switch msg.StopReason {
	case "max_tokens", "model_context_window_exceeded":
		out.StopReason = replyMaxTokens
	case "refusal":
		out.StopReason = replyRefusal
		out.Refusal = out.Text
		if out.Refusal == "" {
			out.Refusal = "the model declined to answer"
		}
	default:
		if len(out.ToolCalls) > 0 {
			out.StopReason = replyToolUse
		} else {
			out.StopReason = replyEndTurn
		}
	}
	if usesOutputTool(req.Output, req.Tools) {
		outputReply(out)
	}
	return out, nil
}

// stream makes a streamed request and gathers its events into one reply:
// message_start brings the message, content_block_start a block, whose
// deltas add text (text_delta) or the input of a tool call
// (input_json_delta); message_delta brings the stop reason and the usage
// so far.
func (p *anthropicProvider) stream(ctx context.Context, params *anRequest, onText func(string)) (*anMessageReply, error) {
	params.Stream = true
	var (
		msg    anMessageReply
		inputs = map[int]*strings.Builder{} // the input streamed so far of a tool_use block
	)
	read := func(name string, data []byte) (bool, error) {
		var ev anEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, fmt.Errorf("a streamed event is not JSON: %w", err)
		}
		if name == "error" || ev.Type == "error" {
			return false, fmt.Errorf("received error while streaming: %s", streamError(ev.Error))
		}
		switch ev.Type {
		case "message_start":
			msg = ev.Message
		case "content_block_start":
			if len(msg.Content) >= maxStreamedCalls {
				return false, fmt.Errorf("a streamed reply has more than %d blocks", maxStreamedCalls)
			}
			msg.Content = append(msg.Content, ev.ContentBlock)
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= len(msg.Content) {
				return false, nil
			}
			b := &msg.Content[ev.Index]
			switch ev.Delta.Type {
			case "text_delta":
				b.Text += ev.Delta.Text
				if ev.Delta.Text != "" {
					onText(ev.Delta.Text)
				}
			case "input_json_delta":
				in := inputs[ev.Index]
				if in == nil {
					in = &strings.Builder{}
					inputs[ev.Index] = in
				}
				in.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			msg.StopReason = cmp.Or(ev.Delta.StopReason, msg.StopReason)
			u := ev.Usage
			msg.Usage.OutputTokens = cmp.Or(u.OutputTokens, msg.Usage.OutputTokens)
			msg.Usage.InputTokens = cmp.Or(u.InputTokens, msg.Usage.InputTokens)
			msg.Usage.CacheCreationInputTokens = cmp.Or(u.CacheCreationInputTokens, msg.Usage.CacheCreationInputTokens)
			msg.Usage.CacheReadInputTokens = cmp.Or(u.CacheReadInputTokens, msg.Usage.CacheReadInputTokens)
		case "message_stop":
			return true, nil
		}
		return false, nil
	}
	whole, err := p.ep.streamEvents(ctx, params, read)
	if err != nil {
		return nil, err
	}
	if whole != nil {
		var m anMessageReply
		if err := json.Unmarshal(whole, &m); err != nil {
			return nil, fmt.Errorf("the server answered without streaming, and its reply is not a message (%w); drop --stream", err)
		}
		for _, b := range m.Content {
			if b.Type == "text" && b.Text != "" {
				onText(b.Text)
			}
		}
		return &m, nil
	}
	for i, in := range inputs {
		msg.Content[i].Input = json.RawMessage(in.String())
	}
	return &msg, nil
}
