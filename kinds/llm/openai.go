package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiProvider speaks OpenAI Chat Completions: OpenAI itself, any
// compatible server through base_url, and Ollama's /v1 endpoint.
type openaiProvider struct {
	cfg  providerConfig
	name string // "openai" or "ollama", for messages
	svc  openai.ChatCompletionService
	// official is true when talking to OpenAI itself: it gets
	// max_completion_tokens, compatible servers the older max_tokens that
	// they all understand.
	official bool
}

func newOpenAI(cfg providerConfig) *openaiProvider {
	// The service is built without openai.NewClient on purpose: NewClient
	// reads OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID… from the
	// environment, and keys must come only from api_key_env.
	opts := []option.RequestOption{
		option.WithHTTPClient(cfg.httpClient),
		option.WithMaxRetries(cfg.maxRetries),
		option.WithMiddleware(errorMiddleware, transportMiddleware(cfg.query, cfg.maxReply)),
	}
	if cfg.baseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.baseURL))
	} else {
		opts = append(opts, option.WithEnvironmentProduction())
	}
	if cfg.apiKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.apiKey))
	}
	if cfg.profile.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.profile.Timeout))
	}
	if cfg.maxRetryDelay > 0 {
		opts = append(opts, option.WithMaxRetryDelay(cfg.maxRetryDelay))
	}
	return &openaiProvider{
		cfg:      cfg,
		name:     cfg.profile.Provider,
		svc:      openai.NewChatCompletionService(opts...),
		official: cfg.profile.Provider == ProviderOpenAI && isOpenAIItself(cfg.baseURL),
	}
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

// errorMiddleware prepares error responses for the SDK:
//   - a 429 that is an exhausted quota (OpenAI's insufficient_quota) must
//     not be retried: waiting does not help, so it fails at once with the
//     provider's message (other 429s keep the SDK's retries);
//   - compatible servers (Ollama, proxies) answer errors as
//     {"error":"text"} or plain text, which the SDK cannot decode into an
//     API error; they are rewritten to {"error":{"message":"text"}} so the
//     provider's message reaches the user.
func errorMiddleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode < 400 || res.Body == nil {
		return res, err
	}
	body, rerr := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	if rerr != nil {
		res.Body = io.NopCloser(bytes.NewReader(body))
		return res, nil
	}
	if res.StatusCode == http.StatusTooManyRequests && isQuotaError(string(body)) {
		res.Header.Set("x-should-retry", "false")
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 || env.Error[0] != '{' {
		text := strings.TrimSpace(string(body))
		var s string
		if len(env.Error) > 0 && json.Unmarshal(env.Error, &s) == nil {
			text = s
		}
		body, _ = json.Marshal(map[string]any{"error": map[string]any{"message": text}})
		res.Header.Set("Content-Type", "application/json")
		res.ContentLength = int64(len(body))
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

func isQuotaError(body string) bool {
	return strings.Contains(body, "insufficient_quota") || strings.Contains(body, "billing_hard_limit_reached")
}

func (p *openaiProvider) params(req *ChatRequest) openai.ChatCompletionNewParams {
	prof := p.cfg.profile
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(prof.Model),
		Messages: make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1),
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			if len(m.ToolCalls) > 0 {
				a.ToolCalls = make([]openai.ChatCompletionMessageToolCallUnionParam, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					a.ToolCalls[j] = openai.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
							ID: tc.ID,
							Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
								Name:      tc.Name,
								Arguments: tc.Arguments,
							},
						},
					}
				}
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			content := m.Content
			if m.IsError {
				// Chat Completions has no error flag on tool results.
				content = "Error: " + content
			}
			params.Messages = append(params.Messages, openai.ToolMessage(content, m.ToolCallID))
		}
	}
	if prof.Temperature != nil {
		params.Temperature = openai.Float(*prof.Temperature)
	}
	if prof.MaxTokens > 0 {
		if p.official {
			params.MaxCompletionTokens = openai.Int(int64(prof.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(prof.MaxTokens))
		}
	}
	// tool_choice is never sent: "auto" is the default everywhere, and
	// Ollama rejects it.
	for _, t := range req.Tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(t.Schema)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	p.responseFormat(&params, req.Output)
	return params
}

func (p *openaiProvider) Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	params := p.params(req)
	var (
		cc  *openai.ChatCompletion
		err error
	)
	if req.OnText != nil {
		cc, err = p.stream(ctx, params, req.OnText)
	} else {
		cc, err = p.svc.New(ctx, params)
	}
	if err != nil {
		return nil, p.wrapError(ctx, err)
	}
	if len(cc.Choices) == 0 {
		return nil, &providerError{msg: p.name + ": the response has no choices"}
	}
	ch := cc.Choices[0]
	out := &ChatResponse{
		Text:         ch.Message.Content,
		Refusal:      ch.Message.Refusal,
		InputTokens:  tokenCount(cc.Usage.PromptTokens),
		OutputTokens: tokenCount(cc.Usage.CompletionTokens),
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never declared
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if len(out.ToolCalls) == 0 && ch.Message.FunctionCall.Name != "" { // legacy function_call
		out.ToolCalls = append(out.ToolCalls, ToolCall{Name: ch.Message.FunctionCall.Name, Arguments: ch.Message.FunctionCall.Arguments})
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

func (p *openaiProvider) stream(ctx context.Context, params openai.ChatCompletionNewParams, onText func(string)) (*openai.ChatCompletion, error) {
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := p.svc.NewStreaming(ctx, params)
	defer s.Close()
	acc := openai.ChatCompletionAccumulator{}
	for s.Next() {
		chunk := s.Current()
		acc.AddChunk(chunk)
		for _, c := range chunk.Choices {
			if c.Index == 0 && c.Delta.Content != "" {
				onText(c.Delta.Content)
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	cc := acc.ChatCompletion
	return &cc, nil
}

func (p *openaiProvider) wrapError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cancelled(ctx)
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		detail := apiErr.Message
		if detail == "" {
			detail = strings.TrimSpace(apiErr.RawJSON())
		}
		kind := apiErr.Code
		if kind == "" || kind == strconv.Itoa(apiErr.StatusCode) { // OpenRouter: "code": 402
			kind = apiErr.Type
		}
		return apiError(p.name, apiErr.StatusCode, kind, detail)
	}
	return wrapTransportError(p.name, err)
}
