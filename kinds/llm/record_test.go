package llm

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

func openCassette(t *testing.T, dir string, mode cassette.Mode, tools bool) *cassette.Cassette {
	t.Helper()
	c, err := cassette.Open(cassette.Options{Dir: dir, Mode: mode, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// withRecording is req in a run whose recording is c.
func withRecording(c *cassette.Cassette, req *agent.Request) *agent.Request {
	req.Services.Recording = opaque.Make[agent.Recording](c)
	return req
}

// noKey finds no key: a replay needs none.
func noKey(string) (string, bool) { return "", false }

// TestRecordThenReplayTheWireFormats records a tool loop against servers
// speaking the OpenAI and the Anthropic wire formats, then replays it with
// no server and no key: the same output, messages and usage.
func TestRecordThenReplayTheWireFormats(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			var srv *fakeServer
			var p ensemble.ModelProfile
			if provider == "openai" {
				srv = newFakeServer(t, scripted(
					oaCalls(call{"call_a", "echo", `{"region": "EMEA"}`}),
					oaText("EMEA is up 12%")))
				p = openaiProfile(srv.URL)
			} else {
				srv = newFakeServer(t, scripted(
					anReply("tool_use", 20, 7, anText("Let me look."), anToolUse("toolu_1", "echo", map[string]any{"region": "EMEA"})),
					anReply("end_turn", 30, 5, anText("EMEA is up 12%"))))
				p = anthropicProfile(srv.URL)
			}
			temp := 0.2
			p.Temperature, p.MaxTokens = &temp, 300
			e, a := newEnsemble(t, p, ensemble.Agent{Name: "analyst"}, echoTool)
			dir := t.TempDir()

			live := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, true), request(e, a, "Q3")))
			if live.Err != nil {
				t.Fatal(live.Err)
			}
			if n := len(srv.requests()); n != 2 {
				t.Fatalf("%d requests", n)
			}
			b, err := os.ReadFile(filepath.Join(dir, "analyst.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"provider: " + provider, "temperature: 0.2", "max_tokens: 300",
				"system: You are a test agent.", "name: echo", "tool_results:", "stop_reason: tool_use", "text: EMEA is up 12%"} {
				mustContain(t, string(b), want)
			}
			assertNoKey(t, string(b))

			srv.Close()
			for range 2 {
				var log eventLog
				req := request(e, a, "Q3")
				req.Events = log.sink()
				res := newTestRunner(Options{LookupEnv: noKey}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), req))
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				if res.Output != live.Output || *res.Usage != *live.Usage || string(res.Memory) != string(live.Memory) {
					t.Fatalf("replay: %v %+v %s\nlive: %v %+v %s", res.Output, res.Usage, res.Memory, live.Output, live.Usage, live.Memory)
				}
				if n := len(log.all()); n != 2 { // the tool call's events still happen
					t.Errorf("%d events, want 2", n)
				}
			}
		})
	}
}

// TestRecordedErrorsHoldNoKey records a 401 whose body quotes the key: the
// file holds the error, redacted, and a replay fails the same way.
func TestRecordedErrorsHoldNoKey(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+testKey+`.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	})
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{})
	dir := t.TempDir()
	live := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "the key is "+testKey)))
	if live.Err == nil {
		t.Fatal("no error")
	}
	b, err := os.ReadFile(filepath.Join(dir, "analyst.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(b), "Incorrect API key provided: [REDACTED]")
	mustContain(t, string(b), "status: 401")
	mustContain(t, string(b), "the key is [REDACTED]")
	assertNoKey(t, string(b))
	for _, h := range []string{"Bearer", "Authorization", "x-api-key"} {
		if strings.Contains(string(b), h) {
			t.Errorf("the file names %s:\n%s", h, b)
		}
	}

	// The replay knows the key (the request carries it, redacted alike)
	// and fails as the live run did, without a request.
	srv.Close()
	res := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "the key is "+testKey)))
	if res.Err == nil || res.Err.Error() != live.Err.Error() || res.StopReason != StopError {
		t.Fatalf("replay: %v (%s), live: %v", res.Err, res.StopReason, live.Err)
	}
}

// TestReplayFallsBackAsRecorded: a 503 of the agent's profile is recorded,
// and the replay falls back to the same profile as the live run.
func TestReplayFallsBackAsRecorded(t *testing.T) {
	t.Parallel()
	down := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"down"}}`, 503)
	})
	up := newFakeServer(t, scripted(oaText("from the backup")))
	p := openaiProfile(down.URL)
	p.Fallback = []string{"backup"}
	e, a := newEnsemble(t, p, ensemble.Agent{})
	b := openaiProfile(up.URL)
	b.Name, b.Model = "backup", "gpt-backup"
	e.Models["backup"] = &b
	dir := t.TempDir()
	live := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "go")))
	if live.Err != nil || profileUsed(live) != "backup" {
		t.Fatalf("%v %q", live.Err, profileUsed(live))
	}
	down.Close()
	up.Close()
	res := newTestRunner(Options{LookupEnv: noKey}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "go")))
	if res.Err != nil || res.Output != "from the backup" || profileUsed(res) != "backup" {
		t.Fatalf("%v %v %q", res.Err, res.Output, profileUsed(res))
	}
}

// TestReplayStreams: a replayed reply reaches --stream's text deltas.
func TestReplayStreams(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("hello there")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{})
	dir := t.TempDir()
	if res := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "hi"))); res.Err != nil {
		t.Fatal(res.Err)
	}
	var log eventLog
	req := request(e, a, "hi")
	req.Events = log.sink()
	res := newTestRunner(Options{Stream: true, LookupEnv: noKey}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), req))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	evs := log.all()
	if len(evs) != 1 || evs[0].Message != "hello there" {
		t.Fatalf("events %+v", evs)
	}
}

