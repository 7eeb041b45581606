package session

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/kinds/ask"
)

// Options are what a front door decides for the runs of a session. The
// zero value runs every agent for real, with the process's environment and
// no terminal: an LLM agent calls its model, an ask agent fails. Each
// group's zero value is its part of that.
type Options struct {
	// Kinds are the kinds of agent; nil is kinds.Builtin(). The ensemble
	// must have been loaded with them. Ask and Models.Stream configure the
	// built-in ask and llm kinds among them (kinds.Registry.With).
	Kinds *kinds.Registry
	// Replace replaces the runners of kinds, by kind name: a test's fake
	// model, or a test's person.
	Replace map[string]agent.Runner

	// LookupEnv finds API keys and the variables of the profiles; nil is
	// os.LookupEnv. Environ is the environment scripts and MCP servers
	// inherit (less every api_key_env variable); nil is os.Environ.
	LookupEnv func(string) (string, bool)
	Environ   func() []string
	// Secrets are more values redacted from the runs' inputs, outputs,
	// errors, events and streamed text, as the keys of the profiles are:
	// what a server keeps from the runs it serves (its token, the keys of
	// the other files it serves).
	Secrets []string

	// Ask is how ask agents get their answers: the ask kind's own options
	// (the terminal, --no-input, whether a run may wait, a batch's runs).
	Ask ask.Options
	// Models is where the agents' replies come from: their models, or
	// injected responses, a recording, simulated users.
	Models Models
	// MCP tunes the start of the MCP servers the agents name.
	MCP MCPOptions
	// Limits override the file's conversation_limits and budget.
	Limits Limits
	// Checks are what a run is held to beyond its file: --strict reads,
	// --expect expectations.
	Checks Checks
	// Tracing makes spans of the runs (docs/tracing.md).
	Tracing Tracing
}

// Models is where the agents' replies come from. The zero value calls the
// models, without streaming.
type Models struct {
	// Responses are injected: an agent with responses takes them instead of
	// running (docs/testing.md#the-responses-file). ResponsesFile names
	// them in messages.
	Responses     *Responses
	ResponsesFile string
	// With Responses, an LLM agent that has none fails instead of calling
	// its model (a real model costs money), unless Live names it or
	// LiveAll is set. Guard, when set, is the error it fails with (its
	// agent's name given), and guards the models even without Responses.
	Live    []string
	LiveAll bool
	Guard   func(agent string) error
	// Simulate plays simulated users (responses {simulate: ...}); nil is the
	// LLM kind's runner.
	Simulate func(ctx context.Context, req *agent.Request, modelProfile, prompt string) *agent.Result
	// Recording records or replays model exchanges and answers
	// (docs/recording.md); a replay's agents need no Live.
	Recording agent.Recording
	// Stream streams model replies as text_delta events: the llm kind's
	// own option (llm.Kind.Stream).
	Stream bool
}

// Limits override the file's conversation_limits when > 0; Budget
// overrides the caps the file sets. The zero value keeps the file's.
type Limits struct {
	MaxTurns int
	Timeout  time.Duration
	Parallel int
	Budget   *ensemble.Budget
}

// Checks are what the runs are held to beyond their file. The zero value
// adds nothing.
type Checks struct {
	// Strict ends a run strict_warning (exit 7) on a read of a missing
	// key or a null message (--strict; docs/semantics.md#reads-of-missing-keys).
	Strict bool
	// Expect are expectations the runs check when they complete, after
	// the file's own expect: (docs/semantics.md#expectations): a
	// command's --expect, compiled by ensemble.CompileExpectation.
	Expect []*ensemble.Expectation
}

// Tracing makes spans of the runs (docs/tracing.md), with their content
// when Content is set; a nil Tracer traces nothing, unless Export has the
// session set up an exporter of its own, whose tracer it then is.
type Tracing struct {
	Tracer  trace.Tracer
	Content bool
	Export  *Export
}

// MCPOptions tune the start of a run's MCP servers (docs/llm.md#mcp-tools).
type MCPOptions struct {
	// Environ is the base environment of the servers' commands, before
	// every api_key_env variable is taken out; nil is Options.Environ.
	Environ func() []string
	// HTTPClient reaches the servers given by URL; nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// StartTimeout bounds starting one server and listing its tools; 0
	// means two minutes (a command may install a package first).
	StartTimeout time.Duration
	// Deadline bounds the start of all the servers together; 0 is the
	// run's timeout, which a server that never answers must not outlast.
	Deadline time.Duration
}
