package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// openaiProvider speaks OpenAI Chat Completions: OpenAI itself, any
// compatible server through base_url, and Ollama's /v1 endpoint.
type openaiProvider struct {
	cfg  providerConfig
	name string // "openai" or "ollama", for messages
	ep   *endpoint
	// official is true when talking to OpenAI itself: it gets
	// max_completion_tokens, compatible servers the older max_tokens that
	// they all understand.
	official bool
}

// openaiBaseURL is OpenAI's API, the openai provider's base_url when the
// profile sets none.
const openaiBaseURL = "https://api.openai.com/v1"

// openaiMaxRetryAfter is the longest Retry-After an OpenAI-compatible
// request waits for (Options.MaxRetryDelay, when set, instead).
const openaiMaxRetryAfter = 2 * time.Minute

func newOpenAI(cfg providerConfig) *openaiProvider {
	base := cfg.baseURL
	if base == "" {
		base = openaiBaseURL
	}
	header := http.Header{}
	if cfg.apiKey != "" {
		header.Set("Authorization", "Bearer "+cfg.apiKey)
	}
	p := &openaiProvider{
		cfg:      cfg,
		name:     cfg.profile.Provider,
		official: cfg.profile.Provider == ProviderOpenAI && isOpenAIItself(cfg.baseURL),
	}
	p.ep = newEndpoint(cfg, p.name, strings.TrimRight(base, "/")+"/chat/completions", header)
	p.ep.maxRetryAfter = cmp.Or(cfg.maxRetryDelay, openaiMaxRetryAfter)
	p.ep.apiError = p.apiError
	return p
}

// isOpenAIItself reports whether baseURL is OpenAI's own API: none, or one
// naming api.openai.com (as base_url: ${OPENAI_BASE_URL} may).
func isOpenAIItself(baseURL string) bool {
	if baseURL == "" {
		return true
	}
	u, err := url.Parse(baseURL)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// apiError is the error of an error response. OpenAI answers
// {"error": {"message", "type", "code"}}; compatible servers (Ollama,
// proxies) also {"error": "text"} or plain text, whose text is the message.
func (p *openaiProvider) apiError(status int, body []byte) error {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	detail := strings.TrimSpace(string(body))
	kind := ""
	if json.Unmarshal(body, &env) == nil && len(env.Error) > 0 {
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(env.Error, &s) == nil:
			detail = s
		case json.Unmarshal(env.Error, &e) == nil:
			detail = cmp.Or(e.Message, strings.TrimSpace(string(env.Error)))
			code := strings.Trim(string(e.Code), `"`)
			if code == "null" || code == strconv.Itoa(status) { // OpenRouter: "code": 402
				code = ""
			}
			kind = cmp.Or(code, e.Type)
		}
	}
	return apiError(p.name, status, kind, detail)
}

// The request body of Chat Completions.
type (
	oaRequest struct {
		Model               string            `json:"model"`
		Messages            []oaMessage       `json:"messages"`
		Temperature         *float64          `json:"temperature,omitempty"`
		MaxTokens           int               `json:"max_tokens,omitempty"`
		MaxCompletionTokens int               `json:"max_completion_tokens,omitempty"`
		Tools               []oaTool          `json:"tools,omitempty"`
		ResponseFormat      *oaResponseFormat `json:"response_format,omitempty"`
		Stream              bool              `json:"stream,omitempty"`
		StreamOptions       *oaStreamOptions  `json:"stream_options,omitempty"`
	}
	oaMessage struct {
		Role string `json:"role"`
		// Content is omitted only for an assistant message of tool calls.
		Content    *string      `json:"content,omitempty"`
		ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
		ToolCallID string       `json:"tool_call_id,omitempty"`
	}
	oaToolCall struct {
		// Index is the call's place in a streamed reply.
		Index    int        `json:"index"`
		ID       string     `json:"id"`
		Type     string     `json:"type"`
		Function oaFunction `json:"function"`
	}
	oaFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	oaTool struct {
		Type     string        `json:"type"`
		Function oaFunctionDef `json:"function"`
	}
	oaFunctionDef struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	}
	oaResponseFormat struct {
		Type       string       `json:"type"`
		JSONSchema oaJSONSchema `json:"json_schema"`
	}
	oaJSONSchema struct {
		Name   string         `json:"name"`
		Schema map[string]any `json:"schema"`
		Strict bool           `json:"strict"`
	}
	oaStreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	}
)

