package a2aserve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/ensemble-run/ensemble/serve"
)

const token = "a2a-test-token"

// files are the ensembles served: approve waits for a person's answer,
// then returns it as an object; list returns [1, 2]; count runs three
// turns; slow sleeps until cancelled; secret returns its input.
var files = map[string]string{
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
`,
	"list.sh":   "#!/bin/sh\ncat >/dev/null\necho '[1, 2]'\n",
	"list.yaml": "name: list\noutput: l\nagents:\n  - name: l\n    script: list.sh\n",
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
	"slow.sh": "#!/bin/sh\ncat >/dev/null\nsleep 600\necho '\"late\"'\n",
	"gate.yaml": `name: gate
agents:
  - name: approver
    ask: "Go on?"
    ask_mode: suspend
  - name: s
    script: slow.sh
    dependencies: [approver]
`,
	"slow.yaml": "name: slow\nagents:\n  - name: s\n    script: slow.sh\n",
	"echo.py": `#!/usr/bin/env python3
import json, sys
json.dump(json.load(sys.stdin)["input"], sys.stdout)
`,
	"secret.yaml": `name: secret
output: echo
models:
  cloud: {provider: openai, model: gpt-test, api_key_env: A2A_TEST_KEY}
agents:
  - name: echo
    script: echo.py
`,
}

const key = "sk-a2a-test-never-shown"

// env is the servers' environment.
var env = map[string]string{"A2A_TEST_KEY": key, serve.WebhookSecretEnv: "hook-secret", "PATH": os.Getenv("PATH")}

// start serves files with the A2A endpoint mounted, over httptest.
func start(t *testing.T) (*serve.Server, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv, base, stop := startOn(t, dir, filepath.Join(t.TempDir(), "s.db"), env)
	t.Cleanup(stop)
	return srv, base
}

// startOn serves the ensembles of dir over the state database db, with
// the environment env; stop stops it.
func startOn(t *testing.T, dir, db string, env map[string]string) (srv *serve.Server, base string, stop func()) {
	t.Helper()
	srv, err := serve.New(serve.Options{Paths: []string{dir}, State: db, NoUI: true,
		Listen: "127.0.0.1:0", Token: token, WebhookBackoff: 10 * time.Millisecond,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	if err := Mount(srv); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	return srv, hs.URL, func() { hs.Close(); srv.Runs().Close(0) }
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect is a client of the card at base+cardPath (read without the
// token), speaking protocol.
func connect(t *testing.T, base, cardPath string, protocol a2a.TransportProtocol) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), base, agentcard.WithPath(cardPath))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: bearer{token}}
	c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{protocol}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

var protocols = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON}

func send(t *testing.T, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("the result is no task: %#v", res)
	}
	return task
}

func text(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s)) }

// artifactJSON is the JSON of the task's result artifact's part.
func artifactJSON(t *testing.T, task *a2a.Task) string {
	t.Helper()
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		t.Fatalf("the artifacts: %+v", task.Artifacts)
	}
	p := task.Artifacts[0].Parts[0]
	if s, ok := p.Content.(a2a.Text); ok {
		return string(s)
	}
	b, _ := json.Marshal(p.Data())
	return string(b)
}

func TestSendCompletesWithTheResultArtifact(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	for _, proto := range protocols {
		t.Run(string(proto), func(t *testing.T) {
			c := connect(t, base, "/a2a/ensembles/list/.well-known/agent-card.json", proto)
			task := send(t, c, text("go"))
			if task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("state %s: %+v", task.Status.State, task.Status.Message)
			}
			if got := artifactJSON(t, task); got != "[1,2]" {
				t.Errorf("the artifact: %s", got)
			}
			// the task is the run
			if _, st, err := srv.Runs().Result(string(task.ID)); err != nil || st != "completed" {
				t.Errorf("run %s: %s %v", task.ID, st, err)
			}
			got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
			if err != nil || got.Status.State != a2a.TaskStateCompleted || artifactJSON(t, got) != "[1,2]" {
				t.Errorf("GetTask: %+v %v", got, err)
			}
		})
	}
}

func TestTheServerCardNamesTheEnsemble(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	c := connect(t, base, "/.well-known/agent-card.json", a2a.TransportProtocolJSONRPC)
	_, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("go")})
	if err == nil || !strings.Contains(err.Error(), "name the ensemble") {
		t.Fatalf("a message naming no ensemble: %v", err)
	}
	m := text("go")
	m.Metadata = map[string]any{"ensemble": "list"}
	if task := send(t, c, m); task.Status.State != a2a.TaskStateCompleted || artifactJSON(t, task) != "[1,2]" {
		t.Fatalf("%+v", task)
	}
	m = text("go")
	m.Metadata = map[string]any{"ensemble": "nope"}
	if _, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m}); err == nil || !strings.Contains(err.Error(), `no ensemble "nope"`) {
		t.Fatalf("an unknown ensemble: %v", err)
	}
}

func TestAskIsInputRequiredAndAMessageAnswersIt(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	for _, proto := range protocols {
		t.Run(string(proto), func(t *testing.T) {
			c := connect(t, base, "/a2a/ensembles/approve/.well-known/agent-card.json", proto)
			task := send(t, c, text("draft"))
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("state %s", task.Status.State)
			}
			q := question(t, task)
			if q["agent"] != "approver" || q["question"] != "Publish it?" || !sameJSON(q["schema"], map[string]any{"type": "string"}) {
				t.Fatalf("the question: %v", q)
			}
			answer := text("yes")
			answer.TaskID, answer.ContextID = task.ID, task.ContextID
			done := send(t, c, answer)
			if done.Status.State != a2a.TaskStateCompleted || artifactJSON(t, done) != `{"answer":"yes"}` {
				t.Fatalf("after the answer: %s %+v", done.Status.State, done.Artifacts)
			}
			again := text("no")
			again.TaskID = task.ID
			if _, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: again}); err == nil {
				t.Fatal("a second answer was taken")
			}
			if _, st, _ := srv.Runs().Result(string(task.ID)); st != "completed" {
				t.Errorf("the run: %s", st)
			}
		})
	}
}

// question is the data part of the question a task waits for.
func question(t *testing.T, task *a2a.Task) map[string]any {
	t.Helper()
	if task.Status.Message == nil {
		t.Fatal("no status message")
	}
	for _, p := range task.Status.Message.Parts {
		if m, ok := p.Data().(map[string]any); ok {
			return m
		}
	}
	t.Fatalf("no data part: %+v", task.Status.Message.Parts)
	return nil
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestAnAnswerGivenThroughAnotherDoorWins(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	c := connect(t, base, "/a2a/ensembles/approve/.well-known/agent-card.json", a2a.TransportProtocolJSONRPC)
	task := send(t, c, text("draft"))
	if err := srv.Runs().Answer(string(task.ID), map[string]string{"approver": "api"}, 0); err != nil {
		t.Fatal(err)
	}
	late := text("a2a")
	late.TaskID = task.ID
	if _, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: late}); err == nil {
		t.Fatal("the stale answer was taken")
	}
	waitState(t, c, task.ID, a2a.TaskStateCompleted)
	got, _ := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if artifactJSON(t, got) != `{"answer":"api"}` {
		t.Errorf("the result: %s", artifactJSON(t, got))
	}
}

// waitState reads the task until it is in state (a minute at most).
func waitState(t *testing.T, c *a2aclient.Client, id a2a.TaskID, state a2a.TaskState) {
	t.Helper()
	for i := 0; ; i++ {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		if err == nil && got.Status.State == state {
			return
		}
		if i == 600 {
			t.Fatalf("task %s: %+v %v, want %s", id, got, err, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestStreamingSendsStatusAndArtifactEvents(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	for _, proto := range protocols {
		t.Run(string(proto), func(t *testing.T) {
			c := connect(t, base, "/a2a/ensembles/count/.well-known/agent-card.json", proto)
			var kinds []string
			turns := 0
			for ev, err := range c.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: text("go")}) {
				if err != nil {
					t.Fatal(err)
				}
				switch e := ev.(type) {
				case *a2a.Task:
					kinds = append(kinds, "task")
				case *a2a.TaskStatusUpdateEvent:
					if e.Status.Message != nil && e.Status.Message.Metadata["turn"] != nil {
						turns++
						continue
					}
					kinds = append(kinds, "status:"+string(e.Status.State))
				case *a2a.TaskArtifactUpdateEvent:
					kinds = append(kinds, "artifact:"+e.Artifact.Name)
				}
			}
			want := "task status:TASK_STATE_WORKING artifact:result status:TASK_STATE_COMPLETED"
			if got := strings.Join(kinds, " "); got != want || turns != 3 {
				t.Errorf("the events: %s, %d turns\nwant %s, 3 turns", got, turns, want)
			}
		})
	}
}

func TestCancelCancelsTheRunAndSubscribersSeeIt(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	c := connect(t, base, "/a2a/ensembles/slow/.well-known/agent-card.json", a2a.TransportProtocolHTTPJSON)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: text("go"),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	// a subscriber, from its first event (the task as it stands) on
	seen, subscribed := make(chan a2a.TaskState, 1), make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		var once sync.Once
		last := a2a.TaskStateUnspecified
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
			if err != nil {
				t.Errorf("subscription: %v", err)
				break
			}
			switch e := ev.(type) {
			case *a2a.Task:
				last = e.Status.State
			case *a2a.TaskStatusUpdateEvent:
				last = e.Status.State
			}
			once.Do(func() { close(subscribed) })
		}
		seen <- last
	}()
	<-subscribed
	for i := 0; ; i++ { // the run is going on
		if st, _ := srv.Runs().Wait(t.Context(), string(task.ID), 0); st == serve.StatusRunning {
			break
		}
		if i == 600 {
			t.Fatal("the run never ran")
		}
		time.Sleep(100 * time.Millisecond)
	}
	got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %+v %v", got, err)
	}
	if last := <-seen; last != a2a.TaskStateCanceled {
		t.Errorf("the subscriber's last state: %s", last)
	}
	st, _ := srv.Runs().Wait(t.Context(), string(task.ID), time.Minute)
	if st != serve.StatusCancelled {
		t.Errorf("the run: %s", st)
	}
}
