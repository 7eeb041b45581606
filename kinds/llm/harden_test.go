package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
)

// otherKey is the key of a second profile of the same ensemble, which the
// running agent does not use.
const otherKey = "sk-other-9876543210fedcba"

// withOtherProfile adds a profile whose key is otherKey to e.
func withOtherProfile(e *ensemble.Ensemble) {
	e.Models["other"] = &ensemble.ModelProfile{Name: "other", Provider: "openai", Model: "m", APIKeyEnv: "TEST_OTHER_KEY"}
}

func twoKeysEnv(name string) (string, bool) {
	if name == "TEST_OTHER_KEY" {
		return otherKey, true
	}
	return testEnv(name)
}

// assertNoSecret fails when any part of either key (8 bytes or more) shows.
func assertNoSecret(t *testing.T, things ...any) {
	t.Helper()
	for _, x := range things {
		b, _ := json.Marshal(x)
		s := fmt.Sprintf("%v %s", x, b)
		for _, k := range []string{testKey, otherKey} {
			for i := 0; i+8 <= len(k); i++ {
				if strings.Contains(s, k[i:i+8]) {
					t.Fatalf("a key leaked (%q): %.300s", k[i:i+8], s)
				}
			}
		}
	}
}

func profileFor(provider, url string) ensemble.ModelProfile {
	if provider == "anthropic" {
		return anthropicProfile(url)
	}
	return openaiProfile(url)
}

// An error body is redacted of every configured key before it is cut, so a
// key straddling the cut leaks no prefix, and the message is cut at a
// character boundary.
func TestErrorRedactedBeforeCut(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		for _, tc := range []struct {
			name string
			body string
		}{
			// Plain text, as proxies answer: the key of this profile
			// straddles the old cut at 2,000 characters.
			{"straddling", strings.Repeat("x", 1990) + testKey + " trailing"},
			// A key of another profile, and multi-byte text at the cut.
			{"other key", otherKey + " " + strings.Repeat("é", 1500)},
		} {
			t.Run(provider+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "text/plain")
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = io.WriteString(w, tc.body)
				})
				e, a := newEnsemble(t, profileFor(provider, srv.URL), ensemble.Agent{})
				withOtherProfile(e)
				res := newTestRunner(Options{LookupEnv: twoKeysEnv}).Run(context.Background(), request(e, a, "go"))
				if res.Err == nil {
					t.Fatal("no error")
				}
				msg := res.Err.Error()
				mustContain(t, msg, "401 Unauthorized")
				assertNoSecret(t, msg, res)
				if tc.name == "other key" && !strings.Contains(msg, redacted) {
					t.Errorf("no %s in %.200s", redacted, msg)
				}
				if len(msg) > maxErrorText+len("…") || !strings.HasSuffix(msg, "…") {
					t.Errorf("message of %d bytes not cut: …%s", len(msg), msg[max(0, len(msg)-40):])
				}
				if !utf8.ValidString(msg) {
					t.Errorf("cut inside a character: …%q", msg[max(0, len(msg)-10):])
				}
			})
		}
	}
}

// A reply that echoes a key (this profile's or another's) is stored
// redacted: output, conversation, input data, tool-call arguments, events.
func TestReplyEchoingKeysIsRedacted(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		oaCalls(call{"c1", "echo", `{"region":"` + otherKey + `"}`}),
		oaText("the keys are "+testKey+" and "+otherKey),
	))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{}, echoTool)
	withOtherProfile(e)
	var log eventLog
	req := request(e, a, "go")
	req.Events = log.sink()
	res := newTestRunner(Options{LookupEnv: twoKeysEnv}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Output != "the keys are "+redacted+" and "+redacted {
		t.Errorf("output %#v", res.Output)
	}
	assertNoSecret(t, res.Output, string(res.Memory), res.InputData, log.all())
	// The tool got the redacted arguments.
	mustContain(t, messages(t, srv.requests()[1])[3]["content"].(string), `echo:{"region":"`+redacted+`"}`)
}

// Streamed text never shows a key, even one split across deltas, and all of
// the text arrives.
func TestStreamRedaction(t *testing.T) {
	t.Parallel()
	r := newTestRunner(Options{LookupEnv: twoKeysEnv})
	e, _ := newEnsemble(t, openaiProfile("http://127.0.0.1:1"), ensemble.Agent{})
	withOtherProfile(e)
	sec := r.secrets(e)
	text := "start " + testKey + " middle é " + otherKey + " end ünïcode"
	for _, size := range []int{1, 2, 3, 5, 7, 24, 100} {
		var got []string
		emit, flush := sec.stream(func(s string) { got = append(got, s) })
		for i := 0; i < len(text); i += size {
			emit(text[i:min(i+size, len(text))])
		}
		flush()
		all := strings.Join(got, "")
		if want := "start " + redacted + " middle é " + redacted + " end ünïcode"; all != want {
			t.Errorf("deltas of %d bytes: got %q", size, all)
		}
		for _, d := range got {
			if !utf8.ValidString(d) {
				t.Errorf("deltas of %d bytes: a delta cuts a character: %q", size, d)
			}
		}
		assertNoSecret(t, got)
	}
	// Without keys, deltas pass through as they are.
	var got []string
	emit, flush := (&secrets{}).stream(func(s string) { got = append(got, s) })
	emit("a")
	emit("b")
	flush()
	if strings.Join(got, "|") != "a|b" {
		t.Errorf("got %q", got)
	}
}

