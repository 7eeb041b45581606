package llm

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// TestProfilesReachTheWire loads model profiles from the three places of
// docs/testing.md#the-responses-file (the file's models:, a --profiles file, $ENSEMBLE_PROFILES, in that
// order of precedence, as the CLI hands them to the loader) and checks that
// each provider sends what its profile says: model, temperature,
// max_tokens, the system prompt (profile's, then agent's), the key only
// from api_key_env, and timeout_seconds bounding each request.
func TestProfilesReachTheWire(t *testing.T) {
	t.Parallel()
	var hang atomic.Bool
	handler := func(body string) func(int, recorded, http.ResponseWriter, *http.Request) {
		return func(_ int, _ recorded, w http.ResponseWriter, r *http.Request) {
			if hang.Load() {
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second):
				}
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}
	}
	compat := newFakeServer(t, handler(oaText("compat")))
	claude := newFakeServer(t, handler(anReply("end_turn", 1, 1, anText("claude"))))
	local := newFakeServer(t, handler(oaText("local")))

	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	path := write("ensemble.yaml", `name: profiles
models:
  compat:
    provider: openai
    model: from-file
    base_url: ${COMPAT_URL}
    api_key_env: TEST_OPENAI_KEY
    temperature: 0.7
    max_tokens: 300
    system_prompt: From the file.
    timeout_seconds: 1
agents:
  - {name: a_compat, model_profile: compat, prompt: Agent A.}
  - {name: a_claude, model_profile: claude, prompt: Agent B.}
  - {name: a_local, model_profile: local, prompt: Agent C.}
`)
	flagFile := write("flag.yaml", `models:
  compat: {provider: openai, model: from-flag, base_url: "${COMPAT_URL}", api_key_env: TEST_OPENAI_KEY}
  claude:
    provider: anthropic
    model: claude-from-flag
    base_url: ${CLAUDE_URL}
    api_key_env: TEST_ANTHROPIC_KEY
    temperature: 0
    max_tokens: 200
    system_prompt: From --profiles.
    timeout_seconds: 1
`)
	envFile := write("env.yaml", `models:
  claude: {provider: anthropic, model: claude-from-env, base_url: "${CLAUDE_URL}", api_key_env: TEST_ANTHROPIC_KEY}
  local:
    provider: ollama
    model: llama-from-env
    base_url: ${OLLAMA_URL}
    temperature: 0.1
    max_tokens: 100
    system_prompt: From $ENSEMBLE_PROFILES.
    timeout_seconds: 1
`)
	vars := map[string]string{"COMPAT_URL": compat.URL + "/v1", "CLAUDE_URL": claude.URL, "OLLAMA_URL": local.URL + "/v1"}
	lookup := func(name string) (string, bool) {
		if v, ok := vars[name]; ok {
			return v, true
		}
		return testEnv(name)
	}
	e, err := ensemble.Load(path, ensemble.LoadOptions{Kinds: testKinds, ProfileFiles: []string{flagFile, envFile}, LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRunner(Options{LookupEnv: lookup})
	run := func(agent string) *agent.Result {
		return r.Run(context.Background(), request(e, e.Agent(agent), "go"))
	}
	for _, name := range []string{"a_compat", "a_claude", "a_local"} {
		if res := run(name); res.Err != nil {
			t.Fatalf("%s: %v", name, res.Err)
		}
	}

	b := compat.requests()[0]
	if b.Body["model"] != "from-file" || b.Body["temperature"] != 0.7 || b.Body["max_tokens"] != 300.0 ||
		b.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("openai-compatible request %s %v", b.Raw, b.Header)
	}
	if sys := messages(t, b)[0]; sys["role"] != "system" || sys["content"] != "From the file.\n\nAgent A." {
		t.Errorf("openai-compatible system message %v", sys)
	}

	b = claude.requests()[0]
	sys := b.Body["system"].([]any)[0].(map[string]any)["text"]
	if b.Body["model"] != "claude-from-flag" || b.Body["temperature"] != 0.0 || b.Body["max_tokens"] != 200.0 ||
		sys != "From --profiles.\n\nAgent B." || b.Header.Get("X-Api-Key") != testKey {
		t.Errorf("anthropic request %s %v", b.Raw, b.Header)
	}

	b = local.requests()[0]
	if b.Body["model"] != "llama-from-env" || b.Body["temperature"] != 0.1 || b.Body["max_tokens"] != 100.0 ||
		b.Header.Get("Authorization") != "" || b.Body["tool_choice"] != nil {
		t.Errorf("ollama request %s %v", b.Raw, b.Header)
	}
	if sys := messages(t, b)[0]; sys["content"] != "From $ENSEMBLE_PROFILES.\n\nAgent C." {
		t.Errorf("ollama system message %v", sys)
	}

	// timeout_seconds: 1 bounds each request of every profile.
	hang.Store(true)
	names := []string{"a_compat", "a_claude", "a_local"}
	results := make([]*agent.Result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { results[i] = run(name) })
	}
	wg.Wait()
	for i, res := range results {
		if res.Err == nil || res.StopReason != StopError {
			t.Fatalf("%s: err %v stop %q", names[i], res.Err, res.StopReason)
		}
		mustContain(t, res.Err.Error(), "request timed out (timeout_seconds)")
	}
}
