package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/internal/mcptest"
)

// TestMCPExampleCallsItsServer runs examples/mcp-tools for real against a
// fake model that calls the glossary server's tools: the results the model
// gets back are the server's, and a wrong term is an error result it sees.
func TestMCPExampleCallsItsServer(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		if r.N > 0 {
			return fakemodel.Reply{Text: `{"term":"quorum","definition":"The smallest number of replicas that must agree for a decision to count."}`}
		}
		return fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "c1", Name: "glossary__list_terms", Args: "{}"},
			{ID: "c2", Name: "glossary__define", Args: `{"term":"quorum"}`},
			{ID: "c3", Name: "glossary__define", Args: `{"term":"paxos"}`}}}
	})
	o := ensembleEnv(t, map[string]string{"MODEL_BASE_URL": srv.URL()}, "run", "../../examples/mcp-tools/ensemble.yaml", "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s\n%s", o.code, o.stderr, o.stdout)
	}
	if !strings.Contains(o.stdout, `"publish": "**quorum**: The smallest number`) {
		t.Errorf("result: %s", o.stdout)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var results []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	want := []string{"backpressure, idempotent, quorum",
		"The smallest number of replicas that must agree for a decision to count.",
		"Error: no entry for 'paxos'; known terms: backpressure, idempotent, quorum"}
	if strings.Join(results, "\n") != strings.Join(want, "\n") {
		t.Errorf("tool results:\n%s\nwant:\n%s", strings.Join(results, "\n"), strings.Join(want, "\n"))
	}
}

// TestMCPServe drives `ensemble mcp serve examples --responses` (the real
// binary, over stdio) with the SDK's client: every example is a tool, and a
// call runs it and returns its result JSON.
func TestMCPServe(t *testing.T) {
	t.Parallel()
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "mcp", "serve", "../../examples", "--responses")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	defer session.Close()
	var names []string
	for tool, err := range session.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	for _, want := range []string{"hello-scripts", "iterative-analysis", "mcp-tools", "local-ollama"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	call := func(name string, args map[string]any) (map[string]any, bool) {
		t.Helper()
		res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", name, err, text)
		}
		return out, res.IsError
	}
	out, isErr := call("hello-scripts", map[string]any{"input": "mcp"})
	if isErr || out["completion_reason"] != "completed" || out["final_state"].(map[string]any)["shouter"] != "HELLO, MCP!" {
		t.Errorf("hello-scripts: %v %v", isErr, out)
	}
	out, isErr = call("mcp-tools", nil) // injected reply, real MCP server and script
	if isErr || !strings.HasPrefix(out["final_state"].(map[string]any)["publish"].(string), "**quorum**") {
		t.Errorf("mcp-tools: %v %v", isErr, out)
	}
	out, isErr = call("hello-scripts", map[string]any{"input": "  "}) // greet.py fails
	if !isErr || out["completion_reason"] != "completed" {
		t.Errorf("a failed run: %v %v", isErr, out)
	}
}

// TestMCPToolInAChildEnsemble: a child ensemble's agent calls a tool of a
// server it inherits from its parent, through the run's servers.
func TestMCPToolInAChildEnsemble(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		if r.N == 0 {
			return fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "t__echo", Args: `{"text":"from the child"}`}}}
		}
		return fakemodel.Reply{Text: "done"}
	}, fakemodel.WithUsage(1, 1))
	dir := t.TempDir()
	server := testMCPServer(t)
	writeFile(t, filepath.Join(dir, "parent.yaml"), `name: parent
models: {m: {provider: ollama, model: x, base_url: "${TEST_LLM_URL}"}}
mcp_servers: {t: `+server+`}
agents:
  - {name: kid, ensemble: child.yaml}
`)
	writeFile(t, filepath.Join(dir, "child.yaml"), "name: child\nagents:\n  - {name: b, model_profile: m, prompt: Go., tools: [t.echo]}\n")
	o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL()}, "run", filepath.Join(dir, "parent.yaml"), "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s\n%s", o.code, o.stderr, o.stdout)
	}
	var results []string
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
	}
	if strings.Join(results, "|") != "echo: from the child" {
		t.Errorf("tool results %q", results)
	}
}

