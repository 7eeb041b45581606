package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/serve"
)

// askFiles are ensembles for the doors that keep runs: approve waits for
// a person's answer, then returns it as an object; count runs three
// turns; slow sleeps until cancelled.
var askFiles = map[string]string{
	"words.sh": "#!/bin/sh\ncat >/dev/null\necho '\"plain words\"'\n",
	"publish.py": `#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
json.dump({"answer": req["dependencies"]["approver"]}, sys.stdout)
`,
	"approve.yaml": `name: approve
output: publisher
agents:
  - name: writer
    script: words.sh
  - name: approver
    ask: "Publish it?"
    ask_mode: suspend
    dependencies: [writer]
  - name: publisher
    script: publish.py
    dependencies: [approver]
    output_schema:
      type: object
      properties: {answer: {}}
      required: [answer]
`,
	"count.yaml": `name: count
agents:
  - name: a
    script: words.sh
  - name: b
    script: words.sh
    dependencies: [a]
  - name: c
    script: words.sh
    dependencies: [b]
`,
	"slow.sh":   "#!/bin/sh\ncat >/dev/null\nsleep 600\necho '\"late\"'\n",
	"slow.yaml": "name: slow\nagents:\n  - name: s\n    script: slow.sh\n",
	"list.sh":   "#!/bin/sh\ncat >/dev/null\necho '[1, 2]'\n",
	"list.yaml": `name: list
output: l
agents:
  - name: l
    script: list.sh
    output_schema: {type: array, items: {type: integer}}
`,
}

// newServeRuns is a serve.Server over askFiles, with its database in a
// temporary folder.
func newServeRuns(t *testing.T) *serve.Server {
	t.Helper()
	dir := t.TempDir()
	for name, body := range askFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := serve.New(serve.Options{Paths: []string{dir}, State: filepath.Join(t.TempDir(), "s.db"), NoUI: true,
		Listen: "127.0.0.1:0", Token: "secret-token"})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// connectRuns connects a client (with opts, and protocol version when
// not "") to the MCP server of srv's runs over in-memory transports (a
// session: the stdio door with --state).
func connectRuns(t *testing.T, srv *serve.Server, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	t.Cleanup(func() { srv.Runs().Close(0) })
	server := NewRunsServer(srv.Runs(), true)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(t.Context(), ct, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectHTTP connects a client to /mcp of srv, served by httptest.
func connectHTTP(t *testing.T, srv *serve.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectHTTPVersion(t, srv, opts, "")
}

// connectHTTPVersion is connectHTTP with a protocol version ("": the
// latest).
func connectHTTPVersion(t *testing.T, srv *serve.Server, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	srv.Handle("/mcp", Handler(srv.Runs()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Runs().Close(0) })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"secret-token"}}}, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// elicitor answers every elicitation with answer, and counts them.
type elicitor struct {
	mu       sync.Mutex
	asked    []string
	answer   string
	schemaOK bool
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params.Message)
	b, _ := json.Marshal(req.Params.RequestedSchema)
	e.schemaOK = strings.Contains(string(b), `"answer"`)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": e.answer}}, nil
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content: %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestAskAgentIsElicited: an ask agent's question is sent to a client
// that takes elicitation, on each protocol (2026-07-28's input requests
// in the result, elicitation/create before it) and over Streamable HTTP;
// its answer goes into the run, which then returns its output.
func TestAskAgentIsElicited(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		connect func(*testing.T, *serve.Server, *mcp.ClientOptions) *mcp.ClientSession
	}{
		{"stdio-2026", func(t *testing.T, s *serve.Server, o *mcp.ClientOptions) *mcp.ClientSession {
			return connectRuns(t, s, o, "")
		}},
		{"stdio-2025", func(t *testing.T, s *serve.Server, o *mcp.ClientOptions) *mcp.ClientSession {
			return connectRuns(t, s, o, "2025-11-25")
		}},
		{"http", connectHTTP},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServeRuns(t)
			el := &elicitor{answer: "yes please"}
			cs := tt.connect(t, srv, &mcp.ClientOptions{ElicitationHandler: el.handle})
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approve"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || textOf(t, res) != `{"answer":"yes please"}` {
				t.Fatalf("result: %v %s", res.IsError, textOf(t, res))
			}
			if len(el.asked) != 1 || el.asked[0] != "Publish it?" || !el.schemaOK {
				t.Errorf("asked %q (schema with answer: %v)", el.asked, el.schemaOK)
			}
			b, _ := json.Marshal(res.StructuredContent)
			if string(b) != `{"answer":"yes please"}` {
				t.Errorf("structuredContent %s", b)
			}
		})
	}
}

