package clients_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/serve"
)

// The chat ensembles: each in its own folder, with its responses.yaml
// when its model replies are injected.
var chatFiles = map[string]string{
	"writer/ensemble.yaml": `name: writer
description: One model reply, injected.
models:
  m: {provider: openai, model: fake, api_key_env: CHAT_KEY}
output: draft
agents:
  - name: draft
    model_profile: m
    prompt: Write one line.
`,
	"writer/responses.yaml": "draft: [\"Hello from the ensemble.\"]\n",
	"facts/ensemble.yaml": `name: facts
description: A script's structured output.
output: count
agents:
  - name: count
    script: step.py
`,
	"whole/ensemble.yaml": `name: whole
description: No output, so the whole final state.
agents:
  - name: count
    script: step.py
`,
	"approve/ensemble.yaml": `name: approve
description: A draft, an approval that waits, then publication.
output: publisher
agents:
  - name: writer
    script: step.py
  - name: approver
    ask: "Publish it?"
    ask_mode: suspend
    dependencies: [writer]
  - name: publisher
    script: step.py
    dependencies: [approver]
`,
	"broken/ensemble.yaml": `name: broken
agents:
  - name: fail
    script: step.py
`,
	"live/ensemble.yaml": `name: live
description: A model that streams its reply.
models:
  m: {provider: openai, model: fake, base_url: "${CHAT_MODEL_URL}", api_key_env: CHAT_KEY}
output: talk
agents:
  - name: talk
    model_profile: m
    prompt: Say hello.
`,
}

// chatStep is every chat ensemble's script: what it prints depends on its
// agent.
const chatStep = `#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
a = req["agent"]
if a == "count":
    out = {"words": len(req["input"].split()), "input": req["input"]}
elif a == "publisher":
    out = "published, the approver said: " + str(req["dependencies"]["approver"])
elif a == "fail":
    sys.stderr.write("the script broke on purpose\n")
    sys.exit(3)
else:
    out = "draft of " + req["input"]
json.dump(out, sys.stdout)
`

// the deltas the fake model streams.
var liveDeltas = []string{"Hello there, this is the first piece of it; ", "and here comes the second piece of the text, ", "with the third and last one at the end."}

const chatKey = "sk-chat-key-0123"

// fakeModel speaks the OpenAI wire format: a streamed request gets
// liveDeltas as chunks, then the usage; another the whole text.
func fakeModel(t *testing.T) *fakemodel.Server {
	return fakemodel.New(t, func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: strings.Join(liveDeltas, ""), Chunks: liveDeltas}
	}, fakemodel.WithUsage(11, 7))
}

// chatServer serves the chat ensembles (the model's replies injected
// where they have a responses.yaml, the live one's from a fake model).
func chatServer(t *testing.T, dir string) *server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
		for name, text := range chatFiles {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(name, "ensemble.yaml") {
				os.WriteFile(filepath.Join(filepath.Dir(p), "step.py"), []byte(chatStep), 0o755)
			}
		}
	}
	model := fakeModel(t)
	return startServer(t, dir, func(o *serve.Options) {
		o.Responses = true
		o.LookupEnv = lookup(map[string]string{"CHAT_KEY": chatKey, "CHAT_MODEL_URL": model.URL()})
	})
}

// client is the official OpenAI client, configured with the server's
// token as its API key.
func (s *server) client() openai.Client {
	return openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey(testToken), option.WithMaxRetries(0))
}

func chatParams(model string, msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: msgs}
}

// runIDOf is the run id a reply's metadata names.
func runIDOf(t *testing.T, c *openai.ChatCompletion) string {
	t.Helper()
	var m struct {
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(c.RawJSON()), &m); err != nil || m.Metadata["ensemble_run_id"] == "" {
		t.Fatalf("no run id in the metadata: %s", c.RawJSON())
	}
	return m.Metadata["ensemble_run_id"]
}

