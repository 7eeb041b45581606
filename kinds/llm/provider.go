package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// Provider is one model API behind the neutral message types. Implementations
// must be safe for concurrent use.
type Provider interface {
	// Chat makes one model request (retried when it fails transiently,
	// docs/llm.md#retries). Errors are not
	// redacted: the runner redacts every configured key from them.
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
}

// ChatRequest is one model request.
type ChatRequest struct {
	System   string
	Messages []Message
	Tools    []ToolSpec
	// Output, when set, asks for the provider's native structured output
	// (docs/llm.md#output-schemas).
	Output *OutputSpec
	// OnText, when set, asks for a streamed response; it receives the text
	// as it arrives.
	OnText func(delta string)
}

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string
	Description string
	Schema      map[string]any // JSON Schema of the arguments object (JSON-normalized)
}

// Neutral stop reasons of one reply.
const (
	replyEndTurn   = "end_turn"
	replyToolUse   = "tool_use"
	replyMaxTokens = "max_tokens"
	replyRefusal   = "refusal"
)

// ChatResponse is one model reply.
type ChatResponse struct {
	Text      string
	ToolCalls []ToolCall
	// StopReason is end_turn, tool_use, max_tokens or refusal.
	StopReason string
	// Refusal is the refusal text when the provider reports one separately.
	Refusal      string
	InputTokens  int
	OutputTokens int
}

// Provider names (docs/llm.md#providers).
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderOllama    = "ollama"
)

// DefaultOllamaBaseURL is where the ollama provider looks without base_url.
const DefaultOllamaBaseURL = "http://localhost:11434/v1"

// DefaultAnthropicMaxTokens is sent as max_tokens to Anthropic (where it is
// required) when the profile sets none.
const DefaultAnthropicMaxTokens = 4096

// DefaultMaxRetries is how often a transient failure is retried.
const DefaultMaxRetries = 3

// tokenCount sums the token counts a server reported, trusting none: a
// negative count is 0, and the sum saturates at math.MaxInt.
func tokenCount(counts ...int64) int {
	var sum int64
	for _, n := range counts {
		if n > 0 {
			if sum > math.MaxInt64-n {
				return math.MaxInt
			}
			sum += n
		}
	}
	return int(min(sum, math.MaxInt))
}

// providerConfig is what a provider is built from: the profile, resolved.
type providerConfig struct {
	profile    *ensemble.ModelProfile
	apiKey     string
	baseURL    string
	query      url.Values // base_url's query, added to every request
	httpClient *http.Client
	maxRetries int
	// maxRetryDelay caps the backoff, and for OpenAI-compatible providers
	// the longest Retry-After waited for; 0: the defaults.
	maxRetryDelay time.Duration
	// maxReply caps the body of one reply (MaxReply unless a test sets
	// less); 0 means MaxReply.
	maxReply int64
}

// resolveProfile checks the profile and looks up its key. The key comes only
// from the variable the profile names in api_key_env (docs/format.md); a missing
// key is an error before any request. The query of base_url (Azure's
// ?api-version=…) is returned apart: it is added to every request's URL.
func resolveProfile(p *ensemble.ModelProfile, lookup func(string) (string, bool)) (key, baseURL string, query url.Values, err error) {
	if p.Model == "" {
		return "", "", nil, fmt.Errorf("model profile %q: model is not set", p.Name)
	}
	baseURL = strings.TrimSpace(p.BaseURL)
	if u, err := url.Parse(baseURL); err == nil && (u.RawQuery != "" || u.ForceQuery) {
		query = u.Query()
		u.RawQuery, u.ForceQuery = "", false
		baseURL = u.String()
	}
	switch p.Provider {
	case ProviderOpenAI:
		if p.APIKeyEnv == "" && baseURL == "" {
			return "", "", nil, fmt.Errorf("model profile %q: provider openai needs api_key_env (or a base_url for a compatible server without a key)", p.Name)
		}
	case ProviderAnthropic:
		if p.APIKeyEnv == "" {
			return "", "", nil, fmt.Errorf("model profile %q: provider anthropic needs api_key_env", p.Name)
		}
		// The endpoint is /v1/messages: https://proxy/v1 means https://proxy.
		baseURL = strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")
	case ProviderOllama:
		if baseURL == "" {
			baseURL = DefaultOllamaBaseURL
		} else if u, err := url.Parse(baseURL); err == nil && u.Host != "" && strings.Trim(u.Path, "/") == "" {
			// Ollama's OpenAI-compatible API is under /v1: http://gpu:11434
			// means http://gpu:11434/v1.
			u.Path = "/v1"
			baseURL = u.String()
		}
	case "":
		return "", "", nil, fmt.Errorf("model profile %q: provider is not set", p.Name)
	default:
		return "", "", nil, fmt.Errorf("model profile %q: unknown provider %q (want openai, anthropic or ollama)", p.Name, p.Provider)
	}
	if _, err := encodeOptions(p); err != nil {
		return "", "", nil, err
	}
	if p.APIKeyEnv != "" {
		v, ok := lookup(p.APIKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return "", "", nil, fmt.Errorf("model profile %q: environment variable %s is not set", p.Name, p.APIKeyEnv)
		}
		key = strings.TrimSpace(v)
	}
	return key, baseURL, query, nil
}

