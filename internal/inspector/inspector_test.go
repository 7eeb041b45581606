package inspector_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

func noEnv(string) (string, bool) { return "", false }

// saveRun runs the example ensemble in examples/NAME into the database at
// path (with its responses file when responses), and returns the run's id.
func saveRun(t *testing.T, path, name string, responses bool) string {
	t.Helper()
	return saveRunOf(t, path, filepath.Join("..", "..", "examples", name), responses)
}

// saveRunOf is saveRun of the ensemble in dir.
func saveRunOf(t *testing.T, path, dir string, withResponses bool) string {
	t.Helper()
	e, err := session.Load(filepath.Join(dir, "ensemble.yaml"), nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	opts := session.Options{Ask: ask.Options{Suspend: true, NoInput: true}, LookupEnv: noEnv}
	var refs durable.Refs
	if withResponses {
		rf := filepath.Join(dir, "responses.yaml")
		if opts.Models.Responses, err = responses.LoadResponsesFor(rf, e); err != nil {
			t.Fatal(err)
		}
		opts.Models.ResponsesFile, refs.Responses = rf, rf
	}
	ctx := context.Background()
	s, err := session.Open(ctx, e, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := durable.Create(path, "", refs, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Start("", session.RunOptions{Save: d, RunID: d.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return d.ID()
}

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH (make python-link; PATH=$PWD/bin/python:$PATH)")
	}
}

type fixture struct {
	srv       *inspector.Server
	ts        *httptest.Server
	approval  string // a suspended run of examples/approval
	mapReduce string // a completed run of examples/map-reduce (3 turns)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	needPython(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	f := &fixture{approval: saveRun(t, path, "approval", false), mapReduce: saveRun(t, path, "map-reduce", true)}
	srv, err := inspector.New(inspector.Options{DBs: []string{path}, Token: "secret-token", LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		f.ts.Close()
		srv.Close()
	})
	return f
}

// do sends a request to the fixture's server, with the token unless
// noToken, and decodes its JSON reply into out (when not nil).
func (f *fixture) do(t *testing.T, method, path string, body any, out any, headers ...string) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, f.ts.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Ensemble-Token", "secret-token")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(path, "/api/") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("%s %s: Content-Type %q, not JSON", method, path, resp.Header.Get("Content-Type"))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

type runsReply struct {
	Runs []inspector.RunSummary `json:"runs"`
	DBs  []string               `json:"dbs"`
}

func (f *fixture) runs(t *testing.T, query string) []inspector.RunSummary {
	t.Helper()
	var got runsReply
	if code := f.do(t, "GET", "/api/runs?"+query, nil, &got); code != 200 {
		t.Fatalf("GET /api/runs?%s: %d", query, code)
	}
	return got.Runs
}

func ids(runs []inspector.RunSummary) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func TestRunsListAndFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	all := f.runs(t, "")
	if len(all) != 2 || all[0].ID != f.approval || all[1].ID != f.mapReduce {
		t.Fatalf("runs = %v, want [%s %s]", ids(all), f.approval, f.mapReduce)
	}
	if a := all[0]; a.Status != inspector.StatusSuspended || a.Ensemble != "approval" || a.Turns != 1 || a.CompletionReason != "awaiting_input" {
		t.Errorf("the approval run: %+v", a)
	}
	if m := all[1]; m.Status != inspector.StatusCompleted || m.Turns != 3 || m.Duration <= 0 {
		t.Errorf("the map-reduce run: %+v", m)
	}
	for _, tc := range []struct{ query, want string }{
		{"q=MAP", f.mapReduce},
		{"q=" + url.QueryEscape(f.approval), f.approval},
		{"status=suspended", f.approval},
		{"status=completed&q=map", f.mapReduce},
		{"db=0&status=completed", f.mapReduce},
	} {
		if got := ids(f.runs(t, tc.query)); len(got) != 1 || got[0] != tc.want {
			t.Errorf("runs?%s = %v, want [%s]", tc.query, got, tc.want)
		}
	}
	if got := f.runs(t, "q=nothing-like-it"); len(got) != 0 {
		t.Errorf("runs?q=nothing-like-it = %v, want none", ids(got))
	}
}

func TestTokenAndHost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		name, method, path string
		headers            []string
		want               int
	}{
		{"GET without the token", "GET", "/api/runs", []string{"X-Ensemble-Token", ""}, 403},
		{"GET with a wrong token", "GET", "/api/runs", []string{"X-Ensemble-Token", "secret-tokeN"}, 403},
		{"GET with the token in the URL", "GET", "/api/runs?token=secret-token", []string{"X-Ensemble-Token", ""}, 200},
		{"POST answer without the token", "POST", "/api/run/answer?id=" + f.approval, []string{"X-Ensemble-Token", ""}, 403},
		{"POST fork without the token", "POST", "/api/run/fork?id=" + f.mapReduce, []string{"X-Ensemble-Token", ""}, 403},
		{"a rebinding Host", "GET", "/api/runs", []string{"Host", "evil.example:80"}, 403},
		{"a rebinding Host for the page", "GET", "/", []string{"Host", "evil.example"}, 403},
		{"localhost", "GET", "/api/runs", []string{"Host", "localhost:1234"}, 200},
		{"an IPv6 loopback", "GET", "/api/runs", []string{"Host", "[::1]:1234"}, 200},
		{"the page without the token", "GET", "/", []string{"X-Ensemble-Token", ""}, 200},
	} {
		var body any
		if tc.method == "POST" {
			body = map[string]any{"answers": map[string]string{"approver": `{"approved": true}`}, "turn": 1}
		}
		if got := f.do(t, tc.method, tc.path, body, nil, tc.headers...); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// Nothing was answered nor forked.
	if runs := f.runs(t, ""); len(runs) != 2 || runs[0].Status != inspector.StatusSuspended {
		t.Errorf("after refused requests: %+v", runs)
	}
}

func TestNotFoundIsJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, path := range []string{
		"/api/run?db=1&id=" + f.approval,
		"/api/run?db=x&id=" + f.approval,
		"/api/run?id=no-such-run",
		"/api/run?id=../../etc/passwd",
		"/api/run/turns?id=no-such-run",
		"/api/run/execution?id=" + f.mapReduce + "&agent=nobody&n=1",
		"/api/nothing",
	} {
		var got struct{ Error string }
		if code := f.do(t, "GET", path, nil, &got); code != 404 || got.Error == "" {
			t.Errorf("GET %s: %d %q, want 404 with an error", path, code, got.Error)
		}
	}
}

