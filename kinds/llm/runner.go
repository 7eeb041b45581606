package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/llmtrace"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/tracing"
	"github.com/ensemble-run/ensemble/state"
)

// Stop reasons of an execution (docs/llm.md#tools).
const (
	StopEndTurn   = "end_turn"
	StopMaxTokens = "max_tokens"
	StopMaxSteps  = "max_steps"
	StopRefusal   = "refusal"
	StopCancelled = "cancelled"
	StopError     = "error"
)

// Options configure a Runner. The zero value is ready for production use.
type Options struct {
	// HTTPClient makes the model requests; nil means DefaultHTTPClient().
	HTTPClient *http.Client
	// LookupEnv finds API keys (the variables named by api_key_env);
	// nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Secrets are values redacted from replies, errors and streamed text
	// (held back across deltas), beside the keys of the ensemble's
	// profiles: agent.Host.Secrets.
	Secrets []string
	// Environ is the base environment of tool scripts, before
	// scriptexec.ScriptEnv strips every api_key_env variable from it; nil means
	// os.Environ.
	Environ func() []string
	// MaxRetries is how often a transient failure (429, 5xx, network) is
	// retried, with exponential backoff and jitter that honours
	// Retry-After / retry-after-ms. 0 means DefaultMaxRetries; negative
	// means no retries.
	MaxRetries int
	// MaxRetryDelay caps the backoff between retries (0: 8 s). With
	// OpenAI-compatible providers a Retry-After longer than it (0: 2 min)
	// is not waited for either: the request fails at once. Anthropic
	// requests always wait for Retry-After.
	MaxRetryDelay time.Duration
	// Stream makes the requests with server-sent events and emits each text
	// delta as an events.TextDelta (only when the request has an event
	// sink). Off by default.
	Stream bool
	// TokenCounter counts tokens for context_window.max_tokens; nil means
	// TiktokenCount.
	TokenCounter TokenCounter
	// MaxToolOutput caps a tool's stdout; 0 means DefaultMaxToolOutput.
	MaxToolOutput int64
	// MaxReply caps the body of one model reply; 0 means MaxReply (10 MiB).
	MaxReply int64
}

// Runner runs LLM agents (docs/llm.md) and simulated users (docs/testing.md#the-responses-file). One
// Runner serves any number of ensembles and concurrent executions.
type Runner struct {
	opts          Options
	lookupEnv     func(string) (string, bool)
	environ       func() []string
	httpClient    *http.Client
	maxRetries    int
	maxToolOutput int64
	tokens        *tokenCache
	memories      *memoryCache

	provMu    sync.Mutex
	providers map[providerKey]Provider // cleared when it reaches maxProviders

	toolsMu sync.Mutex
	tools   map[any]*compiledTool // by *ensemble.Tool or *agent.Tool; cleared when it reaches maxCachedTools
}

var _ agent.Runner = (*Runner)(nil)

// New returns a Runner.
func New(opts Options) *Runner {
	r := &Runner{opts: opts}
	r.lookupEnv = opts.LookupEnv
	if r.lookupEnv == nil {
		r.lookupEnv = os.LookupEnv
	}
	r.environ = opts.Environ
	if r.environ == nil {
		r.environ = os.Environ
	}
	r.httpClient = opts.HTTPClient
	if r.httpClient == nil {
		r.httpClient = DefaultHTTPClient()
	}
	switch {
	case opts.MaxRetries == 0:
		r.maxRetries = DefaultMaxRetries
	case opts.MaxRetries < 0:
		r.maxRetries = 0
	default:
		r.maxRetries = opts.MaxRetries
	}
	r.maxToolOutput = opts.MaxToolOutput
	if r.maxToolOutput <= 0 {
		r.maxToolOutput = DefaultMaxToolOutput
	}
	count := opts.TokenCounter
	if count == nil {
		count = TiktokenCount
	}
	r.tokens = newTokenCache(count)
	r.memories = newMemoryCache()
	return r
}

