package features

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/cucumber/godog"
)

// fakeModel is an in-process OpenAI-compatible server (Chat Completions):
// LLM agents and simulated users of the scenarios talk to it through the
// real LLM runner. Replies are scripted per system prompt by the steps, and
// every request is recorded for the Then steps.
type fakeModel struct {
	srv *httptest.Server

	mu       sync.Mutex
	rules    []*rule
	requests []fakeRequest
	// down are the models that fail every request, by model name: a
	// profile's outage, whatever the system prompt.
	down map[string]*rule
}

// rule answers the requests whose system prompt contains match: with the
// queued replies in order, or with an HTTP error.
type rule struct {
	match   string
	replies []string
	used    int
	status  int
	message string
}

type fakeRequest struct {
	Model    string
	System   string
	Messages []fakeMessage // all of them, the system message included
}

type fakeMessage struct {
	Role    string
	Content string
}

func newFakeModel() *fakeModel {
	fm := &fakeModel{}
	fm.srv = httptest.NewServer(http.HandlerFunc(fm.serve))
	return fm
}

func (fm *fakeModel) close() { fm.srv.Close() }

// URL is the base URL an ensemble's profile uses: ${FAKE_MODEL_URL}.
func (fm *fakeModel) URL() string { return fm.srv.URL + "/v1" }

// lookupEnv is the only environment the ensembles of the suite see.
func (fm *fakeModel) lookupEnv(k string) (string, bool) {
	if k == "FAKE_MODEL_URL" {
		return fm.URL(), true
	}
	return "", false
}

func (fm *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "fake model: only POST /v1/chat/completions exists, not "+r.Method+" "+r.URL.Path)
		return
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		writeError(w, http.StatusBadRequest, "fake model: bad request body: "+err.Error())
		return
	}
	req := fakeRequest{Model: body.Model}
	for _, m := range body.Messages {
		msg := fakeMessage{Role: m.Role, Content: content(m.Content)}
		if m.Role == "system" || m.Role == "developer" {
			req.System += msg.Content
		}
		req.Messages = append(req.Messages, msg)
	}

	fm.mu.Lock()
	fm.requests = append(fm.requests, req)
	ru := fm.down[body.Model]
	for _, c := range fm.rules {
		if ru != nil {
			break
		}
		if strings.Contains(req.System, c.match) {
			ru = c
			break
		}
	}
	var reply string
	status, msg := 0, ""
	switch {
	case ru == nil:
		status, msg = http.StatusBadRequest, fmt.Sprintf("fake model: no reply is scripted for the system prompt %q", req.System)
	case ru.status != 0:
		status, msg = ru.status, ru.message
	case ru.used >= len(ru.replies):
		status, msg = http.StatusBadRequest, fmt.Sprintf("fake model: the %d replies for system prompts containing %q are used up", len(ru.replies), ru.match)
	default:
		reply = ru.replies[ru.used]
		ru.used++
	}
	fm.mu.Unlock()

	if status != 0 {
		writeError(w, status, msg)
		return
	}
	out, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": body.Model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": reply},
		}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// content reads a message's content: a string, or a list of text parts.
func content(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// rule returns the rule for match, creating it after the others.
func (fm *fakeModel) rule(match string) *rule {
	for _, r := range fm.rules {
		if r.match == match {
			return r
		}
	}
	r := &rule{match: match}
	fm.rules = append(fm.rules, r)
	return r
}

// matching returns the recorded requests whose system prompt contains match.
func (fm *fakeModel) matching(match string) []fakeRequest {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	var out []fakeRequest
	for _, r := range fm.requests {
		if strings.Contains(r.System, match) {
			out = append(out, r)
		}
	}
	return out
}

// register adds the fake model's steps.
func (fm *fakeModel) register(sc *godog.ScenarioContext) {
	sc.Step(`^the model replies "(.*)" to system prompts containing "([^"]*)"$`, func(reply, match string) error {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		r := fm.rule(match)
		r.replies = append(r.replies, strings.ReplaceAll(reply, `\"`, `"`))
		return nil
	})
	sc.Step(`^the model replies to system prompts containing "([^"]*)":$`, func(match string, ds *godog.DocString) error {
		if ds == nil {
			return fmt.Errorf("this step needs the reply in a doc string")
		}
		fm.mu.Lock()
		defer fm.mu.Unlock()
		r := fm.rule(match)
		r.replies = append(r.replies, ds.Content)
		return nil
	})
	sc.Step(`^the model fails with status (\d+) "(.*)" for system prompts containing "([^"]*)"$`, func(status int, msg, match string) error {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		r := fm.rule(match)
		r.status, r.message = status, msg
		return nil
	})
	sc.Step(`^the model "([^"]*)" fails with status (\d+) "(.*)"$`, func(model string, status int, msg string) error {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		if fm.down == nil {
			fm.down = map[string]*rule{}
		}
		fm.down[model] = &rule{status: status, message: msg}
		return nil
	})
	sc.Step(`^the model "([^"]*)" was called (\d+) times?$`, func(model string, want int) error {
		fm.mu.Lock()
		got := 0
		for _, r := range fm.requests {
			if r.Model == model {
				got++
			}
		}
		fm.mu.Unlock()
		if got != want {
			return fmt.Errorf("the model %q was called %d times, want %d", model, got, want)
		}
		return nil
	})
	sc.Step(`^the model was called (\d+) times?$`, func(want int) error {
		fm.mu.Lock()
		got := len(fm.requests)
		fm.mu.Unlock()
		if got != want {
			return fmt.Errorf("the model was called %d times, want %d", got, want)
		}
		return nil
	})
	sc.Step(`^the model was called (\d+) times? for system prompts containing "([^"]*)"$`, func(want int, match string) error {
		if got := len(fm.matching(match)); got != want {
			return fmt.Errorf("the model was called %d times for system prompts containing %q, want %d", got, match, want)
		}
		return nil
	})
	sc.Step(`^model request (\d+) for system prompts containing "([^"]*)" has the roles "([^"]*)"$`, func(n int, match, roles string) error {
		req, err := fm.nth(n, match)
		if err != nil {
			return err
		}
		var got []string
		for _, m := range req.Messages {
			got = append(got, m.Role)
		}
		var want []string
		for _, r := range strings.Split(roles, ",") {
			want = append(want, strings.TrimSpace(r))
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("model request %d for %q has the roles %q, want %q", n, match, strings.Join(got, ", "), strings.Join(want, ", "))
		}
		return nil
	})
	sc.Step(`^model request (\d+) for system prompts containing "([^"]*)" ends with a user message containing "(.*)"$`, func(n int, match, sub string) error {
		req, err := fm.nth(n, match)
		if err != nil {
			return err
		}
		sub = strings.ReplaceAll(sub, `\"`, `"`)
		sub = strings.ReplaceAll(sub, `\n`, "\n")
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "user" || !strings.Contains(last.Content, sub) {
			return fmt.Errorf("model request %d for %q ends with a %s message %q, want a user message containing %q", n, match, last.Role, last.Content, sub)
		}
		return nil
	})
}

// nth is the n-th (1-based) request whose system prompt contains match.
func (fm *fakeModel) nth(n int, match string) (fakeRequest, error) {
	reqs := fm.matching(match)
	if n < 1 || n > len(reqs) {
		return fakeRequest{}, fmt.Errorf("the model got %d requests for system prompts containing %q, so there is no request %d", len(reqs), match, n)
	}
	return reqs[n-1], nil
}