// A reply over the cap (10 MiB; 64 KiB here, so that the test streams
// little) fails the execution, plain or streamed, and is not retried.
func TestReplyTooLarge(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	huge := strings.Repeat("a", limit+1024)
	for _, provider := range []string{"openai", "anthropic"} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", provider, stream), func(t *testing.T) {
				t.Parallel()
				srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
					switch {
					case !stream && provider == "openai":
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, oaText(huge))
					case !stream:
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, anReply("end_turn", 1, 1, anText(huge)))
					case provider == "openai":
						w.Header().Set("Content-Type", "text/event-stream")
						chunk := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", 4096) + `"},"finish_reason":null}]}` + "\n\n"
						for range limit/4096 + 2 {
							if _, err := io.WriteString(w, chunk); err != nil {
								return
							}
						}
					default:
						w.Header().Set("Content-Type", "text/event-stream")
						_, _ = io.WriteString(w, "event: message_start\ndata: "+`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`+"\n\n")
						_, _ = io.WriteString(w, "event: content_block_start\ndata: "+`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n")
						delta := "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("a", 4096) + `"}}` + "\n\n"
						for range limit/4096 + 2 {
							if _, err := io.WriteString(w, delta); err != nil {
								return
							}
						}
					}
				})
				e, a := newEnsemble(t, profileFor(provider, srv.URL), ensemble.Agent{})
				req := request(e, a, "go")
				var log eventLog
				req.Events = log.sink()
				res := newTestRunner(Options{MaxRetries: 2, Stream: stream, MaxReply: limit}).Run(context.Background(), req)
				if res.Err == nil {
					t.Fatalf("no error; output of %d bytes", len(fmt.Sprint(res.Output)))
				}
				mustContain(t, res.Err.Error(), "model reply exceeds 65536 bytes")
				if res.StopReason != StopError {
					t.Errorf("stop reason %q", res.StopReason)
				}
				if n := len(srv.requests()); n != 1 {
					t.Errorf("%d requests: a reply too large was retried", n)
				}
			})
		}
	}
}

// A reply of exactly the limit is accepted.
func TestCappedBodyExactLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size    int64
		wantErr bool
	}{{MaxReply - 1, false}, {MaxReply, false}, {MaxReply + 1, true}} {
		b := &cappedBody{body: io.NopCloser(strings.NewReader(strings.Repeat("x", int(tc.size)))), left: MaxReply, limit: MaxReply}
		n, err := io.Copy(io.Discard, b)
		if (err != nil) != tc.wantErr {
			t.Errorf("%d bytes: err %v", tc.size, err)
		}
		if err != nil && err.Error() != "model reply exceeds 10 MiB" {
			t.Errorf("%d bytes: error %q", tc.size, err)
		}
		if tc.wantErr && n != MaxReply {
			t.Errorf("%d bytes: read %d", tc.size, n)
		}
	}
}

// The query of base_url (Azure's api-version) is kept on every request.
func TestBaseURLQueryKept(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider, path string
	}{
		{"openai", "/openai/deployments/gpt/chat/completions"},
		{"anthropic", "/v1/messages"},
		{"ollama", "/v1/chat/completions"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case tc.provider == "anthropic" && n == 0:
					_, _ = io.WriteString(w, anReply("tool_use", 1, 1, anToolUse("t1", "echo", map[string]any{"region": "x"})))
				case tc.provider == "anthropic":
					_, _ = io.WriteString(w, anReply("end_turn", 1, 1, anText("done")))
				case n == 0:
					_, _ = io.WriteString(w, oaCalls(call{"c1", "echo", `{"region":"x"}`}))
				default:
					_, _ = io.WriteString(w, oaText("done"))
				}
			})
			var p ensemble.ModelProfile
			switch tc.provider {
			case "openai":
				p = openaiProfile(srv.URL + "/openai/deployments/gpt?api-version=2024-01-01")
			case "anthropic":
				p = anthropicProfile(srv.URL + "/v1?api-version=2024-01-01")
			default:
				p = ensemble.ModelProfile{Provider: "ollama", Model: "llama3", BaseURL: srv.URL + "?api-version=2024-01-01"}
			}
			e, a := newEnsemble(t, p, ensemble.Agent{}, echoTool)
			res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				if r.Path != tc.path || r.Query != "api-version=2024-01-01" {
					t.Errorf("request %d: path %q query %q", i+1, r.Path, r.Query)
				}
			}
		})
	}
}

// Token counts are never negative and never overflow.
func TestUsageClamped(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			var replies []string
			if provider == "openai" {
				replies = []string{
					strings.Replace(oaCalls(call{"c1", "echo", `{"region":"x"}`}), `"completion_tokens":7`, `"completion_tokens":1e30`, 1),
					oaReply("stop", "done", -5, math.MaxInt64),
				}
			} else {
				replies = []string{
					strings.Replace(anReply("tool_use", -5, 0, anToolUse("t1", "echo", map[string]any{"region": "x"})), `"output_tokens":0`, `"output_tokens":1e30,"cache_read_input_tokens":9223372036854775807,"cache_creation_input_tokens":9223372036854775807`, 1),
					anReply("end_turn", 3, math.MaxInt64, anText("done")),
				}
			}
			srv := newFakeServer(t, scripted(replies...))
			e, a := newEnsemble(t, profileFor(provider, srv.URL), ensemble.Agent{}, echoTool)
			res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			u := res.Usage
			if u.Requests != 2 || u.InputTokens < 0 || u.OutputTokens != math.MaxInt {
				t.Errorf("usage %+v", u)
			}
			if provider == "anthropic" && u.InputTokens != math.MaxInt {
				t.Errorf("input tokens %d: the cache counts did not saturate", u.InputTokens)
			}
		})
	}
}

// The calls of one reply run through a pool of tool_parallel (default 8),
// at most 128 of them; the others get an error result the model sees, and
// results keep the order of the calls.
func TestToolCallsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		calls, parallel   int
		wantRun, wantPool int
	}{
		{"default pool, too many calls", 300, 0, MaxToolCallsPerReply, ensemble.DefaultToolParallel},
		{"tool_parallel 3", 20, 3, 20, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls []call
			for i := range tc.calls {
				calls = append(calls, call{fmt.Sprintf("c%d", i), "probe", fmt.Sprintf(`{"n":%d}`, i)})
			}
			srv := newFakeServer(t, scripted(oaCalls(calls...), oaText("done")))
			probe := &ensemble.Tool{Name: "probe", Description: "Concurrency probe", Script: "concurrency.sh"}
			e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{Spec: &Spec{ToolParallel: tc.parallel}}, probe)
			dir := t.TempDir()
			var log eventLog
			req := request(e, a, "go")
			req.Events = log.sink()
			res := newTestRunner(Options{Environ: func() []string {
				return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "PROBE_DIR=" + dir}
			}}).Run(context.Background(), req)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			stored := storedMessages(t, res)
			results := stored[2 : 2+tc.calls]
			for i, m := range results {
				if m.Role != RoleTool || m.ToolCallID != calls[i].id {
					t.Fatalf("result %d: %+v", i, m)
				}
				switch {
				case i < tc.wantRun && (m.IsError || m.Content != calls[i].args):
					t.Errorf("result %d: %+v", i, m)
				case i >= tc.wantRun && (!m.IsError || !strings.Contains(m.Content, "too many tool calls in one reply; at most 128 run")):
					t.Errorf("result %d: %+v", i, m)
				}
			}
			started := 0
			for _, ev := range log.all() {
				if ev.Type == events.ToolCallStarted {
					started++
				}
			}
			seen, err := os.ReadDir(filepath.Join(dir, "seen"))
			if err != nil {
				t.Fatal(err)
			}
			if started != tc.wantRun || len(seen) == 0 {
				t.Errorf("%d calls started, %d recorded; want %d", started, len(seen), tc.wantRun)
			}
			most := 0
			for _, f := range seen {
				b, err := os.ReadFile(filepath.Join(dir, "seen", f.Name()))
				if err != nil {
					t.Fatal(err)
				}
				n, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil {
					t.Fatal(err)
				}
				most = max(most, n)
			}
			if most > tc.wantPool {
				t.Errorf("%d calls ran at once, want at most %d", most, tc.wantPool)
			}
		})
	}
}

// An MCP server's tool schema past the file's bounds is refused before it
// is compiled (a schema of 50,000 properties took the compiler 24 s).
func TestMCPToolSchemaBounded(t *testing.T) {
	t.Parallel()
	props := map[string]any{}
	for i := range 50000 {
		props[fmt.Sprint("p", i)] = map[string]any{"type": "string"}
	}
	m := &agent.Tool{Name: "big", ModelName: "srv__big", InputSchema: map[string]any{"type": "object", "properties": props}}
	_, err := (&Runner{}).compiledTool(nil, m)
	if err == nil || !strings.Contains(err.Error(), `tool "srv__big": parameters holds more than 10000 objects and lists`) {
		t.Fatalf("err %v", err)
	}
}
