package llm

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/cassette"
)

// testOptions are the options of the profiles below: a string, a mapping
// and a boolean, as reasoning_effort, metadata and think are.
func testOptions() map[string]any {
	return map[string]any{"reasoning_effort": "high", "metadata": map[string]any{"user_id": "u1"}, "think": false}
}

// checkOptions asserts that the request body carries the options at its
// top level, each once, next to the fields the run sets.
func checkOptions(t *testing.T, r recorded, options map[string]any) {
	t.Helper()
	for k, v := range options {
		if got, want := jsonOf(r.Body[k]), jsonOf(v); got != want {
			t.Errorf("%s is %s, want %s in %s", k, got, want, r.Raw)
		}
		if n := strings.Count(r.Raw, `"`+k+`":`); n != 1 {
			t.Errorf("%s appears %d times in %s", k, n, r.Raw)
		}
	}
	if r.Body["model"] == nil || r.Body["messages"] == nil {
		t.Errorf("the run's own fields are missing: %s", r.Raw)
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Every provider sends the options at the top level of its request body,
// streamed or not: Chat Completions for openai and for ollama (its /v1
// endpoint), Messages for anthropic.
func TestProfileOptionsAreSent(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{ProviderOpenAI, ProviderOllama, ProviderAnthropic} {
		for _, stream := range []bool{false, true} {
			name := provider
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				reply := oaText("ok")
				if provider == ProviderAnthropic {
					reply = anReply("end_turn", 1, 1, anText("ok"))
				}
				// A JSON body answers a streamed request too (see
				// TestStreaming for the events): the request is what counts.
				srv := newFakeServer(t, scripted(reply))
				var p ensemble.ModelProfile
				switch provider {
				case ProviderOpenAI:
					p = openaiProfile(srv.URL)
				case ProviderAnthropic:
					p = anthropicProfile(srv.URL)
				case ProviderOllama:
					p = ensemble.ModelProfile{Provider: provider, Model: "qwen3", BaseURL: srv.URL}
				}
				temp := 0.5
				p.Temperature, p.MaxTokens, p.Options = &temp, 100, testOptions()
				e, a := newEnsemble(t, p, ensemble.Agent{})
				var log eventLog
				req := request(e, a, "go")
				req.Events = log.sink() // a run streams when someone listens
				res := newTestRunner(Options{Stream: stream}).Run(context.Background(), req)
				if res.Err != nil || res.Output != "ok" {
					t.Fatalf("output %v, error %v", res.Output, res.Err)
				}
				r := srv.requests()[0]
				checkOptions(t, r, testOptions())
				if r.Body["temperature"] != 0.5 || (r.Body["stream"] == true) != stream {
					t.Errorf("temperature or stream lost: %s", r.Raw)
				}
				if provider == ProviderOllama && r.Path != "/v1/chat/completions" {
					t.Errorf("ollama is spoken to at %s", r.Path)
				}
			})
		}
	}
}

// A fallback sends its own options, not those of the profile it stands in
// for.
func TestFallbackSendsItsOwnOptions(t *testing.T) {
	t.Parallel()
	main := newFakeServer(t, failing(503))
	backup := newFakeServer(t, scripted(anReply("end_turn", 1, 1, anText("from the backup"))))
	bp := anthropicProfile(backup.URL)
	bp.Options = map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024.0}}
	e, a := withFallback(t, main.URL, bp)
	e.Models["main"].Options = testOptions()
	for _, stream := range []bool{false, true} {
		var log eventLog
		req := request(e, a, "hi")
		req.Events = log.sink()
		res := newTestRunner(Options{Stream: stream, MaxRetryDelay: time.Millisecond}).Run(context.Background(), req)
		if res.Err != nil || res.Output != "from the backup" {
			t.Fatalf("stream %v: output %v, error %v", stream, res.Output, res.Err)
		}
	}
	for _, r := range main.requests() {
		checkOptions(t, r, testOptions())
	}
	for i, r := range backup.requests() {
		checkOptions(t, r, bp.Options)
		if (r.Body["stream"] == true) != (i == 1) {
			t.Errorf("request %d: stream %v", i, r.Body["stream"])
		}
		if _, ok := r.Body["reasoning_effort"]; ok {
			t.Errorf("the main profile's options reached the fallback: %s", r.Raw)
		}
	}
	if n := len(backup.requests()); n != 2 {
		t.Errorf("backup got %d requests, want 2", n)
	}
}

// A profile built in Go is held to the loader's rules: no field the run
// sets, JSON values only; nothing is sent.
func TestBadOptionsAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		options map[string]any
		want    string
	}{
		{map[string]any{"temperature": 1}, `model profile "test": options.temperature is set by the run: use the profile's temperature`},
		{map[string]any{"stream": false}, `options.stream is set by the run`},
		{map[string]any{"x": math.NaN()}, `model profile "test": options.x is not JSON`},
	} {
		srv := newFakeServer(t, scripted(oaText("ok")))
		p := openaiProfile(srv.URL)
		p.Options = tc.options
		e, a := newEnsemble(t, p, ensemble.Agent{})
		res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
		if res.Err == nil || !strings.Contains(res.Err.Error(), tc.want) {
			t.Errorf("options %v: error %v, want %q", tc.options, res.Err, tc.want)
		}
		if n := len(srv.requests()); n != 0 {
			t.Errorf("options %v: %d requests sent", tc.options, n)
		}
	}
}

// Every field of a request body is reserved: an option can never repeat
// one (endpoint.body appends the options without looking).
func TestRequestFieldsAreReserved(t *testing.T) {
	t.Parallel()
	for _, typ := range []reflect.Type{reflect.TypeFor[oaRequest](), reflect.TypeFor[anRequest]()} {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if _, reserved := ensemble.ReservedOption(name); !reserved {
				t.Errorf("%s.%s (%s) is not a reserved option", typ.Name(), f.Name, name)
			}
		}
	}
}

// A recording keeps the options, redacted of the keys, and matches
// requests by them: other options are a miss.
func TestRecordedOptions(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("ok")))
	p := openaiProfile(srv.URL)
	p.Options = map[string]any{"reasoning_effort": "high", "metadata": map[string]any{"note": "key " + testKey}, "seed": 7}
	e, a := newEnsemble(t, p, ensemble.Agent{Name: "analyst"})
	dir := t.TempDir()
	live := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "go")))
	if live.Err != nil {
		t.Fatal(live.Err)
	}
	checkOptions(t, srv.requests()[0], p.Options) // the request itself is sent as written
	b, err := os.ReadFile(filepath.Join(dir, "analyst.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"options:", "reasoning_effort: high", "note: key [REDACTED]", "seed: 7"} {
		mustContain(t, string(b), want)
	}
	assertNoKey(t, string(b))
	if p.Options["metadata"].(map[string]any)["note"] != "key "+testKey {
		t.Errorf("recording changed the profile's options: %v", p.Options)
	}

	srv.Close()
	res := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "go")))
	if res.Err != nil || res.Output != "ok" {
		t.Fatalf("replay: %v, %v", res.Output, res.Err)
	}
	e.Models["test"].Options = map[string]any{"reasoning_effort": "low"}
	if res := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "go"))); res.Err == nil {
		t.Error("a request with other options was replayed")
	}
}
