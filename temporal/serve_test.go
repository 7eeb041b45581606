package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
	"github.com/ensemble-run/ensemble/temporalengine"
)

const serveToken = "serve-temporal-test-token"

// served is an `ensemble serve` of the examples hello-scripts and
// approval, on the engine given (nil: the local one).
type served struct {
	t   *testing.T
	url string
}

func startServe(t *testing.T, eng serve.Engine) *served {
	t.Helper()
	s, stop := startServeOn(t, eng, filepath.Join(t.TempDir(), "serve.db"))
	t.Cleanup(stop)
	return s
}

// startServeOn serves on the state database db until stop.
func startServeOn(t *testing.T, eng serve.Engine, db string) (s *served, stop func()) {
	t.Helper()
	var paths []string
	for _, name := range []string{"hello-scripts", "approval"} {
		p, err := filepath.Abs(filepath.Join("..", "examples", name, "ensemble.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	srv, err := serve.New(serve.Options{Paths: paths, State: db, Token: serveToken,
		NoUI: true, Engine: eng, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	var once sync.Once
	return &served{t: t, url: serve.URL(l.Addr().String())}, func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
}

// call makes a request of the run API and decodes its JSON answer.
func (s *served) call(method, path, body string, want int, prefer string) map[string]any {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+serveToken)
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		s.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
	}
	return v
}

// wait polls run id until its status is want.
func (s *served) wait(id, want string) {
	s.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		v := s.call("GET", "/v1/runs?limit=1000", "", http.StatusOK, "")
		runs, _ := v["runs"].([]any)
		for _, r := range runs {
			if r, _ := r.(map[string]any); r["run_id"] == id && r["status"] == want {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s: not %s after %s: %v", id, want, waitFor, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// result is run id's result (GET /v1/runs/{id}) less times and durations.
func (s *served) result(id string) any {
	s.t.Helper()
	v := s.call("GET", "/v1/runs/"+id, "", http.StatusOK, "")
	b, _ := json.Marshal(v)
	return comparable(s.t, b)
}

// play runs hello-scripts, and approval answered through the API, and
// returns their results.
func (s *served) play() (plain, asked, answered any) {
	s.t.Helper()
	s.call("POST", "/v1/ensembles/hello-scripts/runs", `{"input": "Temporal", "run_id": "plain"}`, http.StatusCreated, "")
	s.wait("plain", "completed")
	s.call("POST", "/v1/ensembles/approval/runs", `{"run_id": "ask"}`, http.StatusCreated, "")
	s.wait("ask", "awaiting_input")
	asked = s.result("ask")
	// Not of its schema: refused, as resume --answer refuses it.
	s.call("POST", "/v1/runs/ask/answers", `{"writer": "yes"}`, http.StatusConflict, "")
	s.call("POST", "/v1/runs/ask/answers", `{"approver": {"approved": true}}`, http.StatusAccepted, "")
	s.wait("ask", "completed")
	// The first answer won: the run waits for no other.
	s.call("POST", "/v1/runs/ask/answers", `{"approver": {"approved": false}}`, http.StatusConflict, "")
	return s.result("plain"), asked, s.result("ask")
}

// TestServeOnTemporal serves ensembles with their runs on Temporal
// (serve.Options.Engine, as `ensemble serve --temporal` does): a plain
// run and a run answered through the API end with the results the local
// engine's server gives, waiting included, and so does a chat completion
// and the plain run's event stream; a fork is refused, naming why;
// a cancelled run that waits stops on the cluster too.
func TestServeOnTemporal(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	remote := startServe(t, &temporalengine.Remote{C: c, Queue: queue})
	local := startServe(t, nil)
	rp, ra, rd := remote.play()
	lp, la, ld := local.play()
	for _, x := range []struct {
		what        string
		local, temp any
	}{{"plain run", lp, rp}, {"run waiting for its answer", la, ra}, {"answered run", ld, rd}} {
		if !reflect.DeepEqual(x.local, x.temp) {
			t.Errorf("%s: results differ\nlocal:\n%s\ntemporal:\n%s", x.what, indent(x.local), indent(x.temp))
		}
	}
	v := remote.call("POST", "/v1/runs/plain/fork", `{"from_turn": 1}`, http.StatusConflict, "")
	if msg := fmt.Sprint(v["error"]); !strings.Contains(msg, "fork") || !strings.Contains(msg, "Temporal") {
		t.Errorf("fork: %s, want a refusal naming fork and Temporal", msg)
	}
	// Chat completions: the reply is the run's output, as locally.
	chat := `{"model": "hello-scripts", "messages": [{"role": "user", "content": "Temporal"}]}`
	lc := local.call("POST", "/v1/chat/completions", chat, http.StatusOK, "")
	rc := remote.call("POST", "/v1/chat/completions", chat, http.StatusOK, "")
	reply := func(v map[string]any) any {
		choices, _ := v["choices"].([]any)
		if len(choices) != 1 {
			return nil
		}
		return choices[0].(map[string]any)["message"]
	}
	if lr, rr := reply(lc), reply(rc); lr == nil || !reflect.DeepEqual(lr, rr) {
		t.Errorf("chat completion: local %v, temporal %v", lr, rr)
	}
	// The plain run's events, as the stream gives them: the local run's
	// (the executions of a turn in any order).
	lt, rt := local.sseEvents("plain"), remote.sseEvents("plain")
	slices.Sort(lt)
	slices.Sort(rt)
	if !reflect.DeepEqual(lt, rt) || len(rt) == 0 {
		t.Errorf("events differ\nlocal:    %v\ntemporal: %v", lt, rt)
	}
	remote.call("POST", "/v1/ensembles/approval/runs", `{"run_id": "dropped"}`, http.StatusCreated, "")
	remote.wait("dropped", "awaiting_input")
	remote.call("POST", "/v1/runs/dropped/cancel", ``, http.StatusOK, "")
	remote.wait("dropped", "cancelled")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	// Each run was a workflow of the cluster.
	for id, want := range map[string]string{"plain": "Completed", "ask": "Completed", "dropped": "Terminated"} {
		desc, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatalf("run %s: %v", id, err)
		}
		if st := desc.GetWorkflowExecutionInfo().GetStatus().String(); st != want {
			t.Errorf("run %s's workflow is %s, want %s", id, st, want)
		}
	}
}

// sseEvents reads run id's events stream to its end.
func (s *served) sseEvents(id string) []string {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+serveToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var types []string
	for line := range bytes.Lines(b) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			var ev struct{ Type, Agent string }
			json.Unmarshal(data, &ev)
			types = append(types, ev.Type+":"+ev.Agent)
		}
	}
	return types
}

// TestServeOnTemporalRestart stops a server on Temporal while a run goes
// on and while another waits for its answer, and starts another on the
// same database: it follows the first to its end (the workflow went on
// meanwhile, or starts now) and the second takes its answer. A run whose
// id a workflow of the cluster had already stays interrupted.
func TestServeOnTemporalRestart(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	eng := &temporalengine.Remote{C: c, Queue: queue}
	db := filepath.Join(t.TempDir(), "serve.db")
	first, stop := startServeOn(t, eng, db)
	// A workflow of the cluster that is not this server's has the id a
	// run is posted with: the run does not start, and is never taken for
	// that workflow, after the restart either.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := temporalengine.Start(ctx, c, queue, "taken", threeInput(t)); err != nil {
		t.Fatal(err)
	}
	first.call("POST", "/v1/ensembles/hello-scripts/runs", `{"run_id": "taken"}`, http.StatusCreated, "")
	first.wait("taken", "interrupted")
	first.call("POST", "/v1/ensembles/approval/runs", `{"run_id": "ask"}`, http.StatusCreated, "")
	first.wait("ask", "awaiting_input")
	first.call("POST", "/v1/ensembles/hello-scripts/runs", `{"input": "Temporal", "run_id": "plain"}`, http.StatusCreated, "")
	stop()
	second, stop := startServeOn(t, eng, db)
	defer stop()
	second.wait("plain", "completed")
	second.wait("taken", "interrupted")
	if v := second.call("GET", "/v1/runs/taken", "", http.StatusOK, ""); v["turn_count"] != 0.0 {
		t.Errorf("the run whose id was taken: turn_count %v, want 0 (not the other workflow's)", v["turn_count"])
	}
	second.call("POST", "/v1/runs/ask/answers", `{"approver": {"approved": true}}`, http.StatusAccepted, "")
	second.wait("ask", "completed")
	local := startServe(t, nil)
	lp, _, ld := local.play()
	if rp := second.result("plain"); !reflect.DeepEqual(lp, rp) {
		t.Errorf("plain run: results differ\nlocal:\n%s\ntemporal:\n%s", indent(lp), indent(rp))
	}
	if rd := second.result("ask"); !reflect.DeepEqual(ld, rd) {
		t.Errorf("answered run: results differ\nlocal:\n%s\ntemporal:\n%s", indent(ld), indent(rd))
	}
}