// MarshalJSON leaves out the index, which only replies have.
func (c oaToolCall) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID       string     `json:"id"`
		Type     string     `json:"type"`
		Function oaFunction `json:"function"`
	}{c.ID, c.Type, c.Function})
}

// The reply of Chat Completions, and its streamed chunks.
type (
	oaCompletion struct {
		Choices []oaChoice `json:"choices"`
		Usage   oaUsage    `json:"usage"`
	}
	oaChoice struct {
		Index        int         `json:"index"`
		Message      oaReplyBody `json:"message"`
		Delta        oaReplyBody `json:"delta"`
		FinishReason string      `json:"finish_reason"`
	}
	oaReplyBody struct {
		Content      text         `json:"content"`
		Refusal      text         `json:"refusal"`
		ToolCalls    []oaToolCall `json:"tool_calls"`
		FunctionCall oaFunction   `json:"function_call"` // legacy
	}
	oaUsage struct {
		PromptTokens     count `json:"prompt_tokens"`
		CompletionTokens count `json:"completion_tokens"`
	}
)

func str(s string) *string { return &s }

func (p *openaiProvider) params(req *ChatRequest) *oaRequest {
	prof := p.cfg.profile
	params := &oaRequest{
		Model:       prof.Model,
		Messages:    make([]oaMessage, 0, len(req.Messages)+1),
		Temperature: prof.Temperature,
	}
	if req.System != "" {
		params.Messages = append(params.Messages, oaMessage{Role: "system", Content: str(req.System)})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, oaMessage{Role: "user", Content: str(m.Content)})
		case RoleAssistant:
			a := oaMessage{Role: "assistant"}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content = str(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oaToolCall{ID: tc.ID, Type: "function",
					Function: oaFunction{Name: tc.Name, Arguments: tc.Arguments}})
			}
			params.Messages = append(params.Messages, a)
		case RoleTool:
			content := m.Content
			if m.IsError {
				// Chat Completions has no error flag on tool results.
				content = "Error: " + content
			}
			params.Messages = append(params.Messages, oaMessage{Role: "tool", Content: str(content), ToolCallID: m.ToolCallID})
		}
	}
	if prof.MaxTokens > 0 {
		if p.official {
			params.MaxCompletionTokens = prof.MaxTokens
		} else {
			params.MaxTokens = prof.MaxTokens
		}
	}
	// tool_choice is never sent: "auto" is the default everywhere, and
	// Ollama rejects it.
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, oaTool{Type: "function",
			Function: oaFunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Schema}})
	}
	p.responseFormat(params, req.Output)
	return params
}

func (p *openaiProvider) Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	params := p.params(req)
	var (
		cc  *oaCompletion
		err error
	)
	if req.OnText != nil {
		cc, err = p.stream(ctx, params, req.OnText)
	} else {
		cc, err = exchange[oaCompletion](ctx, p.ep, params, "a chat completion")
	}
	if err != nil {
		return nil, p.ep.wrap(ctx, err)
	}
	if len(cc.Choices) == 0 {
		return nil, &providerError{msg: p.name + ": the response has no choices"}
	}
	ch := cc.Choices[0]
	out := &ChatResponse{
		Text:         string(ch.Message.Content),
		Refusal:      string(ch.Message.Refusal),
		InputTokens:  tokenCount(int64(cc.Usage.PromptTokens)),
		OutputTokens: tokenCount(int64(cc.Usage.CompletionTokens)),
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never declared
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if fc := ch.Message.FunctionCall; len(out.ToolCalls) == 0 && fc.Name != "" {
		out.ToolCalls = append(out.ToolCalls, ToolCall{Name: fc.Name, Arguments: fc.Arguments})
	}
	switch ch.FinishReason {
	case "length":
		out.StopReason = replyMaxTokens
	case "content_filter":
		out.StopReason = replyRefusal
		if out.Refusal == "" {
			out.Refusal = "the response was blocked by the provider's content filter"
		}
	default:
		// "stop", "tool_calls", "function_call", or whatever a compatible
		// server says: tool calls decide (Ollama reports "stop" with them).
		switch {
		case out.Refusal != "":
			out.StopReason = replyRefusal
		case len(out.ToolCalls) > 0:
			out.StopReason = replyToolUse
		default:
			out.StopReason = replyEndTurn
		}
	}
	return out, nil
}