type providerKey struct {
	profile *ensemble.ModelProfile
	key     string
}

// provider returns the provider of profile p, looking up its key first.
func (r *Runner) provider(p *ensemble.ModelProfile) (Provider, error) {
	key, baseURL, query, err := resolveProfile(p, r.lookupEnv)
	if err != nil {
		return nil, err
	}
	k := providerKey{profile: p, key: key}
	r.provMu.Lock()
	defer r.provMu.Unlock()
	if prov, ok := r.providers[k]; ok {
		return prov, nil
	}
	if r.providers == nil || len(r.providers) >= maxProviders {
		// A long-lived runner (ensemble test) sees many loaded ensembles.
		r.providers = map[providerKey]Provider{}
	}
	prov := newProvider(providerConfig{
		profile:       p,
		apiKey:        key,
		baseURL:       baseURL,
		query:         query,
		httpClient:    r.httpClient,
		maxRetries:    r.maxRetries,
		maxRetryDelay: r.opts.MaxRetryDelay,
		maxReply:      cmp.Or(r.opts.MaxReply, MaxReply),
	})
	r.providers[k] = prov
	return prov, nil
}

// maxProviders bounds the provider cache.
const maxProviders = 256

// conversation is what one execution talks with: an LLM agent's settings,
// or a simulated user's.
type conversation struct {
	profile      *ensemble.ModelProfile
	system       string
	toolNames    []string
	maxSteps     int
	toolParallel int // tool calls of one reply run at once
	outputFormat string
	window       *ensemble.ContextWindow
	timeout      time.Duration
	// prefix is put before the user message of every execution (the ask
	// text of a simulated user).
	prefix string
	// agent, schema and repairs: the agent's output_schema and how many
	// repair turns a reply that fails it gets (docs/llm.md#output-schemas).
	agent   *ensemble.Agent
	schema  *ensemble.OutputSchema
	repairs int
}

// Run runs one execution of an LLM agent (docs/llm.md): it continues the
// agent's stored conversation (req.Memory) with one user message, then runs
// the tool loop until the model answers without tool calls.
//
// Outcomes (Result.StopReason):
//   - end_turn: the reply is the output (parsed per output_format);
//   - max_tokens: the reply was cut off at the profile's max_tokens; its
//     tool calls (if any) are not run and the text so far is the output (a
//     failure when there is no text, or when it is not valid JSON under
//     output_format json or an output_schema, which names the cut);
//   - max_steps: max_steps model requests were made and the model still
//     wants tools: a failure ("max_steps (20) reached"); the calls of that
//     last reply are not run and get error results;
//   - refusal: the model refused: a failure carrying its words;
//   - cancelled: the context ended (run timeout, SIGINT, the agent's
//     timeout_seconds): a failure; tool calls cut short get error results;
//   - error: the request failed (after its retries) or the
//     configuration is wrong (e.g. a missing key, before any request).
//
// Result.Memory is the whole conversation afterwards, failed executions
// included (so their inputs are not lost); it never ends with tool calls
// that lack results. Result.InputData lists the messages this execution
// added (on the first execution, the system prompt first).
func (r *Runner) Run(ctx context.Context, req *agent.Request) *agent.Result {
	a := req.Agent
	if a == nil || req.Ensemble == nil {
		return &agent.Result{Err: errors.New("llm runner: the request has no agent or ensemble"), StopReason: StopError}
	}
	spec := SpecOf(a)
	prof := req.Ensemble.Models[spec.ModelProfile]
	if prof == nil {
		return &agent.Result{Err: fmt.Errorf("unknown model profile %q", spec.ModelProfile), StopReason: StopError}
	}
	win := spec.ContextWindow
	if win == nil {
		win = prof.ContextWindow
	}
	maxSteps := spec.MaxSteps
	if maxSteps <= 0 {
		maxSteps = ensemble.DefaultMaxSteps
	}
	return r.converse(ctx, req, &conversation{
		profile:      prof,
		system:       systemPrompt(prof.SystemPrompt, agentPrompt(req, spec)),
		toolNames:    spec.Tools,
		maxSteps:     maxSteps,
		toolParallel: cmp.Or(spec.ToolParallel, ensemble.DefaultToolParallel),
		outputFormat: spec.OutputFormat,
		window:       win,
		timeout:      a.Timeout,
		agent:        a,
		schema:       a.OutputSchema,
		repairs:      spec.OutputRepairs,
	})
}

