package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

// TestRunCallsAnOpenAICompatibleServer runs an LLM agent for real against an
// in-process server speaking Chat Completions, through the CLI.
func TestRunCallsAnOpenAICompatibleServer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []map[string]any
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		bodies = append(bodies, body)
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"verdict\": \"ship it\"}"}}],
			"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}}`)
	}))
	defer srv.Close()

	dir := t.TempDir()
	ens := `name: llm-cli
models:
  local:
    provider: openai
    model: test-model
    base_url: ${TEST_LLM_URL}
    api_key_env: TEST_LLM_KEY
agents:
  - name: judge
    model_profile: local
    prompt: Judge the input.
    output_format: json
`
	path := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(path, []byte(ens), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL + "/v1", "TEST_LLM_KEY": "sk-test-secret"},
		"run", path, "--input", "release notes", "--output", "json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	var res struct {
		FinalState map[string]any `json:"final_state"`
		Usage      state.Usage    `json:"usage"`
		History    []struct {
			StopReason *string `json:"stop_reason"`
		} `json:"conversation_history"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if v := res.FinalState["judge"]; v == nil || v.(map[string]any)["verdict"] != "ship it" {
		t.Fatalf("final state %v", res.FinalState)
	}
	if res.Usage != (state.Usage{Requests: 1, InputTokens: 11, OutputTokens: 4}) {
		t.Fatalf("usage %+v", res.Usage)
	}
	if len(bodies) != 1 || auth[0] != "Bearer sk-test-secret" || bodies[0]["model"] != "test-model" {
		t.Fatalf("requests %v %v", bodies, auth)
	}
	if res.History[0].StopReason == nil || *res.History[0].StopReason != "end_turn" {
		t.Fatalf("stop reason %v", res.History[0].StopReason)
	}
	if strings.Contains(o.stdout, "sk-test-secret") {
		t.Fatal("the key leaked into the result")
	}
}
