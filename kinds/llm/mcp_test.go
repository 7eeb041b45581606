package llm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/mcptest"
	"github.com/ensemble-run/ensemble/internal/mcptools"
)

func TestMain(m *testing.M) {
	mcptest.Main() // the test binary is also the stdio MCP server
	os.Exit(m.Run())
}

// mcpEnsemble loads a one-agent ensemble whose agent may call tools of the
// test MCP server "t" (over stdio or HTTP), talking to the fake model at
// url, and starts the server for the run.
func mcpEnsemble(t *testing.T, url string, overHTTP bool, server map[string]any, tools ...string) (agent.Services, *ensemble.Ensemble, *ensemble.Agent) {
	t.Helper()
	if server == nil {
		server = map[string]any{}
	}
	if overHTTP {
		server["url"] = mcptest.HTTP(t)
	} else {
		server["command"], server["env"] = mcptest.Command(t)
	}
	doc := map[string]any{
		"name":        "m",
		"models":      map[string]any{"m": map[string]any{"provider": "openai", "model": "gpt-test", "base_url": url, "api_key_env": "TEST_OPENAI_KEY"}},
		"mcp_servers": map[string]any{"t": server},
		"tools":       []any{map[string]any{"name": "local", "script": "echo.sh"}},
		"agents":      []any{map[string]any{"name": "a", "model_profile": "m", "prompt": "Use the tools.", "tools": tools}},
	}
	raw, _ := json.Marshal(doc)
	dir := t.TempDir()
	path := filepath.Join(dir, "e.yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	echo, _ := os.ReadFile(filepath.Join(testdataDir(t), "echo.sh"))
	if err := os.WriteFile(filepath.Join(dir, "echo.sh"), echo, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := ensemble.Load(path, ensemble.LoadOptions{Kinds: testKinds, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	servers, err := mcptools.Start(t.Context(), e, mcptools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { servers.Close() })
	return agent.Services{Tools: servers}, e, e.Agent("a")
}

// TestMCPToolsInTheToolLoop: the model calls MCP tools like script tools:
// the calls of one reply run concurrently (meet a waits for b), results come
// back in the order of the calls, and error results, bad arguments and
// unknown tools go back to the model.
func TestMCPToolsInTheToolLoop(t *testing.T) {
	t.Parallel()
	for _, overHTTP := range []bool{false, true} {
		name := "stdio"
		if overHTTP {
			name = "http"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(oaCalls(
				call{"c1", "t__meet", `{"name": "a", "after": "b"}`},
				call{"c2", "t__meet", `{"name": "b"}`},
				call{"c3", "t__fail", `{}`},
				call{"c4", "t__echo", `{"text": 42}`},
				call{"c5", "t__echo", `{"text": "hi"}`},
				call{"c6", "local", `{"region": "x"}`},
			), oaText("done")))
			svc, e, a := mcpEnsemble(t, srv.URL, overHTTP, nil, "t.*", "local")
			var log eventLog
			req := request(e, a, "go")
			req.Events, req.Services = log.sink(), svc
			res := newTestRunner(Options{}).Run(t.Context(), req)
			if res.Err != nil || res.Output != "done" {
				t.Fatalf("err %v output %#v", res.Err, res.Output)
			}
			reqs := srv.requests()
			var offered []string
			for _, tl := range reqs[0].Body["tools"].([]any) {
				offered = append(offered, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			if got := strings.Join(offered, ","); got != "t__block,t__echo,t__env,t__fail,t__meet,local" {
				t.Errorf("tools offered: %s", got)
			}
			var msgs []map[string]any
			for _, m := range messages(t, reqs[1]) {
				if m["role"] == "tool" {
					msgs = append(msgs, m)
				}
			}
			if len(msgs) != 6 {
				t.Fatalf("%d results: %v", len(msgs), msgs)
			}
			want := []string{"met a", "met b", "Error: it broke", `Error: invalid arguments for tool "t__echo"`, "echo: hi", `"region"`}
			for i, w := range want {
				c, _ := msgs[i]["content"].(string)
				if msgs[i]["tool_call_id"] != "c"+string(rune('1'+i)) || !strings.HasPrefix(c, w) && !strings.Contains(c, w) {
					t.Errorf("result %d: %v, want %q", i, msgs[i], w)
				}
			}
			var started int
			for _, ev := range log.all() {
				if ev.Type == events.ToolCallStarted {
					started++
				}
			}
			if started != 6 {
				t.Errorf("%d tool_call_started events", started)
			}
			// The record lists the calls run, in the order issued, by the
			// names of the file (SERVER.TOOL), failed ones marked.
			var calls []ToolCallRecord
			if ok, err := res.Details.Decode(ToolCallsDetail, &calls); !ok || err != nil {
				t.Fatalf("no tool_calls detail: %v", err)
			}
			wantCalls := []ToolCallRecord{{Tool: "t.meet"}, {Tool: "t.meet"}, {Tool: "t.fail", Failed: true}, {Tool: "t.echo", Failed: true}, {Tool: "t.echo"}, {Tool: "local"}}
			if !slices.Equal(calls, wantCalls) {
				t.Errorf("tool_calls %+v, want %+v", calls, wantCalls)
			}
		})
	}
}

// TestMCPToolTimeout: a call past the server's timeout_seconds is an error
// result and the loop goes on.
func TestMCPToolTimeout(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaCalls(call{"c1", "t__block", `{}`}), oaText("ok")))
	svc, e, a := mcpEnsemble(t, srv.URL, false, map[string]any{"timeout_seconds": 0.5}, "t.block")
	req := request(e, a, "go")
	req.Services = svc
	res := newTestRunner(Options{}).Run(t.Context(), req)
	if res.Err != nil || res.Output != "ok" {
		t.Fatalf("err %v output %#v", res.Err, res.Output)
	}
	msgs := messages(t, srv.requests()[1])
	if c := msgs[len(msgs)-1]["content"]; c != `Error: tool "t__block" timed out after 500ms` {
		t.Errorf("result %q", c)
	}
}

// TestMCPToolWithoutServers: a runner given no servers fails the execution
// before any model request.
func TestMCPToolWithoutServers(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("never")))
	_, e, a := mcpEnsemble(t, srv.URL, true, nil, "t.echo")
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err == nil || !strings.Contains(res.Err.Error(), `tool "t.echo": MCP server "t" was not started for this run`) || len(srv.requests()) != 0 {
		t.Fatalf("err %v, %d requests", res.Err, len(srv.requests()))
	}
}
