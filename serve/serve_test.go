package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/serve"
	"github.com/ensemble-run/ensemble/session"
)

const (
	testToken = "test-token-0123456789"
	testKey   = "sk-serve-test-5e1d9a3c-never-shown"
	secret    = "whsec-test"
	// patience bounds every wait for a run: the machine may be loaded.
	patience = 3 * time.Minute
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH (make python-link; PATH=$PWD/bin/python:$PATH)")
	}
}

// ensembles copies testdata to a new folder: each test counts its own
// script executions.
func ensembles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func lookup(extra map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := extra[k]; ok {
			return v, true
		}
		if k == "SERVE_TEST_KEY" {
			return testKey, true
		}
		if k == serve.WebhookSecretEnv {
			return secret, true
		}
		return os.LookupEnv(k)
	}
}

// server is a server of the test ensembles on 127.0.0.1.
type server struct {
	url  string
	dir  string // the ensembles
	o    serve.Options
	stop func()
}

func startServer(t *testing.T, dir string, tune func(*serve.Options)) *server {
	t.Helper()
	needPython(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := serve.Options{Paths: []string{dir}, Listen: l.Addr().String(), State: filepath.Join(dir, "serve.db"),
		Token: testToken, LookupEnv: lookup(nil), KeepAlive: 50 * time.Millisecond, WebhookBackoff: 10 * time.Millisecond,
		Grace: time.Second, Skipped: func(path string, why error) { t.Errorf("%s: %v", path, why) }}
	if tune != nil {
		tune(&o)
	}
	srv, err := serve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	s := &server{url: "http://" + l.Addr().String(), dir: dir, o: o}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(s.stop)
	return s
}

// do sends a request with the token (unless a header "Authorization" is
// given) and returns the status and body.
func (s *server) do(t *testing.T, method, path string, body any, headers ...string) (int, []byte, http.Header) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

type runReply struct {
	RunID  string          `json:"run_id"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
}

func decodeRun(t *testing.T, b []byte) runReply {
	t.Helper()
	var r runReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return r
}

// start starts a run and waits for it to end or suspend.
func (s *server) start(t *testing.T, name string, body any, headers ...string) runReply {
	t.Helper()
	code, b, _ := s.do(t, "POST", "/v1/ensembles/"+name+"/runs", body, append([]string{"Prefer", "wait=" + strconv.Itoa(int(patience/time.Second))}, headers...)...)
	if code != http.StatusCreated {
		t.Fatalf("POST runs: %d %s", code, b)
	}
	return decodeRun(t, b)
}

// waitStatus polls run id until its status is want.
func (s *server) waitStatus(t *testing.T, id, want string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		code, b, h := s.do(t, "GET", "/v1/runs/"+id, nil)
		if code == http.StatusOK && h.Get("Ensemble-Run-Status") == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %q, want %q (%d %s)", id, h.Get("Ensemble-Run-Status"), want, code, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	var e serve.ErrorBody
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("not the error shape: %s", b)
	}
	return e.Error.Code
}

// counts reads count.log: executions by "INPUT AGENT".
func counts(t *testing.T, dir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "count", "count.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out[l]++
		}
	}
	return out
}

func TestEnsembles(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	code, b, _ := s.do(t, "GET", "/v1/ensembles", nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, b)
	}
	var got struct{ Ensembles []serve.EnsembleInfo }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got.Ensembles {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"ask", "count", "secret"}) {
		t.Fatalf("ensembles %v", names)
	}
	ask := got.Ensembles[0]
	if len(ask.Asks) != 1 || ask.Asks[0].Agent != "approver" || ask.Asks[0].Question != "Publish it?" || ask.Asks[0].AnswerSchema != nil {
		t.Fatalf("asks %+v", ask.Asks)
	}
	// without output:, no output schema; the input is a string
	if ask.OutputSchema != nil || ask.InputSchema["type"] != "string" {
		t.Fatalf("schemas %+v", ask)
	}
	// the output: agent's output_schema is the ensemble's; the file's
	// input the input's default
	count := got.Ensembles[1]
	if count.OutputSchema["type"] != "object" || count.InputSchema["default"] != "go" {
		t.Fatalf("schemas %+v", count)
	}
	if bytes.Contains(b, []byte(testKey)) {
		t.Fatal("the key shows")
	}
}

func TestRunResultIsStateShow(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	r := s.start(t, "count", map[string]any{"input": "hello", "run_id": "my-run"})
	if r.RunID != "my-run" || r.Status != "completed" {
		t.Fatalf("%+v", r)
	}
	code, b, h := s.do(t, "GET", "/v1/runs/my-run", nil)
	if code != http.StatusOK || h.Get("Ensemble-Run-Status") != "completed" {
		t.Fatalf("%d %v %s", code, h, b)
	}
	// state show's bytes: the saved run's result, written by the same writer
	sf, info, err := durable.Load(s.o.State, "my-run")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	e, err := session.Load(sf.Ensemble.Path, nil, session.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := durable.ResultOf(e, sf, info).WriteJSON(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("GET /v1/runs/ID:\n%s\nstate show:\n%s", b, want.Bytes())
	}
	var res struct {
		CompletionReason string         `json:"completion_reason"`
		FinalState       map[string]any `json:"final_state"`
		Output           map[string]any `json:"output"`
	}
	json.Unmarshal(r.Result, &res)
	if res.CompletionReason != "completed" || len(res.FinalState) != 3 || res.Output["agent"] != "three" {
		t.Fatalf("result %s", r.Result)
	}
	// the same run id again is a conflict
	code, b, _ = s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"run_id": "my-run"})
	if code != http.StatusConflict || errorCode(t, b) != "conflict" {
		t.Fatalf("%d %s", code, b)
	}
	// the list, filtered and paged
	s.start(t, "ask", nil)
	code, b, _ = s.do(t, "GET", "/v1/runs?status=completed", nil)
	var list struct {
		Runs []serve.RunSummary
		Next string
	}
	json.Unmarshal(b, &list)
	if code != 200 || len(list.Runs) != 1 || list.Runs[0].ID != "my-run" || list.Runs[0].Ensemble != "count" {
		t.Fatalf("%d %s", code, b)
	}
	_, b, _ = s.do(t, "GET", "/v1/runs?limit=1", nil)
	json.Unmarshal(b, &list)
	if len(list.Runs) != 1 || list.Next != "my-run" {
		t.Fatalf("page 1: %s", b)
	}
	_, b, _ = s.do(t, "GET", "/v1/runs?limit=1&after="+list.Next, nil)
	json.Unmarshal(b, &list)
	if len(list.Runs) != 1 || list.Runs[0].Ensemble != "ask" || list.Runs[0].Status != "awaiting_input" || list.Next != "" {
		t.Fatalf("page 2: %s", b)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	first := s.start(t, "count", map[string]any{"input": "once"}, "Idempotency-Key", "k1")
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "once"}, "Idempotency-Key", "k1", "Prefer", "wait=60")
	again := decodeRun(t, b)
	if code != http.StatusOK || again.RunID != first.RunID || again.Status != "completed" {
		t.Fatalf("retried POST: %d %s (first %s)", code, b, first.RunID)
	}
	if n := counts(t, s.dir)["once one"]; n != 1 {
		t.Fatalf("agent one ran %d times", n)
	}
	other := s.start(t, "count", map[string]any{"input": "once"}, "Idempotency-Key", "k2")
	if other.RunID == first.RunID {
		t.Fatal("another key made the same run")
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	r := s.start(t, "ask", map[string]any{"input": "note"})
	if r.Status != "awaiting_input" {
		t.Fatalf("%+v", r)
	}
	path := "/v1/runs/" + r.RunID + "/answers"
	for _, c := range []struct {
		body any
		code int
		err  string
	}{
		{map[string]any{"publisher": "x"}, 409, "conflict"},
		{map[string]any{}, 400, "bad_request"},
		{`{"approver": `, 400, "bad_request"},
	} {
		code, b, _ := s.do(t, "POST", path, c.body)
		if code != c.code || errorCode(t, b) != c.err {
			t.Errorf("%v: %d %s, want %d %s", c.body, code, b, c.code, c.err)
		}
		// the refusal is worded for this door: no command-line flag in it
		if strings.Contains(string(b), "--answer") {
			t.Errorf("%v: %s names a flag", c.body, b)
		}
	}
	// a stale answer: given for another turn than the run is at
	code, b, _ := s.do(t, "POST", path+"?turn=7", map[string]any{"approver": map[string]any{"approved": true}})
	if code != 409 || !strings.Contains(string(b), "gone on") {
		t.Fatalf("stale: %d %s", code, b)
	}
	code, b, _ = s.do(t, "POST", path, map[string]any{"approver": map[string]any{"approved": true}}, "Prefer", "wait=180")
	got := decodeRun(t, b)
	if code != http.StatusAccepted || got.Status != "completed" {
		t.Fatalf("answer: %d %s", code, b)
	}
	// the first answer won: a second gets 409 with the reason
	code, b, _ = s.do(t, "POST", path, map[string]any{"approver": map[string]any{"approved": false}})
	if code != 409 || !strings.Contains(string(b), "waits for no answer") {
		t.Fatalf("second answer: %d %s", code, b)
	}
	// two answers at once: one wins
	r2 := s.start(t, "ask", nil)
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := s.do(t, "POST", "/v1/runs/"+r2.RunID+"/answers", map[string]any{"approver": map[string]any{"approved": true}})
			switch code {
			case http.StatusAccepted:
				wins.Add(1)
			case http.StatusConflict:
				conflicts.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != 3 {
		t.Fatalf("concurrent answers: %d won, %d conflicts", wins.Load(), conflicts.Load())
	}
}

// sse reads an event stream: its events' ids and data, and whether a
// keep-alive comment came.
func (s *server) sse(t *testing.T, id string, headers ...string) (ids []int, data []string, keepAlive bool) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "id: "):
			n, _ := strconv.Atoi(l[4:])
			ids = append(ids, n)
		case strings.HasPrefix(l, "data: "):
			data = append(data, l[6:])
		case l == ": keep-alive":
			keepAlive = true
		}
	}
	return ids, data, keepAlive
}

func TestEvents(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "slow"})
	if code != 201 {
		t.Fatalf("%d %s", code, b)
	}
	id := decodeRun(t, b).RunID
	// followed live until the run ends: every event, keep-alives between
	ids, data, keep := s.sse(t, id)
	if !keep {
		t.Error("no keep-alive comment while the run went on")
	}
	for i, n := range ids {
		if n != i+1 {
			t.Fatalf("ids %v", ids)
		}
	}
	typ := func(d string) string {
		var e struct{ Type string }
		json.Unmarshal([]byte(d), &e)
		return e.Type
	}
	if len(data) < 4 || typ(data[0]) != "run_started" || typ(data[len(data)-1]) != "run_completed" {
		t.Fatalf("events %v", data)
	}
	// Last-Event-ID resumes after it, without loss
	ids2, data2, _ := s.sse(t, id, "Last-Event-ID", "3")
	if len(ids2) != len(ids)-3 || ids2[0] != 4 || !slices.Equal(data2, data[3:]) {
		t.Fatalf("after 3: ids %v", ids2)
	}
	code, b, _ = s.do(t, "GET", "/v1/runs/"+id+"/events", nil, "Last-Event-ID", "x")
	if code != 400 {
		t.Fatalf("bad Last-Event-ID: %d %s", code, b)
	}
	code, b, _ = s.do(t, "GET", "/v1/runs/nope/events", nil)
	if code != 404 || errorCode(t, b) != "not_found" {
		t.Fatalf("unknown run: %d %s", code, b)
	}
}

// parked waits for the parked script of the test's count ensemble and
// returns its pid.
func parked(t *testing.T, dir string) int {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "count", "park.pid"))
		if err == nil {
			pid, _ := strconv.Atoi(string(b))
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the script never parked")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func killPid(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "park"})
	if code != 201 {
		t.Fatalf("%d %s", code, b)
	}
	id := decodeRun(t, b).RunID
	pid := parked(t, s.dir)
	defer killPid(pid)
	code, b, _ = s.do(t, "POST", "/v1/runs/"+id+"/cancel", nil)
	if code != 200 || decodeRun(t, b).Status != "cancelled" {
		t.Fatalf("cancel: %d %s", code, b)
	}
	s.waitStatus(t, id, "cancelled")
	// a suspended run cancelled takes no answer
	r := s.start(t, "ask", nil)
	if code, b, _ = s.do(t, "POST", "/v1/runs/"+r.RunID+"/cancel", nil); code != 200 {
		t.Fatalf("cancel a suspended run: %d %s", code, b)
	}
	code, b, _ = s.do(t, "POST", "/v1/runs/"+r.RunID+"/answers", map[string]any{"approver": map[string]any{"approved": true}})
	if code != 409 || !strings.Contains(string(b), "cancelled") {
		t.Fatalf("answer a cancelled run: %d %s", code, b)
	}
	// an ended run has nothing to cancel
	done := s.start(t, "count", nil)
	if code, b, _ = s.do(t, "POST", "/v1/runs/"+done.RunID+"/cancel", nil); code != 409 {
		t.Fatalf("cancel an ended run: %d %s", code, b)
	}
}

func TestFork(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	r := s.start(t, "count", map[string]any{"input": "f"})
	code, b, _ := s.do(t, "POST", "/v1/runs/"+r.RunID+"/fork", map[string]any{"from_turn": 1}, "Prefer", "wait=180")
	fork := decodeRun(t, b)
	if code != 201 || fork.RunID == r.RunID || fork.Status != "completed" {
		t.Fatalf("fork: %d %s", code, b)
	}
	c := counts(t, s.dir)
	if c["f one"] != 1 || c["f two"] != 2 || c["f three"] != 2 {
		t.Fatalf("executions %v: the fork must copy turn 1 and run the rest", c)
	}
	_, b, _ = s.do(t, "GET", "/v1/runs", nil)
	if !strings.Contains(string(b), `"parent":"`+r.RunID+`","parent_turn":1`) {
		t.Fatalf("the fork's parent: %s", b)
	}
	for _, c := range []struct {
		body any
		code int
	}{{map[string]any{}, 400}, {map[string]any{"from_turn": 9}, 409}, {map[string]any{"from_turn": -1}, 400}} {
		if code, b, _ := s.do(t, "POST", "/v1/runs/"+r.RunID+"/fork", c.body); code != c.code {
			t.Errorf("%v: %d %s", c.body, code, b)
		}
	}
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	type delivery struct {
		sig  string
		body []byte
	}
	var mu sync.Mutex
	var got []delivery
	var calls atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if calls.Add(1) <= 2 { // the first two attempts fail
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		mu.Lock()
		got = append(got, delivery{r.Header.Get(serve.SignatureHeader), b})
		mu.Unlock()
	}))
	defer recv.Close()
	s := startServer(t, ensembles(t), nil)
	r := s.start(t, "ask", map[string]any{"webhook": recv.URL + "/hook"})
	deadline := time.Now().Add(patience)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery")
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := got[0]
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(d.body)
	if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); d.sig != want || serve.Sign([]byte(secret), d.body) != want {
		t.Fatalf("signature %q, want %q", d.sig, want)
	}
	var hook serve.Webhook
	if err := json.Unmarshal(d.body, &hook); err != nil || hook.RunID != r.RunID || hook.Status != "awaiting_input" || hook.Ensemble != "ask" {
		t.Fatalf("delivery %s", d.body)
	}
	// and when it ends
	s.do(t, "POST", "/v1/runs/"+r.RunID+"/answers", map[string]any{"approver": "yes"})
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery at the end")
		}
	}
	if err := json.Unmarshal(got[1].body, &hook); err != nil || hook.Status != "completed" || serve.Sign([]byte(secret), got[1].body) != got[1].sig {
		t.Fatalf("delivery at the end %s", got[1].body)
	}
	// each attempt is in the run's events; the last one is recorded after
	// the receiver answered, so it may follow the stream's end
	for deadline := time.Now().Add(patience); ; time.Sleep(20 * time.Millisecond) {
		_, data, _ := s.sse(t, r.RunID)
		var failed, delivered int
		for _, e := range data {
			failed += strings.Count(e, `"type":"webhook_failed"`)
			delivered += strings.Count(e, `"type":"webhook_delivered"`)
		}
		if failed == 2 && delivered == 2 {
			break
		}
		if failed > 2 || delivered > 2 || time.Now().After(deadline) {
			t.Fatalf("webhook events: %d failed, %d delivered", failed, delivered)
		}
	}
	// without a secret, a webhook is refused
	s2 := startServer(t, ensembles(t), func(o *serve.Options) {
		o.LookupEnv = lookup(map[string]string{serve.WebhookSecretEnv: ""})
	})
	code, b, _ := s2.do(t, "POST", "/v1/ensembles/ask/runs", map[string]any{"webhook": recv.URL})
	if code != 400 || !strings.Contains(string(b), serve.WebhookSecretEnv) {
		t.Fatalf("%d %s", code, b)
	}
	code, b, _ = s2.do(t, "POST", "/v1/ensembles/ask/runs", map[string]any{"webhook": "file:///etc/passwd"})
	if code != 400 {
		t.Fatalf("%d %s", code, b)
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), func(o *serve.Options) {
		o.MaxBody = 1024
		o.CORS = "https://app.example"
		o.Hosts = []string{"ensembles.internal"}
	})
	big := `{"input": "` + strings.Repeat("x", 2048) + `"}`
	for _, c := range []struct {
		name, method, path string
		body               any
		headers            []string
		code               int
		err                string
	}{
		{"no token", "GET", "/v1/runs", nil, []string{"Authorization", ""}, 401, "unauthorized"},
		{"wrong token", "GET", "/v1/runs", nil, []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"not bearer", "GET", "/v1/ensembles", nil, []string{"Authorization", testToken}, 401, "unauthorized"},
		{"rebinding", "GET", "/v1/runs", nil, []string{"Host", "evil.example:80"}, 403, "forbidden"},
		{"no token, a host allowed", "GET", "/v1/runs", nil, []string{"Host", "ensembles.internal:7777", "Authorization", ""}, 401, "unauthorized"},
		{"body over the cap", "POST", "/v1/ensembles/count/runs", big, nil, 413, "too_large"},
		{"unknown ensemble", "POST", "/v1/ensembles/nope/runs", nil, nil, 404, "not_found"},
		{"bad JSON", "POST", "/v1/ensembles/count/runs", "{", nil, 400, "bad_request"},
		{"bad run id", "POST", "/v1/ensembles/count/runs", map[string]any{"run_id": "../x"}, nil, 400, "bad_request"},
		{"bad wait", "POST", "/v1/ensembles/count/runs", nil, []string{"Prefer", "wait=soon"}, 400, "bad_request"},
		{"unknown API", "GET", "/v1/nothing", nil, nil, 404, "not_found"},
		{"unknown run", "GET", "/v1/runs/nope", nil, nil, 404, "not_found"},
		{"bad limit", "GET", "/v1/runs?limit=0", nil, nil, 400, "bad_request"},
	} {
		code, b, _ := s.do(t, c.method, c.path, c.body, c.headers...)
		if code != c.code || errorCode(t, b) != c.err {
			t.Errorf("%s: %d %s, want %d %s", c.name, code, b, c.code, c.err)
		}
	}
	if code, b, _ := s.do(t, "GET", "/v1/runs", nil, "Host", "Ensembles.Internal"); code != 200 {
		t.Errorf("a host allowed: %d %s", code, b)
	}
	// CORS: the one origin allowed, no other
	_, _, h := s.do(t, "GET", "/v1/ensembles", nil, "Origin", "https://app.example")
	if h.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("allowed origin: %v", h)
	}
	// a page may read the run id of a chat reply (serve.RunIDHeader)
	if !strings.Contains(h.Get("Access-Control-Expose-Headers"), serve.RunIDHeader) {
		t.Errorf("exposed headers: %v", h)
	}
	_, _, h = s.do(t, "GET", "/v1/ensembles", nil, "Origin", "https://evil.example")
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin: %v", h)
	}
	// the inspector, at /ui/, with the same token
	code, b, _ := s.do(t, "GET", "/ui/", nil)
	if code != 200 || !strings.Contains(string(b), "app.js") {
		t.Fatalf("/ui/: %d %.200s", code, b)
	}
	code, b, _ = s.do(t, "GET", "/api/runs", nil, "X-Ensemble-Token", testToken)
	if code != 200 {
		t.Fatalf("the inspector's API with the token: %d %s", code, b)
	}
	if code, b, _ = s.do(t, "GET", "/api/runs", nil, "X-Ensemble-Token", testToken, "Host", "ensembles.internal"); code != 200 {
		t.Fatalf("the inspector's API by a host allowed: %d %s", code, b)
	}
	code, _, _ = s.do(t, "GET", "/api/runs", nil, "X-Ensemble-Token", "nope")
	if code != 403 {
		t.Fatalf("the inspector's API without the token: %d", code)
	}
}

func TestNonLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	_, err := serve.New(serve.Options{Paths: []string{"testdata/count"}, Listen: "0.0.0.0:7777", State: filepath.Join(t.TempDir(), "s.db")})
	if err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("err %v", err)
	}
	if !serve.IsLoopback("127.0.0.1:1") || !serve.IsLoopback("[::1]:1") || !serve.IsLoopback("localhost:1") || serve.IsLoopback("10.0.0.1:1") {
		t.Fatal("IsLoopback")
	}
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	r := s.start(t, "secret", map[string]any{"input": "the key is " + testKey})
	if r.Status != "completed" {
		t.Fatalf("%+v", r)
	}
	_, res, _ := s.do(t, "GET", "/v1/runs/"+r.RunID, nil)
	_, _, _ = s.do(t, "GET", "/v1/runs", nil)
	_, data, _ := s.sse(t, r.RunID)
	code, e, _ := s.do(t, "POST", "/v1/ensembles/nope"+testKey+"/runs", nil)
	all := string(r.Result) + string(res) + strings.Join(data, "\n") + string(e)
	if code != 404 || strings.Contains(all, testKey) {
		t.Fatalf("the key shows:\n%s", all)
	}
	if !strings.Contains(string(res), "the key is") {
		t.Fatalf("result %s", res)
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), func(o *serve.Options) { o.MaxRuns, o.MaxQueue = 1, 1 })
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "park"})
	if code != 201 {
		t.Fatalf("%d %s", code, b)
	}
	first := decodeRun(t, b).RunID
	defer killPid(parked(t, s.dir))
	code, b, _ = s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "q"})
	second := decodeRun(t, b)
	if code != 201 || second.Status != "queued" {
		t.Fatalf("second: %d %s", code, b)
	}
	code, b, _ = s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "q"})
	if code != 429 || errorCode(t, b) != "busy" {
		t.Fatalf("third: %d %s", code, b)
	}
	s.do(t, "POST", "/v1/runs/"+first+"/cancel", nil)
	s.waitStatus(t, second.RunID, "completed")
}

// TestMain runs the test binary as a server when the kill test starts it
// (SERVE_TEST_CHILD names its ensembles' folder).
func TestMain(m *testing.M) {
	if dir := os.Getenv("SERVE_TEST_CHILD"); dir != "" {
		os.Exit(child(dir))
	}
	os.Exit(m.Run())
}

func child(dir string) int {
	srv, err := serve.New(serve.Options{Paths: []string{dir}, Listen: "127.0.0.1:0", State: filepath.Join(dir, "serve.db"),
		Token: testToken, MaxRuns: 1, Grace: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(l.Addr().String())
	if err := srv.Serve(context.Background(), l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts the test binary as a server of dir's ensembles.
func startChild(t *testing.T, dir string) (*server, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SERVE_TEST_CHILD="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the server did not start: %v", err)
	}
	return &server{url: "http://" + strings.TrimSpace(line), dir: dir, o: serve.Options{State: filepath.Join(dir, "serve.db")}}, cmd
}

// TestKillRestart kills the server (kill -9) with a run going on (parked in
// its second turn), a run queued behind it and a run waiting for an answer,
// starts it again on the same database, and checks that every run ends
// with its result and that no committed turn ran twice.
func TestKillRestart(t *testing.T) {
	needPython(t)
	dir := ensembles(t)
	s, cmd := startChild(t, dir)
	ask := s.start(t, "ask", map[string]any{"input": "approve me"})
	if ask.Status != "awaiting_input" {
		t.Fatalf("%+v", ask)
	}
	_, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "park"})
	park := decodeRun(t, b).RunID
	pid := parked(t, dir)
	_, b, _ = s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "queued"})
	queued := decodeRun(t, b)
	if queued.Status != "queued" {
		t.Fatalf("%+v", queued)
	}
	_, events, _ := s.do(t, "GET", "/v1/runs/"+ask.RunID+"/events", nil)
	cmd.Process.Kill() // kill -9
	cmd.Wait()
	killPid(pid) // the parked script, which outlived it
	s2, _ := startChild(t, dir)
	s2.waitStatus(t, park, "completed")
	s2.waitStatus(t, queued.RunID, "completed")
	// the suspended run is still answerable, and its events were kept
	_, again, _ := s2.do(t, "GET", "/v1/runs/"+ask.RunID+"/events", nil)
	if !bytes.Equal(events, again) {
		t.Fatalf("events before the kill:\n%s\nafter:\n%s", events, again)
	}
	code, b, _ := s2.do(t, "POST", "/v1/runs/"+ask.RunID+"/answers", map[string]any{"approver": map[string]any{"approved": true}}, "Prefer", "wait=180")
	if code != 202 || decodeRun(t, b).Status != "completed" {
		t.Fatalf("answer after the restart: %d %s", code, b)
	}
	want := map[string]int{"park one": 1, "park two": 1, "park three": 1, "queued one": 1, "queued two": 1, "queued three": 1}
	if c := counts(t, dir); !mapsEqual(c, want) {
		t.Fatalf("executions %v, want %v", c, want)
	}
	for _, id := range []string{park, queued.RunID} {
		_, res, _ := s2.do(t, "GET", "/v1/runs/"+id, nil)
		var r struct {
			Count map[string]int `json:"agent_execution_count"`
		}
		json.Unmarshal(res, &r)
		if r.Count["one"] != 1 || r.Count["two"] != 1 || r.Count["three"] != 1 {
			t.Fatalf("run %s: %s", id, res)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A shutdown lets a run going on end within the grace period; one that
// outlasts it is interrupted, saved, and goes on at the next start from its
// last saved turn.
func TestShutdownGrace(t *testing.T) {
	t.Parallel()
	dir := ensembles(t)
	s := startServer(t, dir, func(o *serve.Options) { o.Grace = patience })
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "slow"})
	if code != 201 {
		t.Fatalf("%d %s", code, b)
	}
	slow := decodeRun(t, b).RunID
	s.stop() // returns once the run has ended
	sf, _, err := durable.Load(s.o.State, slow)
	if err != nil || sf.CompletionReason != "completed" {
		t.Fatalf("after the grace period: %v %+v", err, sf)
	}

	s = startServer(t, dir, func(o *serve.Options) { o.Grace = 100 * time.Millisecond })
	_, b, _ = s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "park"})
	park := decodeRun(t, b).RunID
	pid := parked(t, dir)
	defer killPid(pid)
	s.stop()
	s = startServer(t, dir, nil)
	s.waitStatus(t, park, "completed")
	if c := counts(t, dir); c["park one"] != 1 || c["park two"] != 1 || c["park three"] != 1 {
		t.Fatalf("executions %v", c)
	}
}

// A handler mounted beside the run API (Handle) is behind the same guard,
// and reuses the run machinery.
func TestHandle(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := ensembles(t)
	srv, err := serve.New(serve.Options{Paths: []string{dir}, State: filepath.Join(dir, "s.db"), Token: testToken, NoUI: true, LookupEnv: lookup(nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("POST /v2/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs := srv.Runs()
		in := "mounted"
		id, _, err := runs.Start(r.Context(), "count", &in, serve.StartOptions{})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		status, _ := runs.Wait(r.Context(), id, patience)
		res, _, _ := runs.RunResult(id)
		fmt.Fprintf(w, "%s %s %v", status, res.CompletionReason, res.FinalState["three"])
	}))
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Runs().Close(time.Second)
	for _, c := range []struct {
		token string
		code  int
	}{{"", 401}, {testToken, 200}} {
		req, _ := http.NewRequest("POST", ts.URL+"/v2/echo", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || c.code == 200 && !strings.HasPrefix(string(b), "completed completed map[") {
			t.Errorf("token %q: %d %s", c.token, resp.StatusCode, b)
		}
	}
}

// An answer from the inspector's page goes on in the run machinery: the
// first answer wins whichever door it came by, and the run's events are
// kept.
func TestInspectorAnswers(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	r := s.start(t, "ask", nil)
	var res struct {
		Turns int `json:"turn_count"`
	}
	json.Unmarshal(r.Result, &res)
	body := map[string]any{"answers": map[string]string{"approver": "yes"}, "turns": res.Turns}
	code, b, _ := s.do(t, "POST", "/api/run/answer?id="+r.RunID, body, "X-Ensemble-Token", testToken)
	if code != 200 {
		t.Fatalf("the page's answer: %d %s", code, b)
	}
	s.waitStatus(t, r.RunID, "completed")
	code, b, _ = s.do(t, "POST", "/api/run/answer?id="+r.RunID, body, "X-Ensemble-Token", testToken)
	if code != 409 {
		t.Fatalf("a second answer from the page: %d %s", code, b)
	}
	if code, b, _ = s.do(t, "POST", "/v1/runs/"+r.RunID+"/answers", map[string]any{"approver": "no"}); code != 409 {
		t.Fatalf("a second answer through the API: %d %s", code, b)
	}
	_, data, _ := s.sse(t, r.RunID)
	if last := data[len(data)-1]; !strings.Contains(last, `"type":"run_completed"`) || !strings.Contains(last, `"message":"completed"`) {
		t.Fatalf("the events of the run answered from the page end with %s", last)
	}
	var fork struct{ ID string }
	code, b, _ = s.do(t, "POST", "/api/run/fork?id="+r.RunID, map[string]any{"turn": 1}, "X-Ensemble-Token", testToken)
	if json.Unmarshal(b, &fork); code != 200 || fork.ID == "" {
		t.Fatalf("the page's fork: %d %s", code, b)
	}
	s.waitStatus(t, fork.ID, "awaiting_input")
}