// cancelError explains why ctx ended: its cause when one was given (the
// agent's own timeout_seconds, here or in the engine), wrapped so that a
// caller that checks errors.Is(err, cause) does not add it again.
func cancelError(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("cancelled: %w", cause)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errors.New("cancelled: deadline exceeded")
	}
	return errors.New("cancelled")
}

func (r *Runner) converse(ctx context.Context, req *agent.Request, c *conversation) *agent.Result {
	res := &agent.Result{Usage: &state.Usage{}}
	sec := r.secrets(req.Ensemble)
	fail := func(reason string, err error) *agent.Result {
		res.StopReason, res.Err = reason, sec.redactError(err)
		return res
	}
	route, ts, history, from, err := r.prepare(req, c, sec)
	if err != nil {
		return fail(StopError, err)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout, fmt.Errorf("agent timeout of %s", c.timeout))
		defer cancel()
	}
	conv := openConversation(req, c, history)
	start := len(history)
	var called []ToolCallRecord // the tool calls run, for the record
	tr := newTrace(c.system, from, len(history))
	defer func() { r.keep(res, req, c, conv, start, called, tr) }()

	chat, flush := r.chatRequest(req, c, ts, sec)
	repairs := 0
	tr.offer(chat)
	route.onRequest = func(p *ensemble.ModelProfile, resp *ChatResponse, u *state.Usage, err error, d time.Duration) {
		tr.add(p, conv, chat.Messages, resp, u, err, d, sec)
	}
	systemTokens := r.systemTokens(c)

	for step := 1; ; step++ {
		if ctx.Err() != nil {
			return fail(StopCancelled, cancelError(ctx))
		}
		chat.Messages = trimWindow(conv, c.window, systemTokens, func(i int) int { return r.tokens.message(&conv[i]) })
		resp, used, err := route.chat(ctx, chat)
		flush()
		noteFallback(ctx, res, route)
		if err != nil {
			return fail(chatFailure(ctx, err))
		}
		res.Usage.Add(used)
		sec.redactReply(resp)
		calls := normalizeCalls(resp.ToolCalls, step, conv)
		reply := Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: calls}
		tr.replyAt(len(conv) + 1) // where the reply goes, unless it is dropped below

		switch {
		case resp.StopReason == replyRefusal:
			reply.ToolCalls = nil
			if reply.Content == "" {
				reply.Content = resp.Refusal
			}
			conv = append(conv, reply)
			return fail(StopRefusal, fmt.Errorf("the model refused: %s", resp.Refusal))

		case resp.StopReason == replyMaxTokens:
			// A reply cut off at the token limit runs no tools: its calls
			// may be truncated, and they would have no results.
			reply.ToolCalls = nil
			if reply.Content == "" {
				tr.replyAt(0)
				return fail(StopMaxTokens, fmt.Errorf("the reply was cut off at max_tokens (%s) before any text", maxTokensText(c.profile)))
			}
			conv = append(conv, reply)
			res.StopReason = StopMaxTokens
			return r.finish(res, c, reply.Content)

		case len(calls) > 0:
			conv = append(conv, reply)
			if step >= c.maxSteps {
				conv = append(conv, notRun(calls, c.maxSteps)...)
				return fail(StopMaxSteps, fmt.Errorf("max_steps (%d) reached: the model still wanted to call tools", c.maxSteps))
			}
			results := r.runTools(ctx, req, ts, calls, c.toolParallel, sec)
			called = append(called, toolRecords(ts, calls, results)...)
			conv = append(conv, results...)
			if ctx.Err() != nil {
				return fail(StopCancelled, cancelError(ctx))
			}

		default:
			conv = append(conv, reply)
			out, err := c.parseReply(reply.Content)
			if err != nil && c.schema != nil && repairs < c.repairs {
				repairs++ // a repair turn: docs/llm.md#output-schemas
				conv = append(conv, Message{Role: RoleUser, Content: repairMessage(err)})
				continue
			}
			if err != nil {
				err = gaveUp(err, reply.Content, repairs)
			}
			res.StopReason, res.Output, res.Err = StopEndTurn, out, err
			return res
		}
	}
}

