package agent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/internal/tracing"
)

// Services are what the run an execution belongs to lends its runner, the
// same for every execution of the run: the engine sets Request.Services
// from its options, and the run of a child ensemble shares its parent's
// (with its own Runner). They are fields, never values of a context: only
// what belongs to one request (its cancellation, its tracing span) travels
// in the context. A zero field offers nothing.
type Services struct {
	// Runner is the run's runner, as the run was given it (injected
	// responses, a durable run's barrier around the kinds' runners): a kind
	// whose agents run other agents (a child ensemble) runs them with it.
	Runner Runner
	// Secrets are the keys redacted from everything the run records.
	Secrets *Redactor
	// Recording serves and records model exchanges, tool results and
	// answers (--record, --replay: docs/recording.md).
	Recording Recording
	// Tools are the MCP servers started for the run (docs/llm.md#mcp-tools).
	Tools ToolServers
	// Tracer makes the spans of what the kinds do, under the span of the
	// execution in the context (docs/tracing.md); nil when tracing is off.
	Tracer *Tracer
	// Answers are the answers given to a run that waits for a person
	// (resume --answer), each taken once by its agent's next execution.
	Answers *Answers
}

// Redactor replaces the run's keys (the values of the variables its model
// profiles name in api_key_env) in text, bytes, JSON values, errors and
// writers: a kind redacts with it what it records or prints. A nil
// Redactor redacts nothing.
type Redactor = secrets.Redactor

// Tracer makes a run's spans (docs/tracing.md): the OpenTelemetry tracer,
// whether spans record content (prompts, replies, outputs), and the keys
// redacted from that content first.
type Tracer = tracing.Tracer

// Recording is a run's recording (--record, --replay: docs/recording.md),
// opened by session.Recording's Open; the zero Recording is none. Only the
// built-in kinds read it: outside this module it is opaque.
type Recording opaque.Of[*cassette.Cassette]

// ToolServers are the MCP servers of a run (package mcptools).
type ToolServers interface {
	// Tools are the tools that name, SERVER.TOOL or SERVER.* (every tool
	// of the server, in its order), stands for in an agent of ens.
	Tools(ens *ensemble.Ensemble, name string) ([]*Tool, error)
}

// Tool is a tool of an MCP server started for a run.
type Tool struct {
	Server *ensemble.MCPServer
	// Name is the tool's name on its server; ModelName is the name the
	// model calls it by: SERVER__TOOL, limited to what model APIs accept.
	Name, ModelName string
	Description     string
	// InputSchema is the JSON Schema of its arguments, as plain JSON values.
	InputSchema map[string]any
	// Call calls the tool with args, a JSON object. text is the text of its
	// result; isError the server's verdict on the call; err a failure to
	// call it at all (the server is gone, the context ended).
	Call func(ctx context.Context, args json.RawMessage) (text string, isError bool, err error)
}

// Answers are answers to ask agents, by agent, each taken once.
type Answers struct {
	mu        sync.Mutex
	given     map[string]string
	deadlines map[string]Deadline // deadline.go
}

// NewAnswers holds the answers given, by agent; nil when there are none.
func NewAnswers(given map[string]string) *Answers {
	if len(given) == 0 {
		return nil
	}
	a := &Answers{given: make(map[string]string, len(given))}
	for k, v := range given {
		a.given[k] = v
	}
	return a
}

// Take returns the answer given for agent and forgets it: the agent's next
// execution takes it, once. Safe for concurrent use; nil has none.
func (a *Answers) Take(agent string) (string, bool) {
	if a == nil {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.given[agent]
	delete(a.given, agent)
	return s, ok
}
