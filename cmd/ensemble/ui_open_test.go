package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ui --open never puts the token on the opener's command line (which every
// local user can read): the page it opens carries a one-time code, which
// the page exchanges, once, for an HttpOnly, SameSite=Strict cookie.
func TestUIOpenHandsOverTheTokenOnce(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	if o := ensembleCmd(t, "", "run", example+"ensemble.yaml", "--responses", example+"responses.yaml", "--state", db, "-q", "--output", "json"); o.code != 0 {
		t.Fatalf("run: exit %d %s", o.code, o.stderr)
	}
	opened := make(chan []string, 1)
	pr, pw := io.Pipe()
	var errb strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	std := &stdio{in: strings.NewReader(""), out: pw, err: &errb, getenv: noEnv,
		opener: func(name string, args ...string) error {
			opened <- append([]string{name}, args...)
			return nil
		}}
	go func() {
		done <- run(ctx, []string{"ui", db, "--open"}, std)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var printed string
	for lines.Scan() {
		if m := regexp.MustCompile(`^  (http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{32})$`).FindStringSubmatch(lines.Text()); m != nil {
			printed = m[1]
			break
		}
	}
	if printed == "" {
		t.Fatalf("no URL printed; stderr %q", errb.String())
	}
	go io.Copy(io.Discard, pr)
	base, token, _ := strings.Cut(printed, "/?token=")
	var argv []string
	select {
	case argv = <-opened:
	case <-time.After(time.Minute):
		t.Fatal("no browser was opened")
	}
	var code string
	for _, a := range argv {
		if strings.Contains(a, token) {
			t.Errorf("the opener's command line holds the token: %q", argv)
		}
		if u, err := url.Parse(a); err == nil && strings.HasPrefix(a, base) {
			code = u.Query().Get("code")
		}
	}
	if code == "" {
		t.Fatalf("the opened URL has no one-time code: %q", argv)
	}

	client := &http.Client{Timeout: time.Minute}
	do := func(method, path string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	exchange := "/auth/code?" + url.Values{"code": {code}}.Encode()
	resp := do("POST", exchange)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("exchanging the code: %d", resp.StatusCode)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the exchange's cookie: %+v", cookie)
	}
	if r := do("GET", "/api/runs", "Cookie", cookie.String(), "X-Ensemble-Cookie", "1"); r.StatusCode != 200 {
		t.Errorf("GET /api/runs with the cookie: %d", r.StatusCode)
	}
	// A request another page could send (no header of the page's) is refused.
	if r := do("GET", "/api/runs", "Cookie", cookie.String()); r.StatusCode != 403 {
		t.Errorf("GET /api/runs with the cookie and without the page's header: %d, want 403", r.StatusCode)
	}
	// The code works once.
	if r := do("POST", exchange); r.StatusCode != 403 || len(r.Cookies()) != 0 {
		t.Errorf("the code exchanged a second time: %d %v", r.StatusCode, r.Cookies())
	}
	if r := do("POST", "/auth/code?code=0123"); r.StatusCode != 403 {
		t.Errorf("a wrong code: %d", r.StatusCode)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("ui did not stop")
	}
}
