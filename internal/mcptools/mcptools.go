// Package mcptools is the MCP servers of one run (docs/llm.md#mcp-tools):
// Start starts every server the run's LLM agents name (a command in its own
// process group, or a streamable HTTP server by URL), lists their tools and
// checks the agents' tool names against them before any model request;
// the run lends them to its executions (agent.Services.Tools), and the LLM
// kind calls their tools through its tool loop; Close ends them with the
// run.
package mcptools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/proc"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// Options tune Start.
type Options struct {
	// Environ is the base environment of the servers' commands, before
	// every api_key_env variable is taken out; nil means os.Environ.
	Environ func() []string
	// HTTPClient reaches the servers given by URL; nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// StartTimeout bounds starting one server and listing its tools; 0
	// means DefaultStartTimeout.
	StartTimeout time.Duration
	// Deadline bounds the start of all the servers together: the run's
	// timeout, which a server that never answers must not outlast; 0
	// means none beyond StartTimeout.
	Deadline time.Duration
}

// DefaultStartTimeout bounds the start of one server: a command that
// installs a package first may take a while.
const DefaultStartTimeout = 2 * time.Minute

// ProtocolVersion is the MCP version the client asks for: the one today's
// servers speak.
const ProtocolVersion = "2025-11-25"

// Servers are the MCP servers of one run. The zero value has none.
type Servers struct {
	opts   Options
	mu     sync.Mutex
	byDecl map[*ensemble.MCPServer]*server
}

// server is one started server.
type server struct {
	decl    *ensemble.MCPServer
	session *mcp.ClientSession
	cmd     *exec.Cmd // nil for a URL
	mark    string    // the MarkEnv entry of cmd's processes (proc.NewMark)
	stderr  *tail
	tools   []*agent.Tool // in the order the server lists them
	byName  map[string]*agent.Tool
}

var _ agent.ToolServers = (*Servers)(nil)

