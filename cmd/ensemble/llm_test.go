package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/state"
)

// TestRunCallsAnOpenAICompatibleServer runs an LLM agent for real against an
// in-process server speaking Chat Completions, through the CLI.
func TestRunCallsAnOpenAICompatibleServer(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, fakemodel.Text(`{"verdict": "ship it"}`), fakemodel.WithUsage(11, 4))
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
	o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": "sk-test-secret"},
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
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer sk-test-secret" || reqs[0].Model != "test-model" {
		t.Fatalf("requests %+v", reqs)
	}
	if res.History[0].StopReason == nil || *res.History[0].StopReason != "end_turn" {
		t.Fatalf("stop reason %v", res.History[0].StopReason)
	}
	if strings.Contains(o.stdout, "sk-test-secret") {
		t.Fatal("the key leaked into the result")
	}
}
