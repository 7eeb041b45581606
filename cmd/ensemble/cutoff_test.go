package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// A reply cut off at max_tokens is said to be wherever the run is
// reported: its record's stop_reason, a line of the text summary, the
// --report, and the error of a reply that the cut left short of JSON.
func TestCutOffReplyIsReported(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: `{"verdict": "ship`, Finish: "length"}
	}, fakemodel.WithUsage(11, 8))
	dir := t.TempDir()
	ens := `name: cut
models:
  local:
    provider: openai
    model: test-model
    base_url: ${TEST_LLM_URL}
    api_key_env: TEST_LLM_KEY
    max_tokens: 8
agents:
  - name: judge
    model_profile: local
    prompt: Judge the input.
    output_format: json
  - name: writer
    model_profile: local
    prompt: Write.
`
	path := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(path, []byte(ens), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": "sk-test"}
	o := ensembleEnv(t, env, "run", path, "--input", "notes", "--output", "json")
	var res struct {
		History []struct {
			Agent      string  `json:"agent_name"`
			StopReason *string `json:"stop_reason"`
			Error      *string `json:"error"`
		} `json:"conversation_history"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil || o.code != 1 {
		t.Fatalf("exit %d %v\n%s%s", o.code, err, o.stdout, o.stderr)
	}
	for _, h := range res.History {
		if h.StopReason == nil || *h.StopReason != "max_tokens" {
			t.Errorf("%s: stop_reason %v", h.Agent, h.StopReason)
		}
		if h.Agent == "judge" && (h.Error == nil || !strings.Contains(*h.Error, `the reply was cut off at max_tokens (8): output_format json: `) ||
			!strings.Contains(*h.Error, `the reply began "{\"verdict\": \"ship"`)) {
			t.Errorf("judge's error %v", h.Error)
		}
	}

	report := filepath.Join(dir, "report.md")
	o = ensembleEnv(t, env, "run", path, "--input", "notes", "--output", "text", "--report", report)
	for _, want := range []string{
		"cut off: turn 1, judge: the reply stopped at the model profile's max_tokens, and it failed",
		"cut off: turn 1, writer: the reply stopped at the model profile's max_tokens, and its output is the text so far",
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, o.stdout)
		}
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), "stop reason `max_tokens` (**the reply was cut off**)"); n != 2 {
		t.Errorf("the report marks %d cut-off replies, want 2:\n%s", n, md)
	}
}