// encodeOptions is the profile's options as JSON members to add at the end
// of a request body: `,"key":value` for each, by key. A field the run sets
// itself (ensemble.ReservedOption) is refused, as the loader refuses it in a
// file, so that an option never repeats a member of the body.
func encodeOptions(p *ensemble.ModelProfile) ([]byte, error) {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(p.Options)) {
		if instead, reserved := ensemble.ReservedOption(k); reserved {
			return nil, fmt.Errorf("model profile %q: options.%s is set by the run: %s", p.Name, k, instead)
		}
		key, _ := json.Marshal(k)
		v, err := json.Marshal(p.Options[k])
		if err != nil {
			return nil, fmt.Errorf("model profile %q: options.%s is not JSON: %w", p.Name, k, err)
		}
		b = append(append(append(append(b, ','), key...), ':'), v...)
	}
	return b, nil
}

func newProvider(cfg providerConfig) Provider {
	switch cfg.profile.Provider {
	case ProviderAnthropic:
		return newAnthropic(cfg)
	default: // openai, ollama
		return newOpenAI(cfg)
	}
}

var (
	sharedClientOnce sync.Once
	sharedClient     *http.Client
)

// DefaultHTTPClient is the client the runner uses when Options.HTTPClient is
// nil: http.DefaultTransport's settings, but with room for many concurrent
// requests to one host (100 agents in one turn against one server), and no
// overall timeout (the context and the profile's timeout_seconds bound each
// request).
func DefaultHTTPClient() *http.Client {
	sharedClientOnce.Do(func() {
		sharedClient = &http.Client{Transport: newTransport()}
	})
	return sharedClient
}

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   256,
		MaxConnsPerHost:       0, // unlimited
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// providerError is the error the run reports of a failed request: the
// provider's own message with the HTTP status, never the key.
type providerError struct {
	msg        string
	underlying error
	// status is the HTTP status of an error response; 0 otherwise.
	status int
	// unreachable is a connection error or a timeout: no answer came.
	unreachable bool
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() error { return e.underlying }

// cancelled is the error of a request whose context ended.
func cancelled(ctx context.Context) error {
	return &providerError{msg: "cancelled", underlying: ctx.Err()}
}

// apiError is the error of an HTTP error response: the provider, the
// status, the provider's kind of error when it gives one, and its message,
// e.g. "openai API error 429 Too Many Requests (rate_limit_exceeded): …".
func apiError(provider string, status int, kind, detail string) error {
	msg := fmt.Sprintf("%s API error %d %s", provider, status, http.StatusText(status))
	if kind != "" {
		msg += " (" + kind + ")"
	}
	if detail != "" {
		msg += ": " + detail
	}
	return &providerError{msg: msg, status: status}
}

// wrapTransportError describes an error without a provider message
// (connection refused, timeouts, bad response bodies).
func wrapTransportError(provider string, err error) error {
	msg := err.Error()
	var tooLarge *errReplyTooLarge
	switch {
	case errors.As(err, &tooLarge):
		msg = tooLarge.Error()
	case errors.Is(err, context.DeadlineExceeded):
		msg = "request timed out (timeout_seconds): " + msg
	}
	var netErr net.Error
	unreachable := tooLarge == nil && (errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF))
	return &providerError{msg: provider + ": " + msg, underlying: err, unreachable: unreachable}
}

// MaxReply caps the body of one model reply (streamed or not), like the
// stdout of a script: more fails the request without buffering it.
const MaxReply = scriptexec.DefaultMaxOutput

// errReplyTooLarge is the error of a reply over its cap.
type errReplyTooLarge struct{ limit int64 }

func (e *errReplyTooLarge) Error() string {
	if e.limit%(1<<20) == 0 {
		return fmt.Sprintf("model reply exceeds %d MiB", e.limit>>20)
	}
	return fmt.Sprintf("model reply exceeds %d bytes", e.limit)
}

// cappedBody fails a read past its limit.
type cappedBody struct {
	body  io.ReadCloser
	left  int64
	limit int64 // the cap, for the error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a reply of exactly the limit from a longer one.
		var one [1]byte
		if _, err := io.ReadFull(b.body, one[:]); err != nil {
			return 0, err // io.EOF: the reply ends exactly at the limit
		}
		return 0, &errReplyTooLarge{limit: b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.body.Close() }