func TestRunView(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var v inspector.RunView
	if code := f.do(t, "GET", "/api/run?db=0&id="+f.mapReduce, nil, &v); code != 200 {
		t.Fatalf("GET /api/run: %d", code)
	}
	if v.Graph.Source != "file" || len(v.Graph.Agents) != 3 || len(v.Graph.Edges) != 2 {
		t.Fatalf("graph = %+v", v.Graph)
	}
	var summarize *inspector.GraphNode
	for _, n := range v.Graph.Agents {
		if n.Status != "completed" {
			t.Errorf("agent %s is %s, want completed", n.Name, n.Status)
		}
		if n.Name == "summarize" {
			summarize = n
		}
	}
	if summarize == nil || !summarize.FanOut || len(summarize.Instances) != 3 || summarize.Instances[1] != "summarize[1]" {
		t.Errorf("summarize = %+v, want a fan-out of 3 instances", summarize)
	}
	if v.Head.Input == "" || v.Head.Ensemble.Name != "map-reduce" {
		t.Errorf("head = %+v", v.Head)
	}
	// A suspended run: its question, and its asking agent waits.
	if code := f.do(t, "GET", "/api/run?id="+f.approval, nil, &v); code != 200 {
		t.Fatalf("GET /api/run: %d", code)
	}
	if len(v.Questions) != 1 || v.Questions[0].Agent != "approver" || !strings.Contains(v.Questions[0].Question, "Publish") {
		t.Errorf("questions = %+v (%s)", v.Questions, v.QuestionsError)
	}
	for _, n := range v.Graph.Agents {
		if want := map[string]string{"writer": "completed", "approver": "waiting", "publisher": "not_run"}[n.Name]; n.Status != want {
			t.Errorf("agent %s is %s, want %s", n.Name, n.Status, want)
		}
	}
}

