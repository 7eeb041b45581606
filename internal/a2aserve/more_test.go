package a2aserve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/ensemble-run/ensemble/serve"
)

// delivery is a push notification received.
type delivery struct {
	body             string
	signature, token string
}

func TestPushConfigsAreDeliveredSignedLikeWebhooks(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	var mu sync.Mutex
	var got []delivery
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{string(b), r.Header.Get(serve.SignatureHeader), r.Header.Get("A2A-Notification-Token")})
		n := len(got)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first attempt fails: retried
		}
	}))
	defer hook.Close()
	c := connect(t, base, "/a2a/ensembles/list/.well-known/agent-card.json", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("go"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL, Token: "tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	for i := 0; ; i++ {
		mu.Lock()
		last := delivery{}
		if len(got) > 0 {
			last = got[len(got)-1]
		}
		mu.Unlock()
		if strings.Contains(last.body, "TASK_STATE_COMPLETED") {
			if last.signature != serve.Sign([]byte("hook-secret"), []byte(last.body)) || last.token != "tok" {
				t.Errorf("the delivery's signature %q, token %q", last.signature, last.token)
			}
			break
		}
		if i == 600 {
			t.Fatalf("no delivery of the completed task: %+v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	first, second := got[0].body, got[1].body
	mu.Unlock()
	if first != second {
		t.Errorf("the failed delivery was not retried:\n%s\n%s", first, second)
	}
	list, err := c.ListTaskPushConfigs(t.Context(), &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(list) != 1 || list[0].URL != hook.URL {
		t.Errorf("the task's configs: %+v %v", list, err)
	}
}

func TestAPushConfigIsCheckedAsAWebhook(t *testing.T) {
	t.Parallel()
	srv, _ := start(t)
	h, err := New(srv.Runs())
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&pushStore{x: h.x}).Save(t.Context(), "t1", &a2a.PushConfig{URL: "ftp://example.com/x"})
	if err == nil || !strings.Contains(err.Error(), "http") {
		t.Errorf("an ftp URL: %v", err)
	}
}

func TestAStaleTaskWriterIsRefused(t *testing.T) {
	t.Parallel()
	srv, _ := start(t)
	h, err := New(srv.Runs())
	if err != nil {
		t.Fatal(err)
	}
	s := &taskStore{x: h.x}
	ctx := context.Background()
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	v1, err := s.Create(ctx, task)
	if err != nil || v1 != 1 {
		t.Fatalf("Create: %v %v", v1, err)
	}
	if _, err := s.Create(ctx, task); !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		t.Errorf("a second Create: %v", err)
	}
	a := *task
	a.Metadata = map[string]any{"writer": "a"}
	v2, err := s.Update(ctx, &taskstore.UpdateRequest{Task: &a, PrevVersion: v1})
	if err != nil || v2 != 2 {
		t.Fatalf("Update: %v %v", v2, err)
	}
	b := *task
	b.Metadata = map[string]any{"writer": "b"}
	if _, err := s.Update(ctx, &taskstore.UpdateRequest{Task: &b, PrevVersion: v1}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Fatalf("a stale Update: %v", err)
	}
	got, err := s.raw("t1")
	if err != nil || got.Version != 2 || got.Task.Metadata["writer"] != "a" {
		t.Errorf("the task: %+v %v", got, err)
	}
}

func TestTheTokenGuardsAllButTheCards(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	for _, c := range []struct {
		method, path, token, host string
		want                      int
	}{
		{"GET", "/.well-known/agent-card.json", "", "", 200},
		{"GET", "/a2a/ensembles/list/.well-known/agent-card.json", "", "", 200},
		{"GET", "/a2a/ensembles/nope/.well-known/agent-card.json", "", "", 404},
		{"GET", "/.well-known/agent-card.json", "", "evil.example.com", 403},
		{"POST", "/a2a", "", "", 401},
		{"POST", "/a2a/ensembles/list", "wrong", "", 401},
		{"GET", "/a2a/rest/tasks/x", "", "", 401},
		{"GET", "/a2a/rest/tasks/x", token, "", 404},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("{}"))
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s (token %q, host %q): %d, want %d", c.method, c.path, c.token, c.host, resp.StatusCode, c.want)
		}
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	c := connect(t, base, "/a2a/ensembles/secret/.well-known/agent-card.json", a2a.TransportProtocolHTTPJSON)
	task := send(t, c, text("the key is "+key))
	if got := artifactJSON(t, task); strings.Contains(got, key) || !strings.Contains(got, "[REDACTED]") {
		t.Errorf("the artifact: %s", got)
	}
	for _, m := range task.History {
		for _, p := range m.Parts {
			if strings.Contains(p.Text(), key) {
				t.Errorf("the history shows the key: %s", p.Text())
			}
		}
	}
}

// TestPlainJSONRPC is the curl recipe of docs/serve.md: a message sent as
// plain JSON-RPC, then answered over HTTP+JSON.
func TestPlainJSONRPC(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	post := func(path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		t.Logf("%s", b)
		return out
	}
	out := post("/a2a/ensembles/approve", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
  "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "draft"}]}}}`)
	task, _ := out["result"].(map[string]any)["task"].(map[string]any)
	if task == nil || task["status"].(map[string]any)["state"] != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("%v", out)
	}
	out = post("/a2a/ensembles/approve/rest/message:send", `{"message": {"messageId": "m2", "role": "ROLE_USER", "taskId": "`+
		task["id"].(string)+`", "parts": [{"text": "yes"}]}}`)
	if done, _ := out["task"].(map[string]any); done == nil || done["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("%v", out)
	}
}

// TestAContextListsItsRuns: the tasks of a context are the runs of one
// conversation, listed in pages.
func TestAContextListsItsRuns(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	c := connect(t, base, "/a2a/ensembles/list/.well-known/agent-card.json", a2a.TransportProtocolHTTPJSON)
	first := send(t, c, text("one"))
	m := text("two")
	m.ContextID = first.ContextID
	second := send(t, c, m)
	send(t, c, text("elsewhere"))
	page, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{ContextID: first.ContextID, PageSize: 1})
	if err != nil || len(page.Tasks) != 1 || page.TotalSize != 2 || page.NextPageToken == "" {
		t.Fatalf("the first page: %+v %v", page, err)
	}
	rest, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{ContextID: first.ContextID, PageSize: 1, PageToken: page.NextPageToken})
	if err != nil || len(rest.Tasks) != 1 || rest.NextPageToken != "" {
		t.Fatalf("the second page: %+v %v", rest, err)
	}
	got := []a2a.TaskID{page.Tasks[0].ID, rest.Tasks[0].ID}
	if !(got[0] == first.ID && got[1] == second.ID || got[0] == second.ID && got[1] == first.ID) {
		t.Errorf("the context's tasks: %v, want %s and %s", got, first.ID, second.ID)
	}
}

