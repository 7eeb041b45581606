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

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/proc"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// DefaultMaxToolOutput caps what one tool call may print; more is an error
// result (a model cannot use megabytes of tool output anyway).
const DefaultMaxToolOutput int64 = 1 << 20

// compiledTool is a tool with its schema compiled, once per tool (and so
// once per loaded ensemble).
type compiledTool struct {
	once   sync.Once
	tool   *ensemble.Tool // a script tool, or
	mcp    *agent.Tool    // a tool of an MCP server
	spec   ToolSpec
	schema *jsonschema.Schema
	err    error
}

func (r *Runner) compiledTool(t *ensemble.Tool, m *agent.Tool) (*compiledTool, error) {
	var key any = t
	if m != nil {
		key = m
	}
	r.toolsMu.Lock()
	ct := r.tools[key]
	if ct == nil {
		if r.tools == nil || len(r.tools) >= maxCachedTools {
			// A long-lived runner (ensemble test) sees many loaded ensembles.
			r.tools = map[any]*compiledTool{}
		}
		ct = &compiledTool{tool: t, mcp: m}
		r.tools[key] = ct
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
	if ct.mcp != nil { // the same checks, under the name the model calls it by
		t = &ensemble.Tool{Name: ct.mcp.ModelName, Description: ct.mcp.Description, Parameters: ct.mcp.InputSchema}
	}
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
	if err := ensemble.CheckSchemaSize(normalized); err != nil {
		return fmt.Errorf("tool %q: parameters %v", t.Name, err)
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

// toolSet compiles the tools an agent names: tools of the file's tools:
// list, and SERVER.TOOL or SERVER.* of the run's MCP servers.
func (r *Runner) toolSet(servers agent.ToolServers, ens *ensemble.Ensemble, names []string) (*toolSet, error) {
	if len(names) == 0 {
		return &toolSet{}, nil
	}
	ts := &toolSet{byName: make(map[string]*compiledTool, len(names))}
	for _, n := range names {
		if _, _, ok := ensemble.SplitMCPTool(n); ok {
			if err := r.addMCPTools(servers, ts, ens, n); err != nil {
				return nil, err
			}
			continue
		}
		var t *ensemble.Tool
		if ens != nil {
			t = ens.Tool(n)
		}
		if t == nil {
			return nil, fmt.Errorf("unknown tool %q", n)
		}
		ct, err := r.compiledTool(t, nil)
		if err != nil {
			return nil, err
		}
		if err := ts.add(n, ct); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// add adds a tool under the name the model calls it by; the same tool twice
// is kept once, two tools under one name are an error.
func (ts *toolSet) add(name string, ct *compiledTool) error {
	switch first, dup := ts.byName[name]; {
	case dup && first == ct:
		return nil
	case dup:
		return fmt.Errorf("two tools are called %q: a tool of the file and a tool of an MCP server (SERVER__TOOL), or two MCP tools whose names differ only in characters a model API refuses", name)
	}
	ts.byName[name] = ct
	ts.specs = append(ts.specs, ct.spec)
	return nil
}

// addMCPTools adds the tools of the run's MCP servers that name, SERVER.TOOL
// or SERVER.*, stands for (docs/llm.md#mcp-tools).
func (r *Runner) addMCPTools(servers agent.ToolServers, ts *toolSet, ens *ensemble.Ensemble, name string) error {
	if ens == nil {
		return fmt.Errorf("unknown tool %q", name)
	}
	if servers == nil {
		srv, _, _ := ensemble.SplitMCPTool(name)
		return fmt.Errorf("tool %q: MCP server %q was not started for this run", name, srv)
	}
	tools, err := servers.Tools(ens, name)
	if err != nil {
		return err
	}
	for _, t := range tools {
		ct, err := r.compiledTool(nil, t)
		if err != nil {
			return err
		}
		if err := ts.add(t.ModelName, ct); err != nil {
			return err
		}
	}
	return nil
}

// fileName is the name of the tool the model called name in the ensemble
// file: SERVER.TOOL for a tool of an MCP server; name itself for a tool of
// the file, or for one the agent does not have.
func (ts *toolSet) fileName(name string) string {
	ct := ts.byName[name]
	switch {
	case ct == nil:
		return name
	case ct.mcp != nil && ct.mcp.Server != nil:
		return ct.mcp.Server.Name + "." + ct.mcp.Name
	case ct.tool != nil:
		return ct.tool.Name
	}
	return name
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
func (r *Runner) runTools(ctx context.Context, req *agent.Request, ts *toolSet, calls []ToolCall, parallel int, sec *secrets) []Message {
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
func (r *Runner) callTool(ctx context.Context, req *agent.Request, ts *toolSet, c ToolCall, sec *secrets) Message {
	req.Events.Emit(events.Event{Type: events.ToolCallStarted, Execution: req.Execution,
		Tool: c.Name, ToolID: c.ID, Arguments: c.Arguments})
	start := time.Now()
	ctx, span, tr := startTool(ctx, req.Services.Tracer, c)
	content, err := r.recordedTool(ctx, req, ts, c, sec)
	m := Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: sec.redact(content)}
	if span != nil {
		defer endTool(span, tr, c, &m, sec)
	}
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
func (r *Runner) runTool(ctx context.Context, req *agent.Request, ts *toolSet, c ToolCall) (string, error) {
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
	if ct.mcp != nil {
		return r.callMCP(ctx, ct.mcp, c.Name, args)
	}

	path := ct.tool.ScriptPath
	if path == "" {
		path = ct.tool.Script
	}
	res, err := scriptexec.ExecScript(ctx, req, r.environ, map[string]string{
		"ENSEMBLE_TOOL":         c.Name,
		"ENSEMBLE_TOOL_CALL_ID": c.ID,
	}, proc.Spec{
		Path:      path,
		Stdin:     []byte(args),
		Timeout:   ct.tool.Timeout,
		MaxOutput: r.maxToolOutput,
	})
	if err != nil {
		var te *scriptexec.TimeoutError
		var ce *scriptexec.CancelledError
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

// callMCP calls a tool of an MCP server under its server's timeout_seconds:
// the server's error results, a timeout and a failed call are error results
// for the model, as a script tool's are; so is a result larger than the
// output cap of tool scripts.
func (r *Runner) callMCP(ctx context.Context, t *agent.Tool, name, args string) (string, error) {
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if t.Server.Timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, t.Server.Timeout)
	}
	defer cancel()
	text, isError, err := t.Call(callCtx, json.RawMessage(args))
	switch {
	case err != nil && ctx.Err() == nil && callCtx.Err() != nil:
		return "", toolErrorf("tool %q timed out after %s", name, t.Server.Timeout)
	case err != nil && ctx.Err() != nil:
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return "", toolErrorf("tool %q was stopped: %v", name, cause)
		}
		return "", toolErrorf("tool %q was cancelled", name)
	case err != nil:
		return "", toolErrorf("tool %q failed: MCP server %q: %v", name, t.Server.Name, err)
	case int64(len(text)) > r.maxToolOutput:
		return "", toolErrorf("tool %q returned more than %d bytes", name, r.maxToolOutput)
	}
	text = strings.TrimRight(strings.ToValidUTF8(text, "\uFFFD"), "\r\n")
	if isError {
		return "", toolErrorf("%s", text)
	}
	return text, nil
}
