package fakemodel

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The server answers in the format the path asks for, counts its usage,
// streams the usage only when asked, and records each request as sent.
func TestReplies(t *testing.T) {
	t.Parallel()
	srv := New(t, func(r Request) Reply {
		if strings.Contains(r.LastUser(), "fail") {
			return Reply{Status: http.StatusTooManyRequests, Error: "slow down"}
		}
		return Reply{Text: "hi " + r.System, Chunks: []string{"hi ", r.System}}
	}, WithUsage(7, 3))
	chat := `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"q"}]}],"tools":[{"type":"function","function":{"name":"look"}}]`
	for _, tc := range []struct {
		name, path, body string
		status           int
		want, not        []string
	}{
		{name: "chat", path: "/v1/chat/completions?x=1", body: chat + `}`, status: 200,
			want: []string{`"content":"hi S"`, `"finish_reason":"stop"`, `"prompt_tokens":7`, `"completion_tokens":3`}},
		{name: "chat streamed", path: "/v1/chat/completions", body: chat + `,"stream":true}`, status: 200,
			want: []string{`"delta":{"content":"hi ","role":"assistant"}`, `"delta":{"content":"S"}`, "data: [DONE]"}, not: []string{`"usage"`}},
		{name: "chat streamed with usage", path: "/v1/chat/completions", body: chat + `,"stream":true,"stream_options":{"include_usage":true}}`, status: 200,
			want: []string{`"usage":{"completion_tokens":3,"prompt_tokens":7,"total_tokens":10}`, "data: [DONE]"}},
		{name: "anthropic", path: "/v1/messages", body: `{"model":"c","system":"S","messages":[{"role":"user","content":"q"}]}`, status: 200,
			want: []string{`{"text":"hi S","type":"text"}`, `"stop_reason":"end_turn"`, `"input_tokens":7`}},
		{name: "anthropic streamed", path: "/v1/messages", body: `{"model":"c","system":"S","stream":true,"messages":[{"role":"user","content":"q"}]}`, status: 200,
			want: []string{"event: message_start", `"text":"hi ","type":"text_delta"`, `"stop_reason":"end_turn"`, "event: message_stop"}},
		{name: "error", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"fail"}]}`, status: 429,
			want: []string{`"message":"slow down"`}},
	} {
		status, body := post(t, srv.Root()+tc.path, tc.body, "Authorization", "Bearer sk-1")
		if status != tc.status {
			t.Errorf("%s: status %d: %s", tc.name, status, body)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: the reply lacks %s:\n%s", tc.name, w, body)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(body, n) {
				t.Errorf("%s: the reply has %s:\n%s", tc.name, n, body)
			}
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 6 || srv.Count() != 6 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if r.N != 0 || r.Path != "/v1/chat/completions" || r.Query != "x=1" || r.Auth() != "sk-1" || r.Model != "m" || r.System != "S" ||
		r.LastUser() != "q" || len(r.Tools) != 1 || r.Tools[0] != "look" || r.Raw != chat+`}` || r.Stream {
		t.Errorf("first request %+v", r)
	}
	if !reqs[1].Stream || reqs[3].System != "S" || reqs[5].N != 5 {
		t.Errorf("requests %+v", reqs)
	}
}

// A reply can wait, or hang until its client gives up.
func TestDelayAndHang(t *testing.T) {
	t.Parallel()
	srv := New(t, func(r Request) Reply { return Reply{Hang: r.LastUser() == "hang", Text: "late"} }, WithDelay(50*time.Millisecond))
	start := time.Now()
	if _, body := post(t, srv.URL()+"/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`); !strings.Contains(body, "late") ||
		time.Since(start) < 50*time.Millisecond {
		t.Errorf("a delayed reply came after %s: %s", time.Since(start), body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hang"}]}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a hung request was answered: %d", resp.StatusCode)
	}
}