// TestDeclinedQuestionLeavesTheRunWaiting: a client that declines the
// form gets the suspended result (not the question again), and the run
// still waits.
func TestDeclinedQuestionLeavesTheRunWaiting(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("v"+version, func(t *testing.T) {
			t.Parallel()
			srv := newServeRuns(t)
			var mu sync.Mutex
			asked := 0
			cs := connectRuns(t, srv, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked++
				mu.Unlock()
				return &mcp.ElicitResult{Action: "decline"}, nil
			}}, version)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approve"})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(textOf(t, res), `"status":"suspended"`) || asked != 1 {
				t.Fatalf("asked %d times: %s", asked, textOf(t, res))
			}
			list, _, _ := srv.Runs().List("approve", "", "", 10)
			if len(list) != 1 || list[0].Status != "awaiting_input" {
				t.Errorf("runs %+v", list)
			}
		})
	}
}

// TestOldClientOverHTTPIsNotElicited: a client before MCP 2026-07-28
// over the stateless endpoint could not answer a request of the server:
// it gets the suspended result, though it takes elicitation.
func TestOldClientOverHTTPIsNotElicited(t *testing.T) {
	t.Parallel()
	srv := newServeRuns(t)
	el := &elicitor{answer: "never"}
	cs := connectHTTPVersion(t, srv, &mcp.ClientOptions{ElicitationHandler: el.handle}, "2025-11-25")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approve"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(textOf(t, res), `"status":"suspended"`) || len(el.asked) != 0 {
		t.Errorf("asked %q: %s", el.asked, textOf(t, res))
	}
}

// TestSuspendedResultAndAnswerTools: a client without elicitation gets a
// suspended result naming the run, the agent and the question;
// ensemble_status reads it, ensemble_answer answers it, and the run's
// result is a resource.
func TestSuspendedResultAndAnswerTools(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"stdio", "http"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServeRuns(t)
			var cs *mcp.ClientSession
			if name == "http" {
				cs = connectHTTP(t, srv, nil)
			} else {
				cs = connectRuns(t, srv, nil, "")
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "approve"})
			if err != nil {
				t.Fatal(err)
			}
			var sus struct {
				Status, RunID, Agent, Question string
			}
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal([]byte(strings.ReplaceAll(string(b), "run_id", "runid")), &sus)
			if !res.IsError || sus.Status != "suspended" || sus.RunID == "" || sus.Agent != "approver" || sus.Question != "Publish it?" {
				t.Fatalf("suspended result: %v %s", res.IsError, b)
			}
			if textOf(t, res) != string(b) {
				t.Errorf("text %s, structured %s", textOf(t, res), b)
			}
			st, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ensemble_status", Arguments: map[string]any{"run_id": sus.RunID}})
			if err != nil || !strings.Contains(textOf(t, st), `"suspended"`) {
				t.Fatalf("status: %v %v", err, st)
			}
			ans, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ensemble_answer",
				Arguments: map[string]any{"run_id": sus.RunID, "agent": "approver", "answer": "ok"}})
			if err != nil || ans.IsError || textOf(t, ans) != `{"answer":"ok"}` {
				t.Fatalf("answer: %v %+v", err, ans)
			}
			again, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ensemble_answer",
				Arguments: map[string]any{"run_id": sus.RunID, "agent": "approver", "answer": "ok"}})
			if err != nil || !again.IsError {
				t.Errorf("a second answer: %v %+v", err, again)
			}
			listed, err := cs.ListResources(t.Context(), nil)
			if err != nil || !strings.Contains(fmt.Sprint(uris(listed)), "ensemble://run/"+sus.RunID) ||
				!strings.Contains(fmt.Sprint(uris(listed)), "ensemble://ensemble/approve") {
				t.Errorf("resources: %v %v", err, uris(listed))
			}
			rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ensemble://run/" + sus.RunID})
			if err != nil || !strings.Contains(rr.Contents[0].Text, `"completion_reason": "completed"`) {
				t.Errorf("run resource: %v %+v", err, rr)
			}
		})
	}
}

// TestProgressPerTurn: a call with a progress token gets a notification
// for each turn.
func TestProgressPerTurn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []float64
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params.Progress)
		mu.Unlock()
	}}
	for _, keep := range []string{"", "stdio", "http"} {
		var cs *mcp.ClientSession
		switch keep {
		case "stdio":
			cs = connectRuns(t, newServeRuns(t), opts, "")
		case "http":
			cs = connectHTTP(t, newServeRuns(t), opts)
		default:
			cs = connectSessions(t, opts)
		}
		mu.Lock()
		got = nil
		mu.Unlock()
		params := &mcp.CallToolParams{Name: "count"}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(t.Context(), params)
		if err != nil || res.IsError {
			t.Fatalf("keep %q: %v %+v", keep, err, res)
		}
		// Notifications are handled apart from the call's reply.
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n >= 3 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		if len(got) != 3 || got[0] != 1 || got[2] != 3 {
			t.Errorf("keep %q: progress %v", keep, got)
		}
		mu.Unlock()
	}
}