// TestSubscribeFollowsARunAnsweredElsewhere: a task whose run an answer
// through the run API made go on has no execution to join; a subscriber
// follows the run all the same, to its end.
func TestSubscribeFollowsARunAnsweredElsewhere(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	c := connect(t, base, "/a2a/ensembles/gate/.well-known/agent-card.json", a2a.TransportProtocolJSONRPC)
	task := send(t, c, text("go"))
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state %s", task.Status.State)
	}
	if err := srv.Runs().Answer(string(task.ID), map[string]string{"approver": "yes"}, 0); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, task.ID, a2a.TaskStateWorking)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var states []string
	for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			states = append(states, "task:"+string(e.Status.State))
			if err := srv.Runs().Cancel(string(task.ID)); err != nil { // once subscribed
				t.Fatal(err)
			}
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, string(e.Status.State))
		}
	}
	if got := strings.Join(states, " "); got != "task:TASK_STATE_WORKING TASK_STATE_CANCELED" {
		t.Errorf("the subscription: %s", got)
	}
}

// TestATaskOutlivesTheServer: a task that waits is kept in the state
// database, and a message to another server on it answers it.
func TestATaskOutlivesTheServer(t *testing.T) {
	t.Parallel()
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, base, stop := startOn(t, dir, db, env)
	c := connect(t, base, "/a2a/ensembles/approve/.well-known/agent-card.json", a2a.TransportProtocolJSONRPC)
	task := send(t, c, text("draft"))
	stop()
	_, base, stop = startOn(t, dir, db, env)
	defer stop()
	c = connect(t, base, "/a2a/ensembles/approve/.well-known/agent-card.json", a2a.TransportProtocolHTTPJSON)
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("after the restart: %+v %v", got, err)
	}
	answer := text("yes")
	answer.TaskID = task.ID
	if done := send(t, c, answer); done.Status.State != a2a.TaskStateCompleted || artifactJSON(t, done) != `{"answer":"yes"}` {
		t.Fatalf("the answer: %+v", done)
	}
}