// TestMCPUnknownToolStopsTheRun: a tool the server lacks ends the command
// with exit 2 before any model request, naming the server and its tools.
func TestMCPUnknownToolStopsTheRun(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, nil)
	dir := t.TempDir()
	server := testMCPServer(t)
	writeFile(t, filepath.Join(dir, "e.yaml"), `name: e
models: {m: {provider: ollama, model: x, base_url: "${TEST_LLM_URL}"}}
mcp_servers: {t: `+server+`}
agents:
  - {name: b, model_profile: m, tools: [t.ecko]}
`)
	o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL()}, "run", filepath.Join(dir, "e.yaml"), "--output", "json")
	if n := srv.Count(); n != 0 {
		t.Errorf("%d model requests", n)
	}
	if o.code != 2 || !strings.Contains(o.stderr, `agent "b": MCP server "t" has no tool "ecko"; its tools: block, echo, env, fail, meet; did you mean "echo"?`) {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
}

// TestMCPServeReportsABrokenFile: a YAML file with a syntax error is
// reported on stderr with its line, not skipped silently as if it were no
// ensemble; the other ensembles are served.
func TestMCPServeReportsABrokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("good.yaml", "version: 1\nname: good\nagents:\n  - name: e\n    script: echo.sh\n")
	write("echo.sh", "#!/bin/sh\ncat\n")
	write("broken.yaml", "version: 1\nname: broken\nagents: [ {name: x, script: a.sh}\n")
	// a child that uses its parent's profile: not served alone, not reported
	write("parent.yaml", "name: parent\nmodels:\n  fast: {provider: ollama, model: m}\nagents:\n  - name: r\n    ensemble: child.yaml\n")
	write("child.yaml", "name: child\nagents:\n  - name: think\n    model_profile: fast\n")
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "mcp", "serve", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var names []string
	for tool, err := range session.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	session.Close()
	if strings.Join(names, ",") != "good,parent" {
		t.Errorf("tools %v", names)
	}
	if got := stderr.String(); !strings.Contains(got, "skipping "+filepath.Join(dir, "broken.yaml")) || !strings.Contains(got, "broken.yaml:") || strings.Contains(got, "child.yaml") {
		t.Errorf("stderr: %s", got)
	}
}

// testMCPServer is the test MCP server, as a stdio server of mcp_servers
// (flow-style YAML, which JSON is).
func testMCPServer(t *testing.T) string {
	t.Helper()
	cmd, env := mcptest.Command(t)
	server, err := json.Marshal(map[string]any{"command": cmd, "env": env})
	if err != nil {
		t.Fatal(err)
	}
	return string(server)
}

// TestMCPServeAnswersAMalformedLine: a line that is not JSON gets a Parse
// error with a null id, and the server answers the requests after it.
func TestMCPServeAnswersAMalformedLine(t *testing.T) {
	t.Parallel()
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "mcp", "serve", "../../examples/hello-scripts")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("%v: %s", err, stderr.String())
		}
	}()
	if _, err := io.WriteString(in, "not json\n"+
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	replies := bufio.NewScanner(out)
	replies.Buffer(nil, 1<<20)
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: `,
		`{"jsonrpc":"2.0","id":1,"result":`,
		`{"jsonrpc":"2.0","id":2,"result":{`,
	} {
		if !replies.Scan() {
			t.Fatalf("no reply %s…: %v", want, replies.Err()) // Wait prints stderr
		}
		if !strings.HasPrefix(replies.Text(), want) {
			t.Errorf("reply %s, want %s…", replies.Text(), want)
		}
	}
	if !strings.Contains(replies.Text(), `"name":"hello-scripts"`) {
		t.Errorf("tools/list: %s", replies.Text())
	}
}
