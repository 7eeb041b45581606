package serve_test

// Requests an attacker holding the token (or not) may send: each is
// refused, and reaches nothing it names outside the server's runs.

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
)

// An answer's run id comes from the URL, where %2F is a slash: it must
// name a run of the database before it names a file of the journal (the
// run's RUN.json, at STATE.serve/ID.json).
func TestAnswerIDNamesNoJournalFile(t *testing.T) {
	t.Parallel()
	dir := ensembles(t)
	// what STATE.serve/../planted.json reads: a "cancelled" run
	if err := os.WriteFile(filepath.Join(dir, "planted.json"), []byte(`{"cancelled": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, nil)
	for _, id := range []string{"..%2Fplanted", "..%2F..%2F" + filepath.Base(dir) + "%2Fplanted", "a%00b", "nope"} {
		code, b, _ := s.do(t, "POST", "/v1/runs/"+id+"/answers", map[string]any{"approver": "yes"})
		if code != 404 || errorCode(t, b) != "not_found" {
			t.Errorf("%s: %d %s, want 404 not_found", id, code, b)
		}
	}
}

// A script of one file served must not read the key of another file, nor
// the server's own secrets (its token, the secret of its webhooks, a
// trigger's secret): each file's session strips only its own keys. And a
// value of them that reaches a run anyway (its input) is redacted from the
// answers.
func TestScriptsSeeNoServerSecret(t *testing.T) {
	t.Parallel()
	dir := ensembles(t)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "env"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("env/ensemble.yaml", "name: env\nagents:\n  - name: dump\n    script: dump.py\n"+
		"triggers:\n  - webhook: {path: /hooks/env, secret_env: ENV_HOOK_SECRET, input: x}\n")
	write("env/dump.py", "#!/usr/bin/env python3\nimport json, os, sys\njson.load(sys.stdin)\njson.dump(dict(os.environ), sys.stdout)\n")
	secrets := map[string]string{
		"SERVE_TEST_KEY":        testKey,
		"ENV_HOOK_SECRET":       "hook-secret-0f3a9c1e",
		serve.WebhookSecretEnv:  "whsec-long-enough-1234",
		serve.TokenEnv:          testToken,
		"ENV_NOT_SECRET_MARKER": "plain-value-kept",
	}
	env := os.Environ()
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	s := startServer(t, dir, func(o *serve.Options) {
		o.LookupEnv = lookup(secrets)
		o.Environ = func() []string { return env }
	})
	r := s.start(t, "env", nil)
	if r.Status != "completed" || !strings.Contains(string(r.Result), "plain-value-kept") {
		t.Fatalf("%s %s", r.Status, r.Result)
	}
	for k, v := range secrets {
		if k != "ENV_NOT_SECRET_MARKER" && (strings.Contains(string(r.Result), v) || strings.Contains(string(r.Result), `"`+k+`"`)) {
			t.Errorf("the script read $%s:\n%s", k, r.Result)
		}
	}
	// a secret given as an input is redacted from the answer
	r = s.start(t, "secret", map[string]any{"input": "hook " + secrets["ENV_HOOK_SECRET"] + " token " + testToken})
	if strings.Contains(string(r.Result), secrets["ENV_HOOK_SECRET"]) || strings.Contains(string(r.Result), testToken) {
		t.Errorf("a secret shows:\n%s", r.Result)
	}
}

// Prefer: wait with more seconds than a time.Duration holds waits the
// longest it may (MaxWait), instead of wrapping to a negative wait, which
// waited for nothing.
func TestHugePreferWaitIsCapped(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	code, b, h := s.do(t, "POST", "/v1/ensembles/count/runs", nil, "Prefer", "wait=10000000000")
	if code != 201 || h.Get("Preference-Applied") != "wait=600" || decodeRun(t, b).Status != "completed" {
		t.Fatalf("%d %v %s", code, h.Get("Preference-Applied"), b)
	}
}

// A path nothing serves, or a trigger's path asked with GET, is refused
// in the one shape of every error, not with net/http's text.
func TestUnknownPathsAreJSON(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), func(o *serve.Options) { o.NoUI = true })
	for _, p := range []string{"/", "/nothing", "/hooks/nope", "/V1/runs", "/%2e%2e/v1/runs"} {
		code, b, _ := s.do(t, "GET", p, nil)
		if code != 404 || errorCode(t, b) != "not_found" {
			t.Errorf("%s: %d %s", p, code, b)
		}
	}
}

// The token: its scheme in any case (RFC 7235), nothing else near it.
func TestTokenVariants(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	for _, c := range []struct {
		auth string
		code int
	}{
		{"Bearer " + testToken, 200},
		{"bearer " + testToken, 200},
		{"BEARER  " + testToken + " ", 200},
		{"Bearer", 401},
		{"Bearer ", 401},
		{"Bearer " + testToken + "x", 401},
		{"Bearer " + testToken[:len(testToken)-1], 401},
		{"Basic " + testToken, 401},
		{testToken, 401},
		{"Bearer " + strings.Repeat("a", 64<<10), 401},
	} {
		code, b, h := s.do(t, "GET", "/v1/ensembles", nil, "Authorization", c.auth)
		if code != c.code {
			t.Errorf("%.40q: %d %s, want %d", c.auth, code, b, c.code)
		}
		if code == 401 && (errorCode(t, b) != "unauthorized" || strings.Contains(string(b), testToken) || h.Get("WWW-Authenticate") == "") {
			t.Errorf("%.40q: %s %v", c.auth, b, h)
		}
	}
}

// A webhook's delivery does not follow a redirect: the body and its
// signature go to the URL the caller gave, and nowhere it sends them on
// (another host, an address inside the network); a 3xx is a failed
// attempt.
func TestWebhookFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer far.Close()
	near := httptest.NewServer(http.RedirectHandler(far.URL+"/stolen", http.StatusTemporaryRedirect))
	defer near.Close()
	s := startServer(t, ensembles(t), func(o *serve.Options) { o.WebhookAttempts = 1 })
	r := s.start(t, "count", map[string]any{"webhook": near.URL})
	deadline := time.Now().Add(patience)
	for {
		_, data, _ := s.sse(t, r.RunID)
		all := strings.Join(data, "\n")
		if strings.Contains(all, "webhook_") {
			if !strings.Contains(all, "webhook_failed") || !strings.Contains(all, "307") {
				t.Errorf("events:\n%s", all)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect was followed: %d requests elsewhere", n)
	}
}

// A server reached from the network wants a token too long to guess by
// trying them all; the error does not show the token.
func TestShortTokenOffTheLoopback(t *testing.T) {
	t.Parallel()
	_, err := serve.New(serve.Options{Paths: []string{"testdata/count"}, Listen: "0.0.0.0:7777", State: filepath.Join(t.TempDir(), "s.db"), Token: "hunter2"})
	if err == nil || !strings.Contains(err.Error(), "16 characters") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a short token: %v", err)
	}
}
