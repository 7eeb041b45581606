package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// failing answers every request with status and an OpenAI-shaped error.
func failing(status int) func(int, recorded, http.ResponseWriter, *http.Request) {
	return func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error": {"message": "the server is down", "type": "server_error"}}`)
	}
}

// withFallback is an ensemble whose agent's profile "main" (at mainURL)
// falls back to "backup" (at backupURL, provider openai or anthropic).
func withFallback(t *testing.T, mainURL string, backup ensemble.ModelProfile, tools ...*ensemble.Tool) (*ensemble.Ensemble, *ensemble.Agent) {
	t.Helper()
	p := openaiProfile(mainURL)
	p.Name = "main"
	p.Fallback = []string{"backup"}
	e, a := newEnsemble(t, p, ensemble.Agent{}, tools...)
	backup.Name = "backup"
	e.Models["backup"] = &backup
	return e, a
}

func TestFallbackAfter503(t *testing.T) {
	t.Parallel()
	main := newFakeServer(t, failing(503))
	backup := newFakeServer(t, scripted(oaCalls(call{"c1", "echo", `{"region":"EMEA"}`}), oaText("from the backup")))
	bp := openaiProfile(backup.URL)
	bp.Pricing = &ensemble.Pricing{InputPerMillion: 1e6, OutputPerMillion: 2e6} // 1 per input token, 2 per output token
	e, a := withFallback(t, main.URL, bp, echoTool)
	res := newTestRunner(Options{MaxRetries: 2, MaxRetryDelay: time.Millisecond}).Run(context.Background(), request(e, a, "hi"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Output != "from the backup" || profileUsed(res) != "backup" {
		t.Fatalf("output %v, profile used %q", res.Output, profileUsed(res))
	}
	// The retries are spent on the main profile first (1 + 2), then
	// the conversation goes on at the backup: its tool loop never goes
	// back to the main profile.
	if n := len(main.requests()); n != 3 {
		t.Fatalf("main got %d requests, want 3", n)
	}
	got := backup.requests()
	if len(got) != 2 {
		t.Fatalf("backup got %d requests, want 2", len(got))
	}
	// The backup gets the same messages the main profile was sent.
	if first, sent := messages(t, got[0]), messages(t, main.requests()[0]); len(first) != len(sent) || first[1]["content"] != sent[1]["content"] {
		t.Fatalf("backup got %v, main got %v", first, sent)
	}
	want := state.Usage{Requests: 2, InputTokens: 30, OutputTokens: 12, Cost: 30 + 24}
	if *res.Usage != want {
		t.Fatalf("usage %+v, want %+v", *res.Usage, want)
	}
}

func TestFallbackToAnthropic(t *testing.T) {
	t.Parallel()
	main := newFakeServer(t, failing(500))
	backup := newFakeServer(t, scripted(anReply("end_turn", 3, 4, anText("claude says hi"))))
	e, a := withFallback(t, main.URL, anthropicProfile(backup.URL))
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "hi"))
	if res.Err != nil || res.Output != "claude says hi" || profileUsed(res) != "backup" {
		t.Fatalf("err %v, output %v, used %q", res.Err, res.Output, profileUsed(res))
	}
}

func TestNoFallbackOn4xx(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 404, 429} {
		main := newFakeServer(t, failing(status))
		backup := newFakeServer(t, scripted(oaText("never")))
		e, a := withFallback(t, main.URL, openaiProfile(backup.URL))
		res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "hi"))
		if res.Err == nil || len(backup.requests()) != 0 || profileUsed(res) != "" {
			t.Fatalf("%d: err %v, backup got %d requests", status, res.Err, len(backup.requests()))
		}
	}
}

func TestFallbackAfterConnectionError(t *testing.T) {
	t.Parallel()
	dead := newFakeServer(t, scripted(oaText("unused")))
	dead.Close() // connection refused from now on
	backup := newFakeServer(t, scripted(oaText("up")))
	e, a := withFallback(t, dead.URL, openaiProfile(backup.URL))
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "hi"))
	if res.Err != nil || res.Output != "up" || profileUsed(res) != "backup" {
		t.Fatalf("err %v, output %v, used %q", res.Err, res.Output, profileUsed(res))
	}
}

func TestEveryFallbackFails(t *testing.T) {
	t.Parallel()
	main := newFakeServer(t, failing(502))
	backup := newFakeServer(t, failing(503))
	e, a := withFallback(t, main.URL, openaiProfile(backup.URL))
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "hi"))
	if res.Err == nil || res.StopReason != StopError {
		t.Fatalf("err %v, stop %q", res.Err, res.StopReason)
	}
	mustContain(t, res.Err.Error(), "502")
	mustContain(t, res.Err.Error(), `fallback "backup"`)
	mustContain(t, res.Err.Error(), "503")
}

// countingBudget allows max requests, then refuses.
type countingBudget struct {
	mu       sync.Mutex
	max      int
	reserved int
	used     state.Usage
}

var errSpent = errors.New("budget exceeded: test")

func (b *countingBudget) Reserve() (func(*state.Usage), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reserved >= b.max {
		return nil, errSpent
	}
	b.reserved++
	return func(u *state.Usage) { b.mu.Lock(); b.used.Add(u); b.mu.Unlock() }, nil
}

func TestBudgetRefusesInsideToolLoop(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaCalls(call{"c1", "echo", `{"region":"A"}`}), oaCalls(call{"c2", "echo", `{"region":"B"}`}), oaText("done")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool)
	req := request(e, a, "hi")
	b := &countingBudget{max: 2}
	req.Budget = b
	res := newTestRunner(Options{}).Run(context.Background(), req)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "budget exceeded") {
		t.Fatalf("err %v", res.Err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Fatalf("server got %d requests, want 2: the third is refused before it is sent", n)
	}
	if res.Usage.Requests != 2 || b.used.Requests != 2 || b.used.InputTokens != 40 {
		t.Fatalf("usage %+v, budget saw %+v", *res.Usage, b.used)
	}
	// The conversation keeps the tool results of the requests made.
	if msgs := storedMessages(t, res); msgs[len(msgs)-1].Role != RoleTool {
		t.Fatalf("last stored message %+v", msgs[len(msgs)-1])
	}
}

func TestFallbackAfterATimeout(t *testing.T) {
	t.Parallel()
	// The main server never answers: the profile's timeout_seconds ends
	// the request, and the backup answers.
	stuck := newFakeServer(t, func(_ int, _ recorded, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	backup := newFakeServer(t, scripted(oaText("in time")))
	e, a := withFallback(t, stuck.URL, openaiProfile(backup.URL))
	e.Models["main"].Timeout = 50 * time.Millisecond
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "hi"))
	if res.Err != nil || res.Output != "in time" || profileUsed(res) != "backup" {
		t.Fatalf("err %v, output %v, used %q", res.Err, res.Output, profileUsed(res))
	}
}

// profileUsed is the fallback profile that answered res, if any.
func profileUsed(res *agent.Result) string {
	var p string
	_, _ = res.Details.Decode(ProfileUsedDetail, &p)
	return p
}