// prepare is what the tool loop needs before its first step: the route
// of its model requests, its tools, and the messages the agent remembers
// (and from which execution).
func (r *Runner) prepare(req *agent.Request, c *conversation, sec *secrets) (*route, *toolSet, []Message, *memoryFrom, error) {
	route, err := r.routeFor(req, c, sec)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ts, err := r.toolSet(req.Services.Tools, req.Ensemble, c.toolNames)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	history, from, err := r.memories.decode(req.Memory)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return route, ts, history, from, nil
}

// chatFailure is the stop reason and error of a model request that
// failed: cancelled when the execution was, an error otherwise.
func chatFailure(ctx context.Context, err error) (string, error) {
	if ctx.Err() != nil {
		return StopCancelled, cancelError(ctx)
	}
	return StopError, err
}

// chatRequest is the request the tool loop sends at each step, and the
// flush of its streamed text (a no-op when the text is not streamed).
func (r *Runner) chatRequest(req *agent.Request, c *conversation, ts *toolSet, sec *secrets) (*ChatRequest, func()) {
	chat := &ChatRequest{System: c.system, Tools: ts.specs}
	if c.agent != nil {
		chat.Output = outputSpec(c.agent)
	}
	flush := func() {}
	if r.opts.Stream && req.Events != nil {
		chat.OnText, flush = sec.stream(func(delta string) {
			req.Events.Emit(events.Event{Type: events.TextDelta, Execution: req.Execution, Message: delta})
		})
	}
	return chat, flush
}

// systemTokens is the system prompt's share of a window counted in tokens
// (0 for any other window).
func (r *Runner) systemTokens(c *conversation) int {
	if c.window != nil && c.window.MaxTokens > 0 {
		return r.tokens.count(c.system) + perMessageTokens
	}
	return 0
}

// noteFallback records the profile of a fallback that answered; the loop
// stays with it.
func noteFallback(ctx context.Context, res *agent.Result, route *route) {
	if route.used != "" {
		_ = res.Details.Put(ProfileUsedDetail, route.used)
		trace.SpanFromContext(ctx).SetAttributes(tracing.Profile.String(route.used))
	}
}

// notRun is the results of tool calls that max_steps left unrun.
func notRun(calls []ToolCall, maxSteps int) []Message {
	out := make([]Message, 0, len(calls))
	for _, tc := range calls {
		out = append(out, Message{Role: RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, IsError: true,
			Content: fmt.Sprintf("not run: max_steps (%d) reached", maxSteps)})
	}
	return out
}

// toolRecords are the tool calls run, for the record.
func toolRecords(ts *toolSet, calls []ToolCall, results []Message) []ToolCallRecord {
	out := make([]ToolCallRecord, len(calls))
	for i, tc := range calls {
		out[i] = ToolCallRecord{Tool: ts.fileName(tc.Name), Failed: results[i].IsError}
	}
	return out
}