// TestReplayMiss: a request the recording lacks fails before reaching any
// model, naming the part that differs.
func TestReplayMiss(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("ok")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{})
	dir := t.TempDir()
	if res := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "Sales for Q3\nregion EMEA"))); res.Err != nil {
		t.Fatal(res.Err)
	}
	res := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "Sales for Q3\nregion APAC")))
	if res.Err == nil {
		t.Fatal("no miss")
	}
	want := "message 1 (user) differs from the closest recorded request's (exchange 1):\n  Input:\n  Sales for Q3\n- region EMEA\n+ region APAC\n"
	mustContain(t, res.Err.Error(), want)
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d requests: the miss reached the server", n)
	}
	// An agent with no file.
	other := request(e, a, "x")
	other.Path = "loop/critic"
	res = newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), other))
	mustContain(t, res.Err.Error(), `model request 1 of agent "loop/critic" is not recorded: there is no `+filepath.Join(dir, "loop.critic.yaml"))
}

// TestRecordMissingNeedsAKeyOnlyForAMiss: --record-missing serves what it
// has without a key, and records what it lacks.
func TestRecordMissingNeedsAKeyOnlyForAMiss(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("first"), oaText("second")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{})
	dir := t.TempDir()
	if res := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "one"))); res.Err != nil {
		t.Fatal(res.Err)
	}
	res := newTestRunner(Options{LookupEnv: noKey}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.RecordMissing, false), request(e, a, "one")))
	if res.Err != nil || res.Output != "first" {
		t.Fatalf("%v %v", res.Output, res.Err)
	}
	res = newTestRunner(Options{LookupEnv: noKey}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.RecordMissing, false), request(e, a, "two")))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "TEST_OPENAI_KEY is not set") {
		t.Fatalf("a miss without a key: %v", res.Err)
	}
	res = newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.RecordMissing, false), request(e, a, "two")))
	if res.Err != nil || res.Output != "second" {
		t.Fatalf("%v %v", res.Output, res.Err)
	}
	for _, in := range []string{"one", "two"} {
		res = newTestRunner(Options{LookupEnv: noKey}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, in)))
		if res.Err != nil {
			t.Fatalf("%s: %v", in, res.Err)
		}
	}
	if n := len(srv.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

// TestReplayWithOutputSchema: a schema sent as Anthropic's output tool,
// and a repair turn, replay from the recording.
func TestReplayWithOutputSchema(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		anReply("tool_use", 10, 5, anToolUse("toolu_1", "ensemble_output", map[string]any{"approved": "yes"})),
		anReply("tool_use", 12, 5, anToolUse("toolu_2", "ensemble_output", map[string]any{"approved": true}))))
	e, a := newEnsemble(t, anthropicProfile(srv.URL), schemaAgent(t, approvalDoc(), 1))
	dir := t.TempDir()
	live := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "approve?")))
	if live.Err != nil {
		t.Fatal(live.Err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "analyst.yaml"))
	mustContain(t, string(b), "output:\n        name: analyst")
	srv.Close()
	res := newTestRunner(Options{LookupEnv: noKey}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "approve?")))
	if res.Err != nil || toJSON(res.Output) != `{"approved":true}` || string(res.Memory) != string(live.Memory) {
		t.Fatalf("%v %v", res.Output, res.Err)
	}
}

// TestReplayedReplyIsCapped replays a recorded reply larger than the cap of
// a live reply: the execution fails as a live one would, naming the
// recording file and the agent, and the text is not passed on.
func TestReplayedReplyIsCapped(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	huge := strings.Repeat("a", limit+1024)
	srv := newFakeServer(t, scripted(oaText(huge)))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Name: "analyst"})
	dir := t.TempDir()
	live := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, false), request(e, a, "Q3")))
	if live.Err != nil {
		t.Fatal(live.Err)
	}
	srv.Close()
	req := request(e, a, "Q3")
	res := newTestRunner(Options{LookupEnv: noKey, MaxReply: limit}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), req))
	if res.Err == nil {
		t.Fatal("no error")
	}
	msg := res.Err.Error()
	for _, want := range []string{filepath.Join(dir, "analyst.yaml"), `agent "analyst"`, "model reply exceeds 65536 bytes"} {
		mustContain(t, msg, want)
	}

	// At the cap, it is served.
	res = newTestRunner(Options{LookupEnv: noKey, MaxReply: int64(len(huge))}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "Q3")))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
}

// TestReplayedToolResultIsCapped replays a recorded tool result larger than
// the cap of a live one: the model is sent the error a live result over the
// cap gets, naming the recording file, not the result.
func TestReplayedToolResultIsCapped(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaCalls(call{"call_a", "echo", `{"region": "EMEA"}`}),
		oaText("done")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Name: "analyst"}, echoTool)
	dir := t.TempDir()
	live := newTestRunner(Options{}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Record, true), request(e, a, "Q3")))
	if live.Err != nil {
		t.Fatal(live.Err)
	}
	srv.Close()
	res := newTestRunner(Options{LookupEnv: noKey, MaxToolOutput: 4}).Run(t.Context(), withRecording(openCassette(t, dir, cassette.Replay, false), request(e, a, "Q3")))
	if res.Err == nil {
		t.Fatal("no error")
	}
	// The second request differs from the recorded one: it carries the
	// error instead of the result.
	mustContain(t, res.Err.Error(), `is more than 4 bytes`)
	mustContain(t, res.Err.Error(), filepath.Join(dir, "analyst.yaml"))
}
