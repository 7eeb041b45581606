package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/proc"
	"github.com/ensemble-run/ensemble/runners"
)

// DefaultMaxToolOutput caps what one tool call may print; more is an error
// result (a model cannot use megabytes of tool output anyway).
const DefaultMaxToolOutput int64 = 1 << 20

// compiledTool is a tool with its schema compiled, once per tool (and so
// once per loaded ensemble).
type compiledTool struct {
	once   sync.Once
	tool   *ensemble.Tool
	spec   ToolSpec
	schema *jsonschema.Schema
	err    error
}

func (r *Runner) compiledTool(t *ensemble.Tool) (*compiledTool, error) {
	r.toolsMu.Lock()
	ct := r.tools[t]
	if ct == nil {
		if r.tools == nil || len(r.tools) >= maxCachedTools {
			// A long-lived runner (ensemble test) sees many loaded ensembles.
			r.tools = map[*ensemble.Tool]*compiledTool{}
		}
		ct = &compiledTool{tool: t}
		r.tools[t] = ct
	}
	r.toolsMu.Unlock()
	ct.once.Do(func() { ct.err = ct.compile() })
	return ct, ct.err
}

// maxCachedTools bounds the compiled-tool cache.
const maxCachedTools = 1024

// compile normalizes the tool's schema to plain JSON values (YAML decoding
// may give ints and nested maps of other types) and compiles it. Schemas
// without $schema are read as draft 2020-12; references are resolved only
// inside the schema (nothing is ever fetched).
func (ct *compiledTool) compile() error {
	t := ct.tool
	schema := t.Parameters
	if schema == nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("tool %q: parameters cannot be encoded as JSON: %v", t.Name, err)
	}
	var normalized map[string]any
	if err := json.Unmarshal(raw, &normalized); err != nil {
		return fmt.Errorf("tool %q: parameters must be a JSON Schema object: %v", t.Name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("tool %q: parameters: %v", t.Name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	url := "urn:ensemble:tool:" + t.Name
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("tool %q: parameters is not a valid JSON Schema: %v", t.Name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("tool %q: parameters is not a valid JSON Schema: %v", t.Name, err)
	}
	ct.schema = sch
	ct.spec = ToolSpec{Name: t.Name, Description: t.Description, Schema: normalized}
	return nil
}

// noLoader refuses every external reference: schemas are self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not loaded (%s)", url)
}

// toolSet is the tools of one agent.
type toolSet struct {
	byName map[string]*compiledTool
	specs  []ToolSpec
}

func (r *Runner) toolSet(ens *ensemble.Ensemble, names []string) (*toolSet, error) {
	if len(names) == 0 {
		return &toolSet{}, nil
	}
	ts := &toolSet{byName: make(map[string]*compiledTool, len(names))}
	for _, n := range names {
		var t *ensemble.Tool
		if ens != nil {
			t = ens.Tool(n)
		}
		if t == nil {
			return nil, fmt.Errorf("unknown tool %q", n)
		}
		ct, err := r.compiledTool(t)
		if err != nil {
			return nil, err
		}
		if _, dup := ts.byName[n]; dup {
			continue
		}
		ts.byName[n] = ct
		ts.specs = append(ts.specs, ct.spec)
	}
	return ts, nil
}

// MaxToolCallsPerReply caps the tool calls of one reply that are run; the
// others get an error result.
const MaxToolCallsPerReply = 128

// runTools runs the calls of one reply, at most parallel at a time, and
// returns one result per call, in the order the model issued them. A call's
// timeout starts when it starts, not while it waits for its turn. It always
// returns a result for every call: calls past MaxToolCallsPerReply get an
// error result, and so do unfinished calls when ctx ends. Results are
// redacted of every key.
func (r *Runner) runTools(ctx context.Context, req *runners.Request, ts *toolSet, calls []ToolCall, parallel int, sec *secrets) []Message {
	out := make([]Message, len(calls))
	run := calls
	if len(calls) > MaxToolCallsPerReply {
		run = calls[:MaxToolCallsPerReply]
		for i, c := range calls[MaxToolCallsPerReply:] {
			out[MaxToolCallsPerReply+i] = Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name, IsError: true,
				Content: fmt.Sprintf("not run: too many tool calls in one reply; at most %d run", MaxToolCallsPerReply)}
		}
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(parallel, len(run)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(run); i = int(next.Add(1)) - 1 {
				out[i] = r.callTool(ctx, req, ts, run[i], sec)
			}
		})
	}
	wg.Wait()
	return out
}