// routeFor is the route of the execution's model requests: its profile
// and fallbacks, its recording, and a check that the provider's key is
// there (a replay needs one only for a miss it records).
func (r *Runner) routeFor(req *agent.Request, c *conversation, sec *secrets) (*route, error) {
	route := r.newRoute(req.Ensemble, c.profile, req.Budget)
	route.sec, route.tr = sec, req.Services.Tracer
	cas := opaque.Get(req.Services.Recording)
	if cas != nil {
		route.rec = &recorder{cas: cas, agent: req.Name(), sec: sec, maxReply: cmp.Or(r.opts.MaxReply, MaxReply)}
	}
	if cas == nil || cas.Mode() == cassette.Record {
		if _, err := r.provider(c.profile); err != nil {
			return nil, err
		}
	}
	return route, nil
}

// openConversation is the messages remembered (history) and the user
// message of this execution.
func openConversation(req *agent.Request, c *conversation, history []Message) []Message {
	conv := make([]Message, len(history), len(history)+8)
	copy(conv, history)
	text := userMessage(req, len(history) == 0)
	if c.prefix != "" {
		text = c.prefix + "\n\n" + text
	}
	return append(conv, Message{Role: RoleUser, Content: text})
}

// keep records what the execution did, however it ended: the tool calls
// run, the model requests sent (tr), the conversation as the agent's
// memory, and the messages it added from start on as its input (with the
// system prompt, on its first execution).
func (r *Runner) keep(res *agent.Result, req *agent.Request, c *conversation, conv []Message, start int, called []ToolCallRecord, tr *callTrace) {
	if len(called) > 0 {
		_ = res.Details.Put(ToolCallsDetail, called)
	}
	if len(tr.Requests) > 0 {
		tr.Bound()
		_ = res.Details.Put(llmtrace.Detail, tr)
	}
	mf := &memoryFrom{Turn: req.Turn, Execution: req.Execution}
	res.Memory = encodeMemory(conv, mf)
	r.memories.put(res.Memory, conv, mf)
	added := conv[start:]
	if start == 0 && c.system != "" {
		added = append([]Message{{Role: RoleSystem, Content: c.system}}, added...)
	}
	res.InputData = added
}

func maxTokensText(p *ensemble.ModelProfile) string {
	switch {
	case p.MaxTokens > 0:
		return fmt.Sprint(p.MaxTokens)
	case p.Provider == ProviderAnthropic:
		return fmt.Sprint(DefaultAnthropicMaxTokens)
	}
	return "the server's limit"
}

// finish sets the output from the final reply text, a reply cut off at
// max_tokens: when it is not the output asked for (JSON, or JSON that the
// output_schema takes), the error names the cut, the likely cause, and
// quotes the reply's start. No repair turn is asked: it would be cut too.
func (r *Runner) finish(res *agent.Result, c *conversation, text string) *agent.Result {
	res.Output, res.Err = c.parseReply(text)
	if res.Err != nil {
		res.Err = fmt.Errorf("the reply was cut off at max_tokens (%s): %w; the reply began %s",
			maxTokensText(c.profile), res.Err, responses.QuoteReply(text))
	}
	return res
}

// normalizeCalls gives every call an ID that is unique in the conversation
// (some compatible servers send none, or repeat them), so each result finds
// its call.
func normalizeCalls(calls []ToolCall, step int, conv []Message) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(calls))
	for i := range calls {
		id := calls[i].ID
		if id == "" || seen[id] || usedID(conv, id) {
			id = fmt.Sprintf("call_%d_%d_%d", len(conv), step, i+1)
			calls[i].ID = id
		}
		seen[id] = true
	}
	return calls
}

// usedID reports whether an earlier message of the conversation already
// used id (checked from the end: duplicates come from the same server).
func usedID(conv []Message, id string) bool {
	for i := len(conv) - 1; i >= 0 && i >= len(conv)-64; i-- {
		if conv[i].Role == RoleTool && conv[i].ToolCallID == id {
			return true
		}
	}
	return false
}