// Start starts every MCP server that an agent of e or of its child
// ensembles names in its tools, lists the servers' tools and checks that
// each SERVER.TOOL an agent names exists. Every problem is reported in the
// error; on an error, the servers already started are closed. A file whose
// agents name no MCP tool starts nothing.
func Start(ctx context.Context, e *ensemble.Ensemble, opts Options) (*Servers, error) {
	s := &Servers{opts: opts, byDecl: map[*ensemble.MCPServer]*server{}}
	uses, agents := mcpUses(e)
	// The servers start together: one that takes its time does not hold
	// the others back, and the run's deadline bounds them all.
	all := toStart(uses)
	if len(all) > 0 && ctx.Err() != nil {
		// Interrupted (Ctrl-C): say so, not that each server failed.
		return nil, fmt.Errorf("MCP servers not started: %w", context.Cause(ctx))
	}
	startCtx := ctx
	if opts.Deadline > 0 {
		var cancel context.CancelFunc
		startCtx, cancel = context.WithTimeoutCause(ctx, opts.Deadline, errDeadline)
		defer cancel()
	}
	var wg sync.WaitGroup
	for _, st := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.srv, st.err = s.start(startCtx, st.ens, st.decl)
			st.late = st.err != nil && startCtx.Err() != nil
		}()
	}
	wg.Wait()
	var late []string // the servers the deadline cut short
	var errs []error
	for _, st := range all {
		if st.err == nil {
			s.byDecl[st.decl] = st.srv
			continue
		}
		if st.late {
			late = append(late, strconv.Quote(st.decl.Name))
			continue
		}
		errs = append(errs, st.err)
	}
	if len(all) > 0 && ctx.Err() != nil {
		s.Close()
		if len(late) == 0 {
			return nil, fmt.Errorf("MCP servers not started: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("MCP servers %s not started: %w", strings.Join(late, ", "), context.Cause(ctx))
	}
	if len(late) > 0 {
		s.Close()
		return nil, &TimeoutError{Servers: late, Timeout: opts.Deadline}
	}
	for _, u := range uses {
		if _, err := s.Tools(u.ens, u.name); err != nil && !errors.Is(err, errNotStarted) {
			errs = append(errs, fmt.Errorf("agent %q: %w", u.agent.Name, err))
		}
	}
	if len(errs) == 0 {
		for _, n := range agents {
			if err := s.sameModelName(n.ens, n.tools); err != nil {
				errs = append(errs, fmt.Errorf("agent %q: %w", n.agent.Name, err))
			}
		}
	}
	if len(errs) > 0 {
		s.Close()
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// mcpUse is an MCP tool named by an agent of e.
type mcpUse struct {
	ens   *ensemble.Ensemble
	agent *ensemble.Agent
	name  string
}

// mcpAgent is an agent that names an MCP tool, with all its tools.
type mcpAgent struct {
	ens   *ensemble.Ensemble
	agent *ensemble.Agent
	tools []string
}

// mcpUses are the MCP tools the agents of e and its children name, and the
// agents that name one.
func mcpUses(e *ensemble.Ensemble) (uses []mcpUse, agents []mcpAgent) {
	agent.Walk(e, func(e *ensemble.Ensemble, a *ensemble.Agent) {
		names, mcp := agent.Tools(a), false
		for _, n := range names {
			if _, _, ok := ensemble.SplitMCPTool(n); ok {
				uses = append(uses, mcpUse{e, a, n})
				mcp = true
			}
		}
		if mcp {
			agents = append(agents, mcpAgent{e, a, names})
		}
	})
	return uses, agents
}

// starting is a server being started, and how its start ended.
type starting struct {
	ens  *ensemble.Ensemble
	decl *ensemble.MCPServer
	srv  *server
	err  error
	late bool // it failed once the deadline had passed
}

// toStart is the servers the uses name, each once.
func toStart(uses []mcpUse) []*starting {
	var all []*starting
	seen := map[*ensemble.MCPServer]bool{}
	for _, u := range uses {
		name, _, _ := ensemble.SplitMCPTool(u.name)
		decl := u.ens.MCPServer(name)
		if decl == nil || seen[decl] {
			continue
		}
		seen[decl] = true
		all = append(all, &starting{ens: u.ens, decl: decl})
	}
	return all
}

// sameModelName reports two different tools among names (the tools of one
// agent) that the model would call by one name: a tool of the file and an
// MCP tool SERVER__TOOL, or two MCP tools whose names differ only in
// characters a model API refuses.
func (s *Servers) sameModelName(ens *ensemble.Ensemble, names []string) error {
	type origin struct {
		name string      // as the agent's tools or the server list it
		tool *agent.Tool // nil for a tool of the file
	}
	byModel := map[string]origin{}
	var errs []error
	add := func(model string, o origin) {
		first, dup := byModel[model]
		switch {
		case !dup:
			byModel[model] = o
		case first.tool != o.tool || (o.tool == nil && first.name != o.name):
			errs = append(errs, fmt.Errorf("tools %q and %q are both called %q by the model: list the tools one by one to leave one out", first.name, o.name, model))
		}
	}
	for _, n := range names {
		if _, _, ok := ensemble.SplitMCPTool(n); !ok {
			add(n, origin{name: n})
			continue
		}
		tools, err := s.Tools(ens, n)
		if err != nil {
			continue // reported already
		}
		for _, t := range tools {
			add(t.ModelName, origin{name: t.Server.Name + "." + t.Name, tool: t})
		}
	}
	return errors.Join(errs...)
}

var errNotStarted = errors.New("was not started")

// errDeadline is the cause of the run's deadline passing while the
// servers start.
var errDeadline = errors.New("the run's timeout")

// TimeoutError is a start that the run's deadline (Options.Deadline) cut
// short: the servers that had not answered yet.
type TimeoutError struct {
	Servers []string // quoted names
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	what := "MCP server " + e.Servers[0]
	if len(e.Servers) > 1 {
		what = "MCP servers " + strings.Join(e.Servers, ", ")
	}
	return fmt.Sprintf("%s did not start within the run's timeout (%s): no answer to the initialize request in time", what, e.Timeout)
}

// start starts one server and lists its tools.
func (s *Servers) start(ctx context.Context, ens *ensemble.Ensemble, decl *ensemble.MCPServer) (*server, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(s.opts.StartTimeout, DefaultStartTimeout))
	defer cancel()
	srv := &server{decl: decl, byName: map[string]*agent.Tool{}}
	var (
		transport mcp.Transport
		stderrW   *os.File // closed once Connect has started the command
	)
	if decl.URL != "" {
		transport = &mcp.StreamableClientTransport{Endpoint: decl.URL, HTTPClient: s.opts.HTTPClient}
	} else {
		environ := s.opts.Environ
		if environ == nil {
			environ = os.Environ
		}
		cmd := exec.Command(decl.Command[0], decl.Command[1:]...)
		cmd.Dir = decl.Dir
		srv.mark = proc.NewMark()
		cmd.Env = proc.MarkedEnv(scriptexec.ScriptEnv(environ(), ens, decl.Env), srv.mark)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// stderr through a pipe of our own, read to its end: a call that
		// fails because the server died can then wait for its last words.
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: %v", decl.Name, err)
		}
		srv.stderr = &tail{max: 4 << 10, done: make(chan struct{})}
		go srv.stderr.readFrom(r)
		cmd.Stderr = w
		stderrW = w
		cmd.WaitDelay = 2 * time.Second
		srv.cmd = cmd
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ensemble", Version: "1"}, nil)
	session, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if stderrW != nil {
		stderrW.Close()
	}
	if err != nil {
		srv.kill()
		return nil, fmt.Errorf("%s: MCP server %q: cannot connect: %v%s", where(decl), decl.Name, cause(ctx, err), srv.stderrTail(": "))
	}
	srv.session = session
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			srv.close()
			return nil, fmt.Errorf("%s: MCP server %q: cannot list its tools: %v%s", where(decl), decl.Name, cause(ctx, err), srv.stderrTail(": "))
		}
		tool := &agent.Tool{Server: decl, Name: t.Name, Description: t.Description, Call: srv.caller(t.Name)}
		tool.ModelName = modelName(decl.Name, t.Name)
		if t.InputSchema != nil {
			raw, err := json.Marshal(t.InputSchema)
			if err == nil {
				err = json.Unmarshal(raw, &tool.InputSchema)
			}
			if err != nil {
				srv.close()
				return nil, fmt.Errorf("%s: MCP server %q: tool %q: its input schema is not a JSON object: %v", where(decl), decl.Name, t.Name, err)
			}
		}
		if tool.InputSchema == nil {
			tool.InputSchema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		if _, dup := srv.byName[t.Name]; !dup {
			srv.byName[t.Name] = tool
			srv.tools = append(srv.tools, tool)
		}
	}
	return srv, nil
}

// where is FILE:LINE of a server's declaration, for the errors of its start.
func where(decl *ensemble.MCPServer) string {
	return fmt.Sprintf("%s:%d", decl.File, decl.Pos.Line)
}

func cause(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer in time: %w", err)
	}
	return err
}

var invalidModelChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// modelName is the name the model calls a server's tool by: SERVER__TOOL
// with any character a model API refuses replaced by _, cut to 64
// characters.
func modelName(server, tool string) string {
	n := server + "__" + invalidModelChars.ReplaceAllString(tool, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// Tools returns the tools that an agent of ens names with name, SERVER.TOOL
// or SERVER.* (every tool of the server, in its order). A tool the server
// does not have is an error naming the server and the tools it has.
func (s *Servers) Tools(ens *ensemble.Ensemble, name string) ([]*agent.Tool, error) {
	srvName, toolName, _ := ensemble.SplitMCPTool(name)
	decl := ens.MCPServer(srvName)
	if decl == nil {
		return nil, fmt.Errorf("tool %q: unknown MCP server %q", name, srvName)
	}
	var srv *server
	if s != nil {
		s.mu.Lock()
		srv = s.byDecl[decl]
		s.mu.Unlock()
	}
	if srv == nil {
		return nil, fmt.Errorf("tool %q: MCP server %q %w for this run", name, srvName, errNotStarted)
	}
	if toolName == "*" {
		return srv.tools, nil
	}
	if t := srv.byName[toolName]; t != nil {
		return []*agent.Tool{t}, nil
	}
	names := make([]string, len(srv.tools))
	for i, t := range srv.tools {
		names[i] = t.Name
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("MCP server %q has no tool %q: it has no tools", srvName, toolName)
	}
	return nil, fmt.Errorf("MCP server %q has no tool %q; its tools: %s%s", srvName, toolName,
		strings.Join(names, ", "), ensemble.Suggest(toolName, names))
}

// caller is the Call of the server's tool name: it calls the tool with
// args, a JSON object. The result is the text of its content (each text
// part in order; other parts as JSON); isError is the server's verdict on
// the call. err is a failure to call it at all (the server is gone, the
// context ended).
func (srv *server) caller(name string) func(ctx context.Context, args json.RawMessage) (string, bool, error) {
	return func(ctx context.Context, args json.RawMessage) (string, bool, error) {
		return srv.call(ctx, name, args)
	}
}

func (srv *server) call(ctx context.Context, name string, args json.RawMessage) (text string, isError bool, err error) {
	res, err := srv.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		if ctx.Err() == nil {
			// The server failed or died: what it said on stderr tells why.
			return "", false, fmt.Errorf("%w%s", err, srv.stderrTail("; its stderr ends with: "))
		}
		return "", false, err
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
			continue
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return "", false, err
		}
		parts = append(parts, string(raw))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", false, err
		}
		parts = append(parts, string(raw))
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

// PID is the process of the started command server declared by d (its
// process group's id too), 0 when there is none: an HTTP server, or one
// not started.
func (s *Servers) PID(d *ensemble.MCPServer) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv := s.byDecl[d]; srv != nil && srv.cmd != nil && srv.cmd.Process != nil {
		return srv.cmd.Process.Pid
	}
	return 0
}