// TestAPushConfigNeedsTheWebhookSecret: without it, deliveries would go
// unsigned, and the config is refused.
func TestAPushConfigNeedsTheWebhookSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, base, stop := startOn(t, dir, filepath.Join(t.TempDir(), "s.db"), map[string]string{"PATH": os.Getenv("PATH")})
	defer stop()
	c := connect(t, base, "/a2a/ensembles/list/.well-known/agent-card.json", a2a.TransportProtocolJSONRPC)
	_, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("go"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "http://127.0.0.1:9/hook"}}})
	if err == nil || !strings.Contains(err.Error(), serve.WebhookSecretEnv) {
		t.Errorf("a push config without the secret: %v", err)
	}
}

// TestARunAnsweredElsewherePushes: a task's push configs hear of its run
// however it went on (here, answered through the run API), and the task
// is brought up to date without being read.
func TestARunAnsweredElsewherePushes(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	bodies := make(chan string, 100)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
	}))
	defer hook.Close()
	c := connect(t, base, "/a2a/ensembles/approve/.well-known/agent-card.json", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("draft"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if err := srv.Runs().Answer(string(task.ID), map[string]string{"approver": "api"}, 0); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case b := <-bodies:
			if strings.Contains(b, "TASK_STATE_COMPLETED") {
				if !strings.Contains(b, `"answer":"api"`) {
					t.Errorf("the completed task pushed: %s", b)
				}
				return
			}
		case <-timeout:
			t.Fatal("no push of the completed task")
		}
	}
}

// The routes around the bindings refuse in serve's one error shape: an
// unknown route, an ensemble not served (its card, public, too).
func TestRefusalsAreJSON(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/a2a/nothing"},
		{"PUT", "/a2a"},
		{"POST", "/a2a/ensembles/nope"},
		{"GET", "/a2a/ensembles/nope/.well-known/agent-card.json"},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e serve.ErrorBody
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != 404 || err != nil || e.Error.Code != "not_found" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %v %+v", c.method, c.path, resp.StatusCode, err, e)
		}
	}
}

// A task takes a bounded number of push configs: each event is posted to
// each of them. Replacing one (its id again) is not one more.
func TestPushConfigsOfATaskAreCapped(t *testing.T) {
	t.Parallel()
	srv, _ := start(t)
	h, err := New(srv.Runs())
	if err != nil {
		t.Fatal(err)
	}
	s := &pushStore{x: h.x}
	save := func(id string) error {
		_, err := s.Save(t.Context(), "t1", &a2a.PushConfig{ID: id, URL: "http://127.0.0.1:9/hook"})
		return err
	}
	for i := range maxPushConfigs {
		if err := save(strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := save("one more"); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("one config more: %v", err)
	}
	if err := save("0"); err != nil {
		t.Fatalf("a config replaced: %v", err)
	}
	if err := s.Delete(t.Context(), "t1", "3"); err != nil {
		t.Fatal(err)
	}
	if err := save("one more"); err != nil {
		t.Fatalf("once one was deleted: %v", err)
	}
}
