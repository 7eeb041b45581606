package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFanOutChildResponses: the children of a fan-out over an ensemble
// agent take responses by path, shared by every instance in item order
// (`analyst/think`) or one instance's own (`analyst[1]/think`), and --live
// names either to let their model be called.
func TestFanOutChildResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, responses string
		flags           []string
		want            []any
		requests        int
	}{
		{name: "shared", responses: "analyst/think: [one, two, three]\n", want: []any{"one", "two", "three"}},
		{name: "one instance", responses: "analyst/think: [one, two, three]\nanalyst[1]/think: [own]\n", want: []any{"one", "own", "three"}},
		{name: "every instance its own", responses: "analyst[2]/think: [c]\nanalyst[0]/think: [a]\nanalyst[1]/think: [b]\n", want: []any{"a", "b", "c"}},
		{name: "live one instance", responses: "analyst[0]/think: [a]\nanalyst[2]/think: [c]\n", flags: []string{"--live", "analyst[1]/think"},
			want: []any{"a", "real reply", "c"}, requests: 1},
		{name: "live every instance", responses: "analyst[0]/think: [a]\n", flags: []string{"--live", "analyst/think"},
			want: []any{"a", "real reply", "real reply"}, requests: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := countingServer(t)
			dir := t.TempDir()
			for name, body := range map[string]string{
				"ensemble.yaml": `name: fan
models:
  local: {provider: openai, model: m, base_url: "${TEST_LLM_URL}", api_key_env: TEST_LLM_KEY}
agents:
  - name: lister
    script: list.sh
  - name: analyst
    dependencies: [lister]
    ensemble: child.yaml
    output: think
    fan_out: {over: "context.lister.items", max_parallel: 3}
`,
				"child.yaml":     "name: child\nagents:\n  - name: think\n    model_profile: local\n    prompt: Think.\n",
				"list.sh":        "cat >/dev/null\necho '{\"items\": [\"a\", \"b\", \"c\"]}'\n",
				"responses.yaml": tt.responses,
			} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{"run", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml"), "--output", "json"}, tt.flags...)
			o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": "k", "PATH": os.Getenv("PATH")}, args...)
			var res struct {
				FinalState map[string]any   `json:"final_state"`
				Errors     []map[string]any `json:"errors"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
				t.Fatalf("exit %d, stdout %q, stderr %s", o.code, o.stdout, o.stderr)
			}
			got, _ := res.FinalState["analyst"].([]any)
			if o.code != 0 || !slices.Equal(got, tt.want) || len(res.Errors) != 0 {
				t.Errorf("exit %d, analyst %v (want %v), errors %v", o.code, got, tt.want, res.Errors)
			}
			if got := srv.Count(); got != tt.requests {
				t.Errorf("%d requests reached the model, want %d", got, tt.requests)
			}
		})
	}
}
