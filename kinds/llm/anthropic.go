package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicProvider speaks the Anthropic Messages API.
type anthropicProvider struct {
	cfg    providerConfig
	client anthropic.Client
}

// anthropicDefaultTimeout is the per-request timeout when the profile sets
// none. Setting one also keeps the SDK from refusing large max_tokens
// without streaming.
const anthropicDefaultTimeout = 10 * time.Minute

func newAnthropic(cfg providerConfig) *anthropicProvider {
	timeout := cfg.profile.Timeout
	if timeout <= 0 {
		timeout = anthropicDefaultTimeout
	}
	opts := []option.RequestOption{
		// No ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles or federation
		// from the environment: the key comes only from api_key_env.
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.httpClient),
		option.WithMaxRetries(cfg.maxRetries),
		option.WithAPIKey(cfg.apiKey),
		option.WithRequestTimeout(timeout),
		option.WithMiddleware(transportMiddleware(cfg.query, cfg.maxReply)),
	}
	if cfg.baseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.baseURL))
	}
	return &anthropicProvider{cfg: cfg, client: anthropic.NewClient(opts...)}
}

func (p *anthropicProvider) params(req *ChatRequest) anthropic.MessageNewParams {
	prof := p.cfg.profile
	maxTokens := prof.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(prof.Model),
		MaxTokens: int64(maxTokens),
		Messages:  anthropicMessages(req.Messages),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if prof.Temperature != nil {
		params.Temperature = anthropic.Float(*prof.Temperature)
	}
	for _, t := range req.Tools {
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: anthropicSchema(t.Schema)}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	outputTool(&params, req.Output, req.Tools)
	return params
}

// anthropicMessages maps the neutral messages: tool results become
// tool_result blocks (with is_error) of a user message, consecutive messages
// of one role are merged into one message, and a conversation that (after
// trimming) starts with the assistant gets a short user note first, since
// the API wants the user to speak first.
func anthropicMessages(msgs []Message) []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(msgs)+1)
	add := func(role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case RoleUser:
			if m.Content != "" {
				add(anthropic.MessageParamRoleUser, anthropic.NewTextBlock(m.Content))
			}
		case RoleTool:
			content := m.Content
			if content == "" {
				content = "(no output)"
			}
			add(anthropic.MessageParamRoleUser, anthropic.NewToolResultBlock(m.ToolCallID, content, m.IsError))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				var input json.RawMessage
				if json.Valid([]byte(tc.Arguments)) && strings.HasPrefix(strings.TrimSpace(tc.Arguments), "{") {
					input = json.RawMessage(tc.Arguments)
				} else {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			add(anthropic.MessageParamRoleAssistant, blocks...)
		}
	}
	if len(out) > 0 && out[0].Role != anthropic.MessageParamRoleUser {
		note := anthropic.MessageParam{Role: anthropic.MessageParamRoleUser,
			Content: []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock("(earlier messages omitted)")}}
		out = append([]anthropic.MessageParam{note}, out...)
	}
	return out
}

// anthropicSchema maps a JSON Schema object onto the SDK's input schema.
func anthropicSchema(schema map[string]any) anthropic.ToolInputSchemaParam {
	var s anthropic.ToolInputSchemaParam
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if name, ok := r.(string); ok {
						s.Required = append(s.Required, name)
					}
				}
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s
}

func (p *anthropicProvider) Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error) {
	params := p.params(req)
	var (
		msg *anthropic.Message
		err error
	)
	if req.OnText != nil {
		msg, err = p.stream(ctx, params, req.OnText)
	} else {
		msg, err = p.client.Messages.New(ctx, params)
	}
	if err != nil {
		return nil, p.wrapError(ctx, err)
	}
	out := &ChatResponse{
		InputTokens:  tokenCount(msg.Usage.InputTokens, msg.Usage.CacheCreationInputTokens, msg.Usage.CacheReadInputTokens),
		OutputTokens: tokenCount(msg.Usage.OutputTokens),
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
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		out.StopReason = replyMaxTokens
	case anthropic.StopReasonRefusal:
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

func (p *anthropicProvider) stream(ctx context.Context, params anthropic.MessageNewParams, onText func(string)) (*anthropic.Message, error) {
	s := p.client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	msg := anthropic.Message{}
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, err
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			onText(ev.Delta.Text)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return &msg, nil
}

func (p *anthropicProvider) wrapError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cancelled(ctx)
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		var env struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		raw := apiErr.RawJSON()
		detail := ""
		kind := ""
		if json.Unmarshal([]byte(raw), &env) == nil && env.Error.Message != "" {
			detail, kind = env.Error.Message, env.Error.Type
		} else {
			detail = strings.TrimSpace(raw)
		}
		return apiError(ProviderAnthropic, apiErr.StatusCode, kind, detail)
	}
	return wrapTransportError(ProviderAnthropic, err)
}