// Close ends every server: a session is closed (a command's stdin is
// closed, as the protocol asks), then a command's whole process group is
// killed. Safe to call more than once, and on nil.
func (s *Servers) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	servers := slices.Collect(maps.Values(s.byDecl))
	s.byDecl = map[*ensemble.MCPServer]*server{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(srv.close)
	}
	wg.Wait()
	return nil
}

func (srv *server) close() {
	if srv.session != nil {
		_ = srv.session.Close()
	}
	srv.kill()
}

// kill kills a command's process group (what the server started too),
// and what it started that left the group (proc.KillEscaped).
func (srv *server) kill() {
	if srv.cmd != nil && srv.cmd.Process != nil {
		_ = proc.KillGroup(srv.cmd.Process.Pid)
		proc.KillEscaped(srv.mark)
	}
}

// stderrTail is the end of a command's stderr for an error, prefixed by
// sep: once the command has closed it (it exited), or after 2 seconds (a
// grandchild holding it open).
func (srv *server) stderrTail(sep string) string {
	if srv.stderr == nil {
		return ""
	}
	select {
	case <-srv.stderr.done:
	case <-time.After(2 * time.Second):
	}
	if t := strings.TrimSpace(srv.stderr.String()); t != "" {
		return sep + t
	}
	return ""
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu   sync.Mutex
	max  int
	buf  bytes.Buffer
	done chan struct{} // closed once readFrom has read to the end
}

// readFrom copies r into t until r ends, then closes r and t.done.
func (t *tail) readFrom(r *os.File) {
	defer close(t.done)
	defer r.Close()
	_, _ = io.Copy(t, r)
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