// callTool runs one call with its events.
func (r *Runner) callTool(ctx context.Context, req *runners.Request, ts *toolSet, c ToolCall, sec *secrets) Message {
	req.Events.Emit(events.Event{Type: events.ToolCallStarted, Execution: req.Execution,
		Tool: c.Name, ToolID: c.ID, Arguments: c.Arguments})
	start := time.Now()
	content, err := r.recordedTool(ctx, req, ts, c, sec)
	m := Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: sec.redact(content)}
	ev := events.Event{Type: events.ToolCallCompleted, Execution: req.Execution,
		Tool: c.Name, ToolID: c.ID, Arguments: c.Arguments, Duration: time.Since(start).Seconds()}
	if err != nil {
		m.Content, m.IsError = sec.redact(err.Error()), true
		ev.Error = m.Content
	} else {
		ev.Output = m.Content
	}
	req.Events.Emit(ev)
	return m
}

// toolError is an error result for the model.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

// runTool checks one call and runs its script: unknown tools, arguments that
// are not JSON or fail the schema, failures and timeouts are errors that go
// back to the model.
func (r *Runner) runTool(ctx context.Context, req *runners.Request, ts *toolSet, c ToolCall) (string, error) {
	ct := ts.byName[c.Name]
	if ct == nil {
		if len(ts.specs) == 0 {
			return "", toolErrorf("unknown tool %q: no tools are available", c.Name)
		}
		names := make([]string, len(ts.specs))
		for i, s := range ts.specs {
			names[i] = s.Name
		}
		return "", toolErrorf("unknown tool %q; available tools: %s", c.Name, strings.Join(names, ", "))
	}
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}" // some servers send "" for a call without arguments
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return "", toolErrorf("invalid arguments for tool %q: not valid JSON: %v", c.Name, err)
	}
	if _, ok := v.(map[string]any); !ok { // whatever the schema says: scripts get an object
		return "", toolErrorf("invalid arguments for tool %q: not a JSON object", c.Name)
	}
	if err := ct.schema.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		msg := err.Error()
		if errors.As(err, &ve) {
			msg = ensemble.ValidationMessage(ve)
		}
		return "", toolErrorf("invalid arguments for tool %q: %s", c.Name, msg)
	}
	if err := ctx.Err(); err != nil {
		return "", toolErrorf("tool %q was not run: cancelled", c.Name)
	}

	path := ct.tool.ScriptPath
	if path == "" {
		path = ct.tool.Script
	}
	res, err := runners.ExecScript(ctx, req, r.environ, map[string]string{
		"ENSEMBLE_TOOL":         c.Name,
		"ENSEMBLE_TOOL_CALL_ID": c.ID,
	}, proc.Spec{
		Path:      path,
		Stdin:     []byte(args),
		Timeout:   ct.tool.Timeout,
		MaxOutput: r.maxToolOutput,
	})
	if err != nil {
		var te *runners.TimeoutError
		var ce *runners.CancelledError
		switch {
		case errors.As(err, &te) && te.After > 0:
			return "", toolErrorf("tool %q timed out after %s", c.Name, te.After)
		case errors.As(err, &te) && te.Cause != nil: // the agent's timeout_seconds
			return "", toolErrorf("tool %q was stopped: %v", c.Name, te.Cause)
		case errors.As(err, &te):
			return "", toolErrorf("tool %q was stopped: the run's time limit was reached", c.Name)
		case errors.As(err, &ce) || ctx.Err() != nil:
			return "", toolErrorf("tool %q was cancelled", c.Name)
		}
		return "", toolErrorf("tool %q failed: %v", c.Name, err)
	}
	out := strings.ToValidUTF8(string(res.Stdout), "\uFFFD")
	return strings.TrimRight(out, "\r\n"), nil
}