func TestChatCompletion(t *testing.T) {
	t.Parallel()
	s := chatServer(t, "")
	ctx := context.Background()
	c := s.client()
	for _, tc := range []struct{ model, input, want string }{
		{"writer", "a line", "Hello from the ensemble."},                          // an LLM agent's text as it is
		{"facts", "three short words", `{"input":"three short words","words":3}`}, // a structured output as JSON
	} {
		var resp *http.Response
		got, err := c.Chat.Completions.New(ctx, chatParams(tc.model, openai.SystemMessage("be brief"), openai.UserMessage("earlier"),
			openai.AssistantMessage("ok"), openai.UserMessage(tc.input)), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if len(got.Choices) != 1 || got.Choices[0].Message.Content != tc.want || got.Choices[0].Message.Role != "assistant" || got.Model != tc.model {
			t.Fatalf("%s: %s", tc.model, got.RawJSON())
		}
		id := runIDOf(t, got)
		if resp.Header.Get(serve.RunIDHeader) != id {
			t.Fatalf("header %q, metadata %q", resp.Header.Get(serve.RunIDHeader), id)
		}
		// the run's input is the last user message
		_, b, _ := s.do(t, "GET", "/v1/runs/"+id, "")
		var res struct{ Input string }
		json.Unmarshal(b, &res)
		if res.Input != tc.input {
			t.Fatalf("%s: the run's input %q", tc.model, res.Input)
		}
	}
	// without output:, the whole final state
	got, err := c.Chat.Completions.New(ctx, chatParams("whole", openai.UserMessage("two words")))
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal([]byte(got.Choices[0].Message.Content), &state); err != nil || state["count"] == nil {
		t.Fatalf("not the final state: %s", got.RawJSON())
	}
	// the usage is the run's tokens
	got, err = c.Chat.Completions.New(ctx, chatParams("live", openai.UserMessage("hi")))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != strings.Join(liveDeltas, "") || got.Usage.PromptTokens != 11 || got.Usage.CompletionTokens != 7 || got.Usage.TotalTokens != 18 {
		t.Fatalf("live: %s", got.RawJSON())
	}
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	s := chatServer(t, "")
	ctx := context.Background()
	c := s.client()
	for _, tc := range []struct {
		model  string
		want   string
		pieces int // content chunks at least
	}{
		{"live", strings.Join(liveDeltas, ""), 2}, // the model's deltas as they come
		{"writer", "Hello from the ensemble.", 1}, // injected: no deltas, the output at the end
		{"facts", `{"input":"hi","words":1}`, 1},  // a script: its output at the end
	} {
		p := chatParams(tc.model, openai.UserMessage("hi"))
		p.StreamOptions.IncludeUsage = openai.Bool(true)
		var resp *http.Response
		stream := c.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&resp))
		var acc openai.ChatCompletionAccumulator
		pieces := 0
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
				pieces++
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != tc.want || pieces < tc.pieces {
			t.Fatalf("%s: %d pieces, %+v", tc.model, pieces, acc.Choices)
		}
		if resp.Header.Get(serve.RunIDHeader) == "" || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%s: headers %v", tc.model, resp.Header)
		}
		if tc.model == "live" && (acc.Usage.PromptTokens != 11 || acc.Usage.CompletionTokens != 7) {
			t.Fatalf("usage %+v", acc.Usage)
		}
	}
	// a failed run in a stream: the SDK reads the error event
	stream := c.Chat.Completions.NewStreaming(ctx, chatParams("broken", openai.UserMessage("hi")))
	for stream.Next() {
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "broke on purpose") {
		t.Fatalf("stream error %v", err)
	}
}

