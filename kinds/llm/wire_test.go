package llm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
)

// profileWith is the profile of provider against url.
func profileWith(provider, url string) ensemble.ModelProfile {
	if provider == "anthropic" {
		return anthropicProfile(url)
	}
	return openaiProfile(url)
}

// okReply is a plain reply in provider's wire format.
func okReply(provider, text string) string {
	if provider == "anthropic" {
		return anReply("end_turn", 1, 1, anText(text))
	}
	return oaText(text)
}

// A Retry-After longer than the OpenAI limit fails at once; Anthropic waits
// for any (here a short retry-after-ms).
func TestRetryAfterLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, provider string
		header, value  string
		opts           Options
		requests       int
	}{
		{"openai waits no 5 minutes", "openai", "Retry-After", "300", Options{MaxRetries: 3}, 1},
		{"openai MaxRetryDelay", "openai", "Retry-After", "1", Options{MaxRetries: 3, MaxRetryDelay: 100 * time.Millisecond}, 1},
		{"openai HTTP date too far", "openai", "Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), Options{MaxRetries: 3}, 1},
		{"openai retry-after-ms", "openai", "Retry-After-Ms", "20", Options{MaxRetries: 3}, 2},
		{"anthropic retry-after-ms", "anthropic", "Retry-After-Ms", "20", Options{MaxRetries: 3}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if n == 0 {
					w.Header().Set(tc.header, tc.value)
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
					return
				}
				_, _ = io.WriteString(w, okReply(tc.provider, "after the wait"))
			})
			e, a := newEnsemble(t, profileWith(tc.provider, srv.URL), ensemble.Agent{})
			res := newTestRunner(tc.opts).Run(context.Background(), request(e, a, "go"))
			if n := len(srv.requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d (err %v)", n, tc.requests, res.Err)
			}
			if tc.requests == 1 {
				if res.Err == nil {
					t.Fatal("no error")
				}
				mustContain(t, res.Err.Error(), "429 Too Many Requests")
				mustContain(t, res.Err.Error(), "slow down")
			} else if res.Err != nil || res.Output != "after the wait" {
				t.Errorf("output %#v err %v", res.Output, res.Err)
			}
		})
	}
}

// x-should-retry overrides the status; OpenAI's quota 429 is never retried.
func TestShouldRetryHeader(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, shouldRetry string
		status            int
		body              string
		requests          int
	}{
		{"400 the server wants retried", "true", 400, `{"error":{"message":"try again"}}`, 2},
		{"503 the server does not want retried", "false", 503, `{"error":{"message":"down for good"}}`, 1},
		{"quota 429", "", 429, `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, 1},
		{"plain 429", "", 429, `{"error":{"message":"rate","type":"requests"}}`, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if n == 0 {
					if tc.shouldRetry != "" {
						w.Header().Set("X-Should-Retry", tc.shouldRetry)
					}
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(tc.status)
					_, _ = io.WriteString(w, tc.body)
					return
				}
				_, _ = io.WriteString(w, oaText("ok"))
			})
			e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{})
			res := newTestRunner(Options{MaxRetries: 2}).Run(context.Background(), request(e, a, "go"))
			if n := len(srv.requests()); n != tc.requests {
				t.Errorf("%d requests, want %d (err %v)", n, tc.requests, res.Err)
			}
			if (res.Err == nil) != (tc.requests == 2) {
				t.Errorf("err %v", res.Err)
			}
		})
	}
}

// A redirect to another host is not followed: the key stays home. One to
// the same host is.
func TestRedirectsStayOnTheHost(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			elsewhere := newFakeServer(t, scripted(okReply(provider, "stolen")))
			srv := newFakeServer(t, func(n int, r recorded, w http.ResponseWriter, req *http.Request) {
				switch {
				case strings.HasPrefix(r.Path, "/moved"):
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, okReply(provider, "moved here"))
				case n == 0:
					http.Redirect(w, req, "/moved"+r.Path, http.StatusPermanentRedirect)
				default:
					http.Redirect(w, req, elsewhere.URL+r.Path, http.StatusTemporaryRedirect)
				}
			})
			e, a := newEnsemble(t, profileWith(provider, srv.URL), ensemble.Agent{})
			r := newTestRunner(Options{MaxRetries: 2})
			res := r.Run(context.Background(), request(e, a, "go"))
			if res.Err != nil || res.Output != "moved here" {
				t.Fatalf("same host: output %#v err %v", res.Output, res.Err)
			}
			reqs := srv.requests()
			if len(reqs) != 2 || reqs[1].Raw != reqs[0].Raw {
				t.Fatalf("same host: the redirected request lost its body: %d requests", len(reqs))
			}
			res = r.Run(context.Background(), request(e, a, "go"))
			if res.Err == nil {
				t.Fatalf("another host: output %#v", res.Output)
			}
			mustContain(t, res.Err.Error(), "307 Temporary Redirect")
			if n := len(elsewhere.requests()); n != 0 {
				t.Errorf("the other host got %d requests", n)
			}
			if n := len(srv.requests()); n != 3 {
				t.Errorf("%d requests: a redirect was retried", n)
			}
		})
	}
}

// A plain reply cut off before its end is retried like a dropped
// connection.
func TestCutReplyIsRetried(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			full := okReply(provider, "whole")
			srv := newFakeServer(t, func(n int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				if n == 0 {
					conn, buf, err := w.(http.Hijacker).Hijack()
					if err != nil {
						return
					}
					fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(full), full[:len(full)/2])
					_ = buf.Flush()
					_ = conn.Close()
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, full)
			})
			e, a := newEnsemble(t, profileWith(provider, srv.URL), ensemble.Agent{})
			res := newTestRunner(Options{MaxRetries: 1, MaxRetryDelay: time.Millisecond}).Run(context.Background(), request(e, a, "go"))
			if res.Err != nil || res.Output != "whole" {
				t.Fatalf("output %#v err %v", res.Output, res.Err)
			}
			if n := len(srv.requests()); n != 2 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

// An error event in a stream fails the request with its message, and is
// not retried: the text so far has been shown.
func TestStreamErrorEvent(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				if provider == "openai" {
					_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"par"}}]}`+"\n\n")
					_, _ = io.WriteString(w, `data: {"error":{"message":"Overloaded","type":"server_error"}}`+"\n\n")
					return
				}
				_, _ = io.WriteString(w, "event: message_start\ndata: "+`{"type":"message_start","message":{"content":[],"usage":{"input_tokens":1}}}`+"\n\n")
				_, _ = io.WriteString(w, "event: error\ndata: "+`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`+"\n\n")
			})
			e, a := newEnsemble(t, profileWith(provider, srv.URL), ensemble.Agent{})
			req := request(e, a, "go")
			var log eventLog
			req.Events = log.sink() // streams only with a sink
			res := newTestRunner(Options{MaxRetries: 2, Stream: true}).Run(context.Background(), req)
			if res.Err == nil {
				t.Fatalf("no error: output %#v", res.Output)
			}
			mustContain(t, res.Err.Error(), provider+": received error while streaming: Overloaded")
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

