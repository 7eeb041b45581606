package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/mcptest"
	"github.com/ensemble-run/ensemble/internal/mcptools"
	"github.com/ensemble-run/ensemble/kinds"
)

func TestMain(m *testing.M) {
	mcptest.Main()
	os.Exit(m.Run())
}

// load writes an ensemble whose agent lists tools, with one MCP server
// "t": the test binary over stdio, or the in-process server over HTTP.
func load(t *testing.T, overHTTP bool, tools ...string) *ensemble.Ensemble {
	t.Helper()
	return loadEnv(t, overHTTP, nil, tools...)
}

// loadEnv is load with more variables in a stdio server's env.
func loadEnv(t *testing.T, overHTTP bool, more map[string]string, tools ...string) *ensemble.Ensemble {
	t.Helper()
	server := map[string]any{}
	if overHTTP {
		server["url"] = mcptest.HTTP(t)
	} else {
		cmd, env := mcptest.Command(t)
		maps.Copy(env, more)
		env["SECRET_KEY"] = "from-the-file"
		server["command"], server["env"] = cmd, env
	}
	doc := map[string]any{
		"name":        "m",
		"models":      map[string]any{"m": map[string]any{"provider": "openai", "model": "x", "api_key_env": "SECRET_KEY"}},
		"mcp_servers": map[string]any{"t": server},
		"agents":      []any{map[string]any{"name": "a", "model_profile": "m", "tools": tools}},
	}
	if len(tools) == 0 {
		delete(doc["agents"].([]any)[0].(map[string]any), "tools")
	}
	raw, _ := json.Marshal(doc)
	path := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := ensemble.Load(path, kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func call(t *testing.T, s *mcptools.Servers, e *ensemble.Ensemble, name, args string) (string, bool) {
	t.Helper()
	tools, err := s.Tools(e, name)
	if err != nil || len(tools) != 1 {
		t.Fatalf("%s: %v %v", name, tools, err)
	}
	text, isError, err := tools[0].Call(t.Context(), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return text, isError
}

func TestStdioAndHTTP(t *testing.T) {
	t.Parallel()
	for _, overHTTP := range []bool{false, true} {
		name := "stdio"
		if overHTTP {
			name = "http"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := load(t, overHTTP, "t.*")
			s, err := mcptools.Start(t.Context(), e, mcptools.Options{
				Environ: func() []string { return []string{"SECRET_KEY=sk-never", "VISIBLE=yes", "PATH=" + os.Getenv("PATH")} },
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			all, err := s.Tools(e, "t.*")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range all {
				names = append(names, tl.ModelName)
			}
			if got := strings.Join(names, ","); !strings.Contains(got, "t__echo") || !strings.Contains(got, "t__fail") {
				t.Fatalf("tools %s", got)
			}
			if text, isErr := call(t, s, e, "t.echo", `{"text":"hi"}`); text != "echo: hi" || isErr {
				t.Errorf("echo: %q %v", text, isErr)
			}
			if text, isErr := call(t, s, e, "t.fail", `{}`); text != "it broke" || !isErr {
				t.Errorf("fail: %q %v", text, isErr)
			}
			if !overHTTP {
				// The server's env: API keys are never passed, even when
				// the file sets them; the rest of the environment is.
				if text, _ := call(t, s, e, "t.env", `{"name":"SECRET_KEY"}`); text != "<unset>" {
					t.Errorf("SECRET_KEY reached the server: %q", text)
				}
				if text, _ := call(t, s, e, "t.env", `{"name":"VISIBLE"}`); text != "yes" {
					t.Errorf("VISIBLE: %q", text)
				}
			}
		})
	}
}

func TestUnknownToolFailsAtStart(t *testing.T) {
	t.Parallel()
	e := load(t, true, "t.echo", "t.eccho")
	_, err := mcptools.Start(t.Context(), e, mcptools.Options{})
	if err == nil {
		t.Fatal("started")
	}
	for _, want := range []string{`agent "a"`, `MCP server "t" has no tool "eccho"`, "its tools: ", "echo, ", `did you mean "echo"?`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestServerThatCannotStart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "e.yaml")
	os.WriteFile(path, []byte(`name: m
models: {m: {provider: ollama, model: x}}
mcp_servers: {gone: {command: ["/nonexistent/server"]}, unused: {command: ["/nonexistent/other"]}}
agents: [{name: a, model_profile: m, tools: [gone.x]}]
`), 0o644)
	e, err := ensemble.Load(path, kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcptools.Start(t.Context(), e, mcptools.Options{})
	if err == nil || !strings.Contains(err.Error(), path+`:3: MCP server "gone": cannot connect`) || strings.Contains(err.Error(), "unused") {
		t.Fatalf("got %v", err)
	}
}

// TestCloseKillsTheProcessGroup: the server's process is gone once the run
// ends.
func TestCloseKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	e := load(t, false, "t.echo")
	s, err := mcptools.Start(t.Context(), e, mcptools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID(e.MCPServer("t"))
	if pid <= 0 {
		t.Fatalf("pid %d", pid)
	}
	s.Close()
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process group %d still there: %v", pid, err)
	}
	if _, err := s.Tools(e, "t.echo"); err == nil {
		t.Error("tools after Close")
	}
}

// TestNoMCPToolsStartsNothing: a server no agent takes a tool from is not
// started (the server writes a file as it starts). The same ensemble with a
// tool of it does start it, which shows that the file would be there.
func TestNoMCPToolsStartsNothing(t *testing.T) {
	t.Parallel()
	start := func(tools ...string) bool {
		marker := filepath.Join(t.TempDir(), "started")
		e := loadEnv(t, false, map[string]string{mcptest.StartedVar: marker}, tools...)
		s, err := mcptools.Start(context.Background(), e, mcptools.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		_, err = os.Stat(marker)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	if start() {
		t.Error("the MCP server was started though no agent takes a tool from it")
	}
	if !start("t.echo") {
		t.Fatal("the MCP server an agent takes t.echo from did not write its file as it started")
	}
}

// TestChildEnsemblesShareTheParentsServer: a child's agent naming a server
// it inherits uses the parent's, started once; a tool the server lacks in
// the child is found at start too.
func TestChildEnsemblesShareTheParentsServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, env := mcptest.Command(t)
	server, _ := json.Marshal(map[string]any{"command": cmd, "env": env})
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("parent.yaml", `name: parent
models: {m: {provider: ollama, model: x}}
mcp_servers: {t: `+string(server)+`}
agents:
  - {name: a, model_profile: m, tools: [t.echo]}
  - {name: kid, ensemble: child.yaml, dependencies: [a]}
`)
	write("child.yaml", "name: child\nagents:\n  - {name: b, model_profile: m, tools: [t.fail, t.nope]}\n")
	e, err := ensemble.Load(filepath.Join(dir, "parent.yaml"), kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcptools.Start(t.Context(), e, mcptools.Options{})
	if err == nil || !strings.Contains(err.Error(), `agent "b": MCP server "t" has no tool "nope"`) {
		t.Fatalf("got %v", err)
	}
	write("child.yaml", "name: child\nagents:\n  - {name: b, model_profile: m, tools: [t.fail]}\n")
	e, err = ensemble.Load(filepath.Join(dir, "parent.yaml"), kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcptools.Start(t.Context(), e, mcptools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var child *ensemble.Ensemble
	for _, a := range e.Agents {
		if c, ok := a.Kind.(interface {
			Children(*ensemble.Agent) []*ensemble.Ensemble
		}); ok {
			child = c.Children(a)[0]
		}
	}
	if text, isErr := call(t, s, child, "t.fail", `{}`); text != "it broke" || !isErr {
		t.Errorf("child's call: %q %v", text, isErr)
	}
	if s.PID(child.MCPServer("t")) != s.PID(e.MCPServer("t")) {
		t.Error("the child has a server of its own")
	}
}

// A server that dies during a call: the call's error says what it last
// wrote on stderr, and so do the calls after it.
func TestServerThatDiesSaysWhy(t *testing.T) {
	t.Parallel()
	e := loadEnv(t, false, map[string]string{mcptest.ExitVar: "1"}, "t.exit", "t.echo")
	s, err := mcptools.Start(t.Context(), e, mcptools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ name, args string }{{"t.exit", `{"text":"out of disk space"}`}, {"t.echo", `{"text":"hi"}`}} {
		tools, err := s.Tools(e, c.name)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = tools[0].Call(t.Context(), json.RawMessage(c.args))
		if err == nil || !strings.Contains(err.Error(), "its stderr ends with: out of disk space") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// A tool of the file that the model would call by the name of an MCP tool
// (t__echo) stops the run at start, naming both tools, instead of failing
// each execution of the agent.
func TestSameModelNameFailsAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.sh"), []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, env := mcptest.Command(t)
	server, _ := json.Marshal(map[string]any{"command": cmd, "env": env})
	path := filepath.Join(dir, "e.yaml")
	os.WriteFile(path, []byte(`name: e
models: {m: {provider: ollama, model: x}}
mcp_servers: {t: `+string(server)+`}
tools:
  - {name: t__echo, script: tool.sh}
agents:
  - {name: a, model_profile: m, tools: [t__echo, t.*]}
  - {name: b, model_profile: m, tools: [t__echo, t.fail]}
`), 0o644)
	e, err := ensemble.Load(path, kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcptools.Start(t.Context(), e, mcptools.Options{})
	if err == nil {
		s.Close()
		t.Fatal("started")
	}
	if want := `agent "a": tools "t__echo" and "t.echo" are both called "t__echo" by the model`; !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nlacks %s", err, want)
	}
	if strings.Contains(err.Error(), `agent "b"`) {
		t.Errorf("agent b has no two tools of one name: %v", err)
	}
}

// A start interrupted (Ctrl-C) is reported as such, not as a server that
// failed: callers tell it from a broken server with errors.Is.
func TestStartInterrupted(t *testing.T) {
	t.Parallel()
	e := load(t, false, "t.echo")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s, err := mcptools.Start(ctx, e, mcptools.Options{})
	if err == nil {
		s.Close()
		t.Fatal("started")
	}
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("got %v", err)
	}
}