func TestChatModels(t *testing.T) {
	t.Parallel()
	s := chatServer(t, "")
	c := s.client()
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "ensemble" {
			t.Fatalf("model %s", m.RawJSON())
		}
	}
	if strings.Join(ids, " ") != "approve broken facts live whole writer" {
		t.Fatalf("models %v", ids)
	}
	m, err := c.Models.Get(context.Background(), "writer")
	if err != nil || m.ID != "writer" {
		t.Fatalf("%v %+v", err, m)
	}
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	s := chatServer(t, "")
	c := s.client()
	ctx := context.Background()
	apiErr := func(err error) *openai.Error {
		t.Helper()
		var e *openai.Error
		if !errors.As(err, &e) {
			t.Fatalf("not an API error: %v", err)
		}
		return e
	}
	_, err := c.Chat.Completions.New(ctx, chatParams("nope", openai.UserMessage("hi")))
	if e := apiErr(err); e.StatusCode != 404 || e.Code != "model_not_found" || e.Param != "model" || e.Type != "invalid_request_error" {
		t.Fatalf("unknown model: %d %s", e.StatusCode, e.RawJSON())
	}
	_, err = c.Chat.Completions.New(ctx, chatParams("writer", openai.SystemMessage("no user here")))
	if e := apiErr(err); e.StatusCode != 400 || e.Param != "messages" || !strings.Contains(e.Message, "no user message") {
		t.Fatalf("no user message: %d %s", e.StatusCode, e.RawJSON())
	}
	_, err = c.Chat.Completions.New(ctx, chatParams("broken", openai.UserMessage("hi")))
	if e := apiErr(err); e.StatusCode != 500 || e.Code != "run_failed" || !strings.Contains(e.Message, "broke on purpose") {
		t.Fatalf("a failed run: %d %s", e.StatusCode, e.RawJSON())
	}
	_, err = c.Chat.Completions.New(ctx, chatParams("writer", openai.UserMessage(strings.Repeat("x", 2<<20))))
	if e := apiErr(err); e.StatusCode != 413 || e.Code != "too_large" {
		t.Fatalf("over the cap: %d %s", e.StatusCode, e.RawJSON())
	}
	wrong := openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err = wrong.Chat.Completions.New(ctx, chatParams("writer", openai.UserMessage("hi")))
	if e := apiErr(err); e.StatusCode != 401 {
		t.Fatalf("a wrong key: %d %s", e.StatusCode, e.RawJSON())
	}
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"model": "writer", "messages": [`, 400},
		{`{"model": "writer", "messages": [{"role": "user", "content": 7}]}`, 400},
		{`{"messages": [{"role": "user", "content": "hi"}]}`, 400},
	} {
		code, b, _ := s.do(t, "POST", "/v1/chat/completions", tc.body)
		var e struct {
			Error struct{ Message, Type string }
		}
		if json.Unmarshal(b, &e); code != tc.code || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %s", tc.body, code, b)
		}
	}
	// the key of a profile never shows
	_, b, _ := s.do(t, "POST", "/v1/chat/completions", `{"model": "nope`+chatKey+`", "messages": [{"role": "user", "content": "x"}]}`)
	if strings.Contains(string(b), chatKey) {
		t.Fatalf("the key shows: %s", b)
	}
}

// A run that suspends asks its question as the assistant's message; the
// next message answers it, whether it names the run (metadata or header)
// or sends the conversation again, across a restart too.
func TestChatSuspension(t *testing.T) {
	t.Parallel()
	s := chatServer(t, "")
	c := s.client()
	ctx := context.Background()
	ask := func(msgs ...openai.ChatCompletionMessageParamUnion) (string, string) {
		t.Helper()
		got, err := c.Chat.Completions.New(ctx, chatParams("approve", msgs...))
		if err != nil {
			t.Fatal(err)
		}
		return got.Choices[0].Message.Content, runIDOf(t, got)
	}
	q, id := ask(openai.UserMessage("the release notes"))
	if q != "Publish it?" {
		t.Fatalf("question %q", q)
	}
	// answered by metadata
	p := chatParams("approve", openai.UserMessage("yes"))
	p.Metadata = shared.Metadata{"ensemble_run_id": id}
	got, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if runIDOf(t, got) != id || got.Choices[0].Message.Content != "published, the approver said: yes" {
		t.Fatalf("answer by metadata: %s", got.RawJSON())
	}
	// by the header
	_, id2 := ask(openai.UserMessage("more notes"))
	got, err = c.Chat.Completions.New(ctx, chatParams("approve", openai.UserMessage("no")), option.WithHeader(serve.RunIDHeader, id2))
	if err != nil || runIDOf(t, got) != id2 || got.Choices[0].Message.Content != "published, the approver said: no" {
		t.Fatalf("answer by header: %v %v", err, got)
	}
	// a run that has ended takes no answer: a new run starts
	got, err = c.Chat.Completions.New(ctx, p)
	if err != nil || runIDOf(t, got) == id || got.Choices[0].Message.Content != "Publish it?" {
		t.Fatalf("a run that ended: %v %v", err, got)
	}
	// by the conversation sent again (as Open WebUI does), after a restart
	first := openai.UserMessage("the changelog")
	q, id3 := ask(openai.SystemMessage("you approve releases"), first)
	s.stop()
	s = chatServer(t, s.dir)
	c = s.client()
	stream := c.Chat.Completions.NewStreaming(ctx, chatParams("approve", openai.SystemMessage("you approve releases, today"), first, openai.AssistantMessage(q), openai.UserMessage("ship it")))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != "published, the approver said: ship it" {
		t.Fatalf("answer by the conversation: %v %+v", err, acc.Choices)
	}
	code, b, _ := s.do(t, "GET", "/v1/runs/"+id3, "")
	if code != 200 || !strings.Contains(string(b), "ship it") {
		t.Fatalf("the conversation's run was not the one answered: %s", b)
	}
	_, b, _ = s.do(t, "GET", "/v1/runs?ensemble=approve", "")
	if n := strings.Count(string(b), `"run_id"`); n != 4 {
		t.Fatalf("%d runs of approve, want 4: %s", n, b)
	}
}