// Compatible servers that send content as a list of parts, or numbers
// where counts are expected, still give their text.
func TestLenientReplies(t *testing.T) {
	t.Parallel()
	body := `{"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":12.0,"completion_tokens":null}}`
	srv := newFakeServer(t, scripted(body))
	e, a := newEnsemble(t, openaiProfile(srv.URL), ensemble.Agent{})
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil || res.Output != "Hello" {
		t.Fatalf("output %#v err %v", res.Output, res.Err)
	}
	if res.Usage.InputTokens != 12 || res.Usage.OutputTokens != 0 {
		t.Errorf("usage %+v", res.Usage)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		header, value string
		want          time.Duration
		ok            bool
	}{
		{"Retry-After", "2", 2 * time.Second, true},
		{"Retry-After", "0.5", 500 * time.Millisecond, true},
		{"Retry-After", "-1", 0, false},
		{"Retry-After", "soon", 0, false},
		{"Retry-After", "1e400", 1<<63 - 1, true},
		{"Retry-After", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0, true},
		{"Retry-After-Ms", "250", 250 * time.Millisecond, true},
		{"Retry-After-Ms", "NaN", 0, false},
	}
	for _, tc := range cases {
		h := http.Header{}
		h.Set(tc.header, tc.value)
		got, ok := retryAfter(h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %s: %s %v, want %s %v", tc.header, tc.value, got, ok, tc.want, tc.ok)
		}
	}
	for attempt := range 40 {
		if d := backoff(attempt, defaultMaxBackoff); d <= 0 || d > defaultMaxBackoff {
			t.Errorf("backoff %d: %s", attempt, d)
		}
	}
	if d := backoff(0, defaultMaxBackoff); d > 500*time.Millisecond || d < 375*time.Millisecond {
		t.Errorf("first backoff %s", d)
	}
}

func TestServerSentEvents(t *testing.T) {
	t.Parallel()
	in := ": a comment\nevent: one\ndata: a\ndata: b\r\n\ndata:c\n\nevent: last\ndata: x\n\ndata: never dispatched"
	var got []string
	err := sse(strings.NewReader(in), func(name string, data []byte) (bool, error) {
		got = append(got, name+"="+string(data))
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "one=a\nb|=c|last=x" {
		t.Errorf("events %q", got)
	}
}

// A server that answers a streamed request with one JSON body (it ignores
// stream: true) still gives its reply, shown as one piece of text; one
// that answers with neither events nor JSON fails with a message that
// says what to do, not "the response has no choices".
func TestStreamAnsweredWhole(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			body := oaText("Hello whole")
			if provider == "anthropic" {
				body = anReply("end_turn", 10, 5, map[string]any{"type": "text", "text": "Hello whole"})
			}
			srv := newFakeServer(t, scripted(body))
			e, a := newEnsemble(t, profileWith(provider, srv.URL), ensemble.Agent{})
			req := request(e, a, "go")
			var log eventLog
			req.Events = log.sink()
			res := newTestRunner(Options{Stream: true}).Run(context.Background(), req)
			if res.Err != nil || res.Output != "Hello whole" || res.Usage.InputTokens != 10 {
				t.Fatalf("output %#v usage %+v err %v", res.Output, res.Usage, res.Err)
			}
			deltas := log.deltas()
			if strings.Join(deltas, "") != "Hello whole" {
				t.Errorf("deltas %q", deltas)
			}

			plain := newFakeServer(t, func(_ int, _ recorded, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				_, _ = io.WriteString(w, body)
			})
			e, a = newEnsemble(t, profileWith(provider, plain.URL), ensemble.Agent{})
			req = request(e, a, "go")
			req.Events = (&eventLog{}).sink()
			res = newTestRunner(Options{Stream: true}).Run(context.Background(), req)
			if res.Err == nil {
				t.Fatalf("no error: output %#v", res.Output)
			}
			mustContain(t, res.Err.Error(), provider+": the server answered a streamed request without server-sent events; drop --stream")
		})
	}
}