// stream makes a streamed request and gathers its chunks into one reply:
// the first choice's text, refusal and tool calls (by index: the first
// chunk of a call brings its id and name, the others more arguments), and
// the usage the last chunk reports.
func (p *openaiProvider) stream(ctx context.Context, params *oaRequest, onText func(string)) (*oaCompletion, error) {
	params.Stream = true
	params.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	var (
		msg    oaReplyBody
		finish string
		usage  oaUsage
		calls  = map[int]int{} // the index of a streamed call → its place in msg.ToolCalls
		seen   bool
	)
	read := func(_ string, data []byte) (bool, error) {
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			return true, nil
		}
		var chunk struct {
			oaCompletion
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return false, fmt.Errorf("a streamed chunk is not JSON: %w", err)
		}
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			return false, fmt.Errorf("received error while streaming: %s", streamError(chunk.Error))
		}
		usage.PromptTokens = satAdd(usage.PromptTokens, chunk.Usage.PromptTokens)
		usage.CompletionTokens = satAdd(usage.CompletionTokens, chunk.Usage.CompletionTokens)
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			seen = true
			d := c.Delta
			if d.Content != "" {
				msg.Content += d.Content
				onText(string(d.Content))
			}
			msg.Refusal += d.Refusal
			msg.FunctionCall.Name += d.FunctionCall.Name
			msg.FunctionCall.Arguments += d.FunctionCall.Arguments
			for _, tc := range d.ToolCalls {
				i, ok := calls[tc.Index]
				if !ok {
					if len(msg.ToolCalls) >= maxStreamedCalls {
						return false, fmt.Errorf("a streamed reply has more than %d tool calls", maxStreamedCalls)
					}
					i = len(msg.ToolCalls)
					calls[tc.Index] = i
					msg.ToolCalls = append(msg.ToolCalls, oaToolCall{})
				}
				call := &msg.ToolCalls[i]
				call.ID = cmp.Or(tc.ID, call.ID)
				call.Type = cmp.Or(tc.Type, call.Type)
				call.Function.Name += tc.Function.Name
				call.Function.Arguments += tc.Function.Arguments
			}
			finish = cmp.Or(c.FinishReason, finish)
		}
		return false, nil
	}
	whole, err := p.ep.streamEvents(ctx, params, read)
	if err != nil {
		return nil, err
	}
	if whole != nil {
		var cc oaCompletion
		if err := json.Unmarshal(whole, &cc); err != nil {
			return nil, fmt.Errorf("the server answered without streaming, and its reply is not a chat completion (%w); drop --stream", err)
		}
		if len(cc.Choices) > 0 && cc.Choices[0].Message.Content != "" {
			onText(string(cc.Choices[0].Message.Content))
		}
		return &cc, nil
	}
	cc := &oaCompletion{Usage: usage}
	if seen {
		cc.Choices = []oaChoice{{Message: msg, FinishReason: finish}}
	}
	return cc, nil
}

// maxStreamedCalls bounds the tool calls a streamed reply gathers (the
// runner runs at most MaxToolCallsPerReply of them).
const maxStreamedCalls = 4096

// streamError is the text of an error chunk's error: its message, or the
// JSON as sent.
func streamError(raw json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// satAdd adds two counts, saturating.
func satAdd(a, b count) count {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
