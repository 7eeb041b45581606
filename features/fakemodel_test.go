package features

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// fakeModel is an in-process OpenAI-compatible server (Chat Completions):
// LLM agents and simulated users of the scenarios talk to it through the
// real LLM runner. Replies are scripted per system prompt by the steps, and
// every request is recorded for the Then steps.
type fakeModel struct {
	srv *fakemodel.Server

	mu    sync.Mutex
	rules []*rule
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

type fakeRequest = fakemodel.Request

func newFakeModel(t testing.TB) *fakeModel {
	fm := &fakeModel{}
	fm.srv = fakemodel.New(t, fm.reply)
	return fm
}

func (fm *fakeModel) close() { fm.srv.Close() }

// URL is the base URL an ensemble's profile uses: ${FAKE_MODEL_URL}.
func (fm *fakeModel) URL() string { return fm.srv.URL() }

// lookupEnv is the only environment the ensembles of the suite see.
func (fm *fakeModel) lookupEnv(k string) (string, bool) {
	if k == "FAKE_MODEL_URL" {
		return fm.URL(), true
	}
	return "", false
}

// requests are the chat completions requests received so far.
func (fm *fakeModel) requests() []fakeRequest {
	var out []fakeRequest
	for _, r := range fm.srv.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/chat/completions") {
			out = append(out, r)
		}
	}
	return out
}

func (fm *fakeModel) reply(req fakemodel.Request) fakemodel.Reply {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.Path, "/chat/completions") {
		return fakemodel.Reply{Status: http.StatusNotFound, Error: "fake model: only POST /v1/chat/completions exists, not " + req.Method + " " + req.Path}
	}
	if req.Body == nil {
		return fakemodel.Reply{Status: http.StatusBadRequest, Error: "fake model: the request body is not a JSON object"}
	}
	fm.mu.Lock()
	defer fm.mu.Unlock()
	ru := fm.down[req.Model]
	for _, c := range fm.rules {
		if ru != nil {
			break
		}
		if strings.Contains(req.System, c.match) {
			ru = c
			break
		}
	}
	switch {
	case ru == nil:
		return fakemodel.Reply{Status: http.StatusBadRequest, Error: fmt.Sprintf("fake model: no reply is scripted for the system prompt %q", req.System)}
	case ru.status != 0:
		return fakemodel.Reply{Status: ru.status, Error: ru.message}
	case ru.used >= len(ru.replies):
		return fakemodel.Reply{Status: http.StatusBadRequest, Error: fmt.Sprintf("fake model: the %d replies for system prompts containing %q are used up", len(ru.replies), ru.match)}
	}
	ru.used++
	return fakemodel.Reply{Text: ru.replies[ru.used-1]}
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
	var out []fakeRequest
	for _, r := range fm.requests() {
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
		got := 0
		for _, r := range fm.requests() {
			if r.Model == model {
				got++
			}
		}
		if got != want {
			return fmt.Errorf("the model %q was called %d times, want %d", model, got, want)
		}
		return nil
	})
	sc.Step(`^the model was called (\d+) times?$`, func(want int) error {
		got := len(fm.requests())
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