func TestTurnsArePaged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"limit=2", []int{1, 2}},
		{"after=2", []int{3}},
		{"after=3", nil},
		{"after=-1&limit=1", []int{3}},
		{"", []int{1, 2, 3}},
	} {
		var page inspector.TurnPage
		if code := f.do(t, "GET", "/api/run/turns?id="+f.mapReduce+"&"+tc.query, nil, &page); code != 200 {
			t.Fatalf("turns?%s: %d", tc.query, code)
		}
		var got []int
		for _, tu := range page.Turns {
			got = append(got, tu.Turn)
			if len(tu.Records) == 0 {
				t.Errorf("turns?%s: turn %d has no records", tc.query, tu.Turn)
			}
		}
		if !equalInts(got, tc.want) || page.Last != 3 {
			t.Errorf("turns?%s = %v (last %d), want %v (last 3)", tc.query, got, page.Last, tc.want)
		}
	}
	if code := f.do(t, "GET", "/api/run/turns?id="+f.mapReduce+"&limit=0", nil, nil); code != 400 {
		t.Errorf("limit=0: %d, want 400", code)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExecutionDetail(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, q := range []string{"agent=summarize%5B1%5D&n=1", "agent=summarize%5B1%5D&n=1&turn=2"} {
		var ex inspector.Execution
		if code := f.do(t, "GET", "/api/run/execution?id="+f.mapReduce+"&"+q, nil, &ex); code != 200 {
			t.Fatalf("execution?%s: %d", q, code)
		}
		if r := ex.Record; r == nil || r.AgentName != "summarize[1]" || r.TurnNumber != 2 || r.OutputData == nil || r.InputData == nil {
			t.Errorf("execution?%s = %+v", q, ex.Record)
		}
	}
	if code := f.do(t, "GET", "/api/run/execution?id="+f.mapReduce+"&agent=summarize%5B1%5D&n=2", nil, nil); code != 404 {
		t.Errorf("a second execution that never ran: %d, want 404", code)
	}
	if code := f.do(t, "GET", "/api/run/execution?id="+f.mapReduce+"&agent=split", nil, nil); code != 400 {
		t.Errorf("no n: %d, want 400", code)
	}
}

// waitStatus polls the run until its status is want.
func (f *fixture) waitStatus(t *testing.T, id, want string) inspector.RunSummary {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var v inspector.RunView
		f.do(t, "GET", "/api/run?id="+url.QueryEscape(id), nil, &v)
		if v.Run != nil && v.Run.Status == want {
			return *v.Run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %+v, want %s", id, v.Run, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAnswerResumesTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var got struct{ Error string }
	if code := f.do(t, "POST", "/api/run/answer?id="+f.approval, map[string]any{"answers": map[string]string{"publisher": "x"}}, &got); code != 400 || !strings.Contains(got.Error, "not waiting") {
		t.Errorf("an answer for an agent that does not wait: %d %q", code, got.Error)
	}
	if code := f.do(t, "POST", "/api/run/answer?id="+f.mapReduce, map[string]any{"answers": map[string]string{"split": "x"}}, &got); code != 409 {
		t.Errorf("an answer to a completed run: %d %q, want 409", code, got.Error)
	}
	if code := f.do(t, "POST", "/api/run/answer?id="+f.approval, map[string]any{"answers": map[string]string{"approver": `{"approved": true}`}}, &got); code != 200 {
		t.Fatalf("answer: %d %q", code, got.Error)
	}
	run := f.waitStatus(t, f.approval, inspector.StatusCompleted)
	if run.Turns != 3 {
		t.Errorf("the answered run: %+v, want 3 turns", run)
	}
	var ex inspector.Execution
	if code := f.do(t, "GET", "/api/run/execution?id="+f.approval+"&agent=publisher&n=1", nil, &ex); code != 200 || !strings.Contains(ex.Record.OutputData.(string), "published") {
		t.Errorf("the publisher: %d %+v", code, ex.Record)
	}
}

func TestForkFromTurn2(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var got struct {
		ID    string
		Error string
	}
	if code := f.do(t, "POST", "/api/run/fork?id="+f.mapReduce, map[string]any{"turn": 9}, &got); code != 400 {
		t.Errorf("a fork after the last turn: %d %q, want 400", code, got.Error)
	}
	if code := f.do(t, "POST", "/api/run/fork?id="+f.mapReduce, map[string]any{"turn": 2}, &got); code != 200 || got.ID == "" {
		t.Fatalf("fork: %d %+v", code, got)
	}
	run := f.waitStatus(t, got.ID, inspector.StatusCompleted)
	if run.Parent != f.mapReduce || run.ParentTurn != 2 || run.Turns != 3 {
		t.Errorf("the fork: %+v, want parent %s at turn 2, 3 turns", run, f.mapReduce)
	}
	if runs := f.runs(t, "q="+url.QueryEscape(f.mapReduce)); len(runs) != 2 {
		t.Errorf("runs matching the parent: %v, want it and its fork", ids(runs))
	}
	// The copied turns are the parent's, the third ran again.
	var page inspector.TurnPage
	f.do(t, "GET", "/api/run/turns?id="+got.ID, nil, &page)
	if len(page.Turns) != 3 || page.Turns[2].Records[0].AgentName != "reduce" {
		t.Errorf("the fork's turns: %+v", page.Turns)
	}
}

func TestPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, p := range []string{"/", "/app.js", "/app.css"} {
		resp, err := http.Get(f.ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) < 100 {
			t.Errorf("GET %s: %d, %d bytes", p, resp.StatusCode, len(b))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q, want self only, nothing unsafe", p, csp)
		}
		text := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "") // a namespace, not a fetch
		if strings.Contains(text, "http://") || strings.Contains(text, "https://") {
			t.Errorf("GET %s names another site: the page works offline", p)
		}
	}
	if u := f.srv.URL("127.0.0.1:8080"); u != "http://127.0.0.1:8080/?token=secret-token" {
		t.Errorf("URL = %s", u)
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		dbs  []string
		want string
	}{
		{"none", nil, "no state database"},
		{"missing", []string{filepath.Join(dir, "missing.db")}, "missing.db"},
	} {
		if _, err := inspector.New(inspector.Options{DBs: tc.dbs, LookupEnv: noEnv}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// serveDB serves the database at path, for a test.
func serveDB(t *testing.T, path string) *fixture {
	t.Helper()
	srv, err := inspector.New(inspector.Options{DBs: []string{path}, Token: "secret-token", LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, ts: httptest.NewServer(srv.Handler())}
	t.Cleanup(func() {
		f.ts.Close()
		srv.Close()
	})
	return f
}

// childNode is the node at path (PARENT/CHILD/...) of g's child ensembles,
// in the child ensemble named in (any, when "").
func childNode(g *inspector.Graph, in, path string) (*inspector.ChildGraph, *inspector.GraphNode) {
	parts := strings.Split(path, "/")
	nodes := g.Agents
	var cg *inspector.ChildGraph
	for i, p := range parts {
		var n *inspector.GraphNode
		for _, x := range nodes {
			if x.Name == p {
				n = x
			}
		}
		if n == nil {
			return nil, nil
		}
		if i == len(parts)-1 {
			return cg, n
		}
		nodes = nil
		for _, c := range n.Children {
			if in == "" || c.Name == in {
				cg, nodes = c, c.Agents
				break
			}
		}
	}
	return nil, nil
}

func TestChildEnsembleAgents(t *testing.T) {
	t.Parallel()
	needPython(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	loop, routing := saveRun(t, path, "build-loop", true), saveRun(t, path, "routing", true)
	f := serveDB(t, path)

	var v inspector.RunView
	if code := f.do(t, "GET", "/api/run?id="+loop, nil, &v); code != 200 {
		t.Fatalf("GET /api/run: %d", code)
	}
	for _, tc := range []struct {
		path, status string
		executions   int
	}{
		{"build_loop/coder", "completed", 2}, // two rounds: the tests failed, then passed
		{"build_loop/critic", "completed", 2},
		{"build_loop/tests", "completed", 2},
	} {
		cg, n := childNode(v.Graph, "", tc.path)
		if n == nil {
			t.Errorf("%s: not in the graph %+v", tc.path, v.Graph.Agents)
			continue
		}
		if n.Status != tc.status || n.Executions != tc.executions || !cg.Ran {
			t.Errorf("%s: %s, %d executions (ran %v), want %s, %d", tc.path, n.Status, n.Executions, cg.Ran, tc.status, tc.executions)
		}
		if n.Last == nil || n.Last.Agent != tc.path || n.Last.N != tc.executions || n.Last.Turn != 1 {
			t.Errorf("%s: last = %+v, want %s#%d in turn 1", tc.path, n.Last, tc.path, tc.executions)
		}
	}
	// A child's executions open: each round's, by its place in the
	// execution that ran them, with or without the turn.
	for _, tc := range []struct {
		query, wantIn string
		slim          bool
	}{
		{"agent=build_loop/tests&n=1&turn=1", "null", true}, // an earlier round is kept without its data
		{"agent=build_loop/tests&n=2", `"tests_pass": true`, false},
		{"agent=build_loop/tests&n=2&turn=1", `"tests_pass": true`, false},
	} {
		var ex inspector.Execution
		if code := f.do(t, "GET", "/api/run/execution?id="+loop+"&"+tc.query, nil, &ex); code != 200 {
			t.Fatalf("execution?%s: %d", tc.query, code)
		}
		out, _ := json.MarshalIndent(ex.Record.OutputData, "", " ")
		if p := ex.Parent; p == nil || p.Agent != "build_loop" || p.N != 1 || p.Turn != 1 {
			t.Errorf("execution?%s: parent %+v, want build_loop#1 in turn 1", tc.query, p)
		}
		if ex.Record.AgentName != "tests" || ex.Path != "build_loop/tests" || ex.Turn != 1 || ex.Count != 2 || ex.Slim != tc.slim || !strings.Contains(string(out), tc.wantIn) {
			t.Errorf("execution?%s = %s %s turn %d count %d: %s, want %q in it", tc.query, ex.Path, ex.Record.AgentName, ex.Turn, ex.Count, out, tc.wantIn)
		}
	}
	for _, q := range []string{"agent=build_loop/tests&n=3&turn=1", "agent=build_loop/tests&n=1&turn=2", "agent=build_loop/nobody&n=1", "agent=report/x&n=1"} {
		if code := f.do(t, "GET", "/api/run/execution?id="+loop+"&"+q, nil, nil); code != 404 {
			t.Errorf("execution?%s: %d, want 404", q, code)
		}
	}

	// A dispatch ran one of its cases: only that one's agents ran.
	if code := f.do(t, "GET", "/api/run?id="+routing, nil, &v); code != 200 {
		t.Fatalf("GET /api/run: %d", code)
	}
	for _, tc := range []struct {
		in, status string
		ran        bool
	}{
		{"billing", "completed", true},
		{"technical", "not_run", false},
		{"general", "not_run", false},
	} {
		cg, n := childNode(v.Graph, tc.in, "route/answer")
		if n == nil || cg.Name != tc.in {
			t.Fatalf("route/answer of %s: not in the graph", tc.in)
		}
		if cg.Ran != tc.ran || n.Status != tc.status {
			t.Errorf("route/answer of %s: %s (ran %v), want %s (ran %v)", tc.in, n.Status, cg.Ran, tc.status, tc.ran)
		}
	}
}

// A run gone on with in the background that failed says so on its page,
// and in the list, not only on the server's stderr.
func TestJobErrorIsShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var v inspector.RunView
	f.do(t, "GET", "/api/run?id="+f.mapReduce, nil, &v)
	if v.JobError != "" || v.Run.Job != "" {
		t.Fatalf("a run nothing was done with: job %q, error %q", v.Run.Job, v.JobError)
	}
	inspector.FailJob(f.srv, 0, f.mapReduce, errors.New("saving turn 4: disk I/O error"))
	f.do(t, "GET", "/api/run?id="+f.mapReduce, nil, &v)
	if v.JobError != "saving turn 4: disk I/O error" {
		t.Errorf("the run's page: job error %q", v.JobError)
	}
	if runs := f.runs(t, "q="+f.mapReduce); len(runs) != 1 || !strings.Contains(runs[0].Job, "disk I/O error") {
		t.Errorf("the list: %+v", runs)
	}
	// The page shows it in an element of its own.
	resp, err := http.Get(f.ts.URL + "/app.js")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"data-field": "job-error"`) || !strings.Contains(string(b), "job_error") {
		t.Error("app.js has no job-error field")
	}
}

// What an attacker (or a slip) sends is refused with a clear status, and
// never reaches another run, another file or the whole of a body.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.mapReduce
	big := strings.Repeat(" ", 2<<20) + `{"turn": 1}`
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"a huge limit is capped", "GET", "/api/run/turns?limit=999999999&id=" + id, "", 200},
		{"a limit past 64 bits", "GET", "/api/run/turns?limit=99999999999999999999999&id=" + id, "", 400},
		{"a negative after", "GET", "/api/run/turns?after=-5&id=" + id, "", 400},
		{"an after past the end", "GET", "/api/run/turns?after=9223372036854775807&id=" + id, "", 200},
		{"a db that is a path", "GET", "/api/run?db=" + url.QueryEscape("/etc/passwd") + "&id=" + id, "", 404},
		{"a negative db", "GET", "/api/run?db=-1&id=" + id, "", 404},
		{"an id that is a path", "GET", "/api/run?id=" + url.QueryEscape("../runs.db"), "", 404},
		{"the next run's turn, past 32 bits", "GET", "/api/run/execution?agent=split&n=1&turn=4294967297&id=" + f.approval, "", 404},
		{"a child path's turn past 32 bits", "GET", "/api/run/execution?agent=summarize/x&n=1&turn=4294967298&id=" + id, "", 404},
		{"a page file by a path out of it", "GET", "/..%2f..%2fgo.mod", "", 404},
		{"a body past 1 MiB", "POST", "/api/run/fork?id=" + id, big, 400},
		{"an answer past 1 MiB", "POST", "/api/run/answer?id=" + f.approval, `{"answers": {"approver": "` + strings.Repeat("x", 2<<20) + `"}}`, 400},
		{"a turn that is no integer", "POST", "/api/run/fork?id=" + id, `{"turn": 1e300}`, 400},
		{"a negative turn", "POST", "/api/run/fork?id=" + id, `{"turn": -1}`, 400},
	} {
		req, err := http.NewRequest(tc.method, f.ts.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Ensemble-Token", "secret-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.want)
		}
	}
	// Nothing was forked nor answered.
	if runs := f.runs(t, ""); len(runs) != 2 || runs[0].Status != inspector.StatusSuspended {
		t.Errorf("after the refused requests: %v", ids(runs))
	}
}

// The page never parses data as HTML: every text goes in by textContent
// (an agent's output may hold markup, and the runs' data is not the
// page's to run).
func TestPageWritesNoHTML(t *testing.T) {
	t.Parallel()
	names, _ := filepath.Glob("web/*.js")
	for _, name := range append(names, "web/index.html") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc", "javascript:"} {
			if strings.Contains(string(b), sink) {
				t.Errorf("%s uses %s: build elements with el() and textContent", name, sink)
			}
		}
	}
}

// A fan-out in a child ensemble opens onto its instances, each with how it
// ended and the execution it opens.
func TestChildFanOut(t *testing.T) {
	t.Parallel()
	needPython(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, filepath.Join("testdata", "nested"), true)
	f := serveDB(t, path)
	var v inspector.RunView
	if code := f.do(t, "GET", "/api/run?id="+id, nil, &v); code != 200 {
		t.Fatalf("GET /api/run: %d", code)
	}
	_, n := childNode(v.Graph, "", "inner/summarize")
	if n == nil {
		t.Fatalf("inner/summarize: not in the graph")
	}
	// The agent's own record is the gathering of its instances'.
	if !n.FanOut || n.Status != "completed" || n.Executions != 1 || n.Last == nil || n.Last.Agent != "inner/summarize" || n.Last.N != 1 {
		t.Errorf("inner/summarize: %+v (last %+v)", n, n.Last)
	}
	if len(n.Instances) != 2 || n.Instances[0] != "summarize[0]" || n.Instances[1] != "summarize[1]" {
		t.Fatalf("instances %v, want summarize[0] and summarize[1]", n.Instances)
	}
	for _, i := range n.Instances {
		last := n.InstanceLast[i]
		if n.InstanceStatus[i] != "completed" || last == nil || last.Agent != "inner/"+i || last.N != 1 || last.Turn != 1 {
			t.Errorf("%s: %s, last %+v", i, n.InstanceStatus[i], last)
			continue
		}
		var ex inspector.Execution
		q := url.Values{"id": {id}, "agent": {last.Agent}, "n": {"1"}, "turn": {"1"}}
		if code := f.do(t, "GET", "/api/run/execution?"+q.Encode(), nil, &ex); code != 200 {
			t.Fatalf("execution of %s: %d", last.Agent, code)
		}
		if ex.Record.AgentName != i || ex.Count != 1 || ex.Parent == nil || ex.Parent.Agent != "inner" {
			t.Errorf("execution of %s: %s, count %d, parent %+v", last.Agent, ex.Record.AgentName, ex.Count, ex.Parent)
		}
	}
	// The agent's own execution is its own, not an instance's.
	var ex inspector.Execution
	if code := f.do(t, "GET", "/api/run/execution?id="+id+"&agent=inner/summarize&n=1", nil, &ex); code != 200 || ex.Record.AgentName != "summarize" || ex.Count != 1 {
		t.Errorf("inner/summarize#1: %d %+v", code, ex)
	}
	if code := f.do(t, "GET", "/api/run/execution?id="+id+"&agent=inner/summarize&n=2", nil, nil); code != 404 {
		t.Errorf("inner/summarize#2: %d, want 404 (instances are not its executions)", code)
	}
}

// A child's child is numbered across the loop rounds around it: outer runs
// middle.yaml twice, whose step runs leaf.yaml's count once each time; the
// second step's count is count's second execution in outer's.
func TestChildOfChild(t *testing.T) {
	t.Parallel()
	needPython(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, filepath.Join("testdata", "deep"), false)
	f := serveDB(t, path)
	for _, tc := range []struct {
		agent  string
		n      int
		before map[string]int
		seen   string
	}{
		{"outer/step", 1, nil, ""},
		{"outer/step", 2, map[string]int{"count": 1}, "again"},
		{"outer/step/count", 1, nil, ""}, // the first round's: slim
		{"outer/step/count", 2, nil, "again"},
	} {
		var ex inspector.Execution
		q := url.Values{"id": {id}, "agent": {tc.agent}, "n": {strconv.Itoa(tc.n)}, "turn": {"1"}}
		if code := f.do(t, "GET", "/api/run/execution?"+q.Encode(), nil, &ex); code != 200 {
			t.Fatalf("%s#%d: %d", tc.agent, tc.n, code)
		}
		if !maps.Equal(ex.ChildBefore, tc.before) || ex.Count != 2 {
			t.Errorf("%s#%d: child_before %v, count %d, want %v, 2", tc.agent, tc.n, ex.ChildBefore, ex.Count, tc.before)
		}
		out, _ := json.Marshal(ex.Record.OutputData)
		if seen := string(out); tc.seen != "" && !strings.Contains(seen, `"seen":"`+tc.seen+`"`) || tc.seen == "" && !ex.Slim {
			t.Errorf("%s#%d: output %s (slim %v), want seen %q", tc.agent, tc.n, seen, ex.Slim, tc.seen)
		}
	}
}

// A run's first screen lists its warnings: reads of missing keys with
// their kind, path and suggestion (docs/semantics.md#reads-of-missing-keys).
func TestRunViewWarnings(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	id := saveRunOf(t, path, filepath.Join("testdata", "missing"), true)
	f := serveDB(t, path)
	var v inspector.RunView
	if code := f.do(t, "GET", "/api/run?id="+id, nil, &v); code != 200 {
		t.Fatalf("GET /api/run: %d", code)
	}
	if v.WarningsCount != 3 || len(v.Warnings) != 3 {
		t.Fatalf("warnings %d %+v", v.WarningsCount, v.Warnings)
	}
	w := v.Warnings[0]
	if w.AgentName != "security" || w.Kind != "missing_read" || w.Path != "context.get_diff.touches_cod" || w.Suggestion != "touches_code" ||
		!strings.Contains(w.Message, "did you mean `touches_code`?") {
		t.Errorf("warning %+v", w)
	}
	if v.Warnings[2].Kind != "null_message" {
		t.Errorf("warning %+v", v.Warnings[2])
	}
}