// connectSessions connects a client to New's server (no state) over
// askFiles.
func connectSessions(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	dir := t.TempDir()
	for name, body := range askFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	server, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestCancelledCallCancelsTheRun: a call whose request is cancelled
// cancels its run.
func TestCancelledCallCancelsTheRun(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"stdio", "http"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServeRuns(t)
			var cs *mcp.ClientSession
			if name == "http" {
				cs = connectHTTP(t, srv, nil)
			} else {
				cs = connectRuns(t, srv, nil, "")
			}
			cancelled(t, srv, cs)
		})
	}
}

// cancelled calls slow through cs, cancels the call once its run goes
// on, and waits for the run to be cancelled.
func cancelled(t *testing.T, srv *serve.Server, cs *mcp.ClientSession) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		done <- err
	}()
	runs := srv.Runs()
	var id string
	deadline := time.Now().Add(time.Minute)
	for id == "" && time.Now().Before(deadline) {
		list, _, _ := runs.List("slow", "", "", 10)
		if len(list) > 0 && list[0].Status == serve.StatusRunning {
			id = list[0].ID
		}
		time.Sleep(20 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("the run never started")
	}
	cancel()
	<-done
	for time.Now().Before(deadline) {
		if st, _ := runs.Wait(t.Context(), id, time.Second); st == serve.StatusCancelled {
			return
		}
	}
	st, _ := runs.Wait(t.Context(), id, 0)
	t.Fatalf("run %s is %s, not cancelled", id, st)
}

// TestResourcesAndSchemas: each ensemble's file is a resource; a tool's
// outputSchema is its output's, an array's wrapped in an object.
func TestResourcesAndSchemas(t *testing.T) {
	t.Parallel()
	cs := connectSessions(t, nil)
	rr, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ensemble://ensemble/approve"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "name: approve") {
		t.Fatalf("ensemble resource: %v %+v", err, rr)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list"})
	if err != nil || res.IsError {
		t.Fatalf("list: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if string(b) != `{"result":[1,2]}` || textOf(t, res) != `{"result":[1,2]}` {
		t.Errorf("list: structured %s, text %s", b, textOf(t, res))
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "list" {
			b, _ := json.Marshal(tool.OutputSchema)
			if !strings.Contains(string(b), `"result":{"items":{"type":"integer"},"type":"array"}`) {
				t.Errorf("list's outputSchema: %s", b)
			}
		}
		if tool.Name == "ensemble_answer" {
			t.Error("a door that keeps no run lists ensemble_answer")
		}

	}
}

// TestHTTPDoorIsGuarded: /mcp is behind serve's guard: no token, no
// call; a Host that is not the server's is refused.
func TestHTTPDoorIsGuarded(t *testing.T) {
	t.Parallel()
	srv := newServeRuns(t)
	srv.Handle("/mcp", Handler(srv.Runs()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Runs().Close(0) })
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for _, tt := range []struct {
		name, token, host string
		want              int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "nope", "", http.StatusUnauthorized},
		{"rebinding", "secret-token", "evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		if tt.host != "" {
			req.Host = tt.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
}

// TestRunGoesOnAfterRestart: a run cut short when its server stopped goes
// on when a server (Recover) starts again on its database, and
// ensemble_status then reads its output.
func TestRunGoesOnAfterRestart(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	marker := filepath.Join(dir, "parked")
	files := map[string]string{
		"park.sh":   "#!/bin/sh\ncat >/dev/null\nif [ ! -e " + marker + " ]; then touch " + marker + "; sleep 600; fi\necho '{\"done\": true}'\n",
		"park.yaml": "name: park\noutput: p\nagents:\n  - name: p\n    script: park.sh\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *serve.Server {
		srv, err := serve.New(serve.Options{Paths: []string{dir}, State: db, NoUI: true, Listen: "127.0.0.1:0", Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	first := open()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	id, _, err := first.Runs().Start(ctx, "park", nil, serve.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the script never started")
		}
	}
	first.Runs().Close(0)
	second := open()
	second.Recover()
	cs := connectRuns(t, second, nil, "")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ensemble_status", Arguments: map[string]any{"run_id": id}})
		if err != nil {
			t.Fatal(err)
		}
		if textOf(t, res) == `{"done":true}` {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s", id, textOf(t, res))
		}
	}
}

func uris(l *mcp.ListResourcesResult) []string {
	var out []string
	if l != nil {
		for _, r := range l.Resources {
			out = append(out, r.URI)
		}
	}
	return out
}

// TestNoNullOutputSchema: a tool without an output schema has no
// outputSchema at all: "outputSchema": null makes TypeScript clients
// drop the tool from the list.
func TestNoNullOutputSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range askFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	list, err := find(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		b, err := json.Marshal(toolFor(s.e, true))
		if err != nil || strings.Contains(string(b), `"outputSchema":null`) {
			t.Errorf("%s: %v %s", s.e.Name, err, b)
		}
	}
}
