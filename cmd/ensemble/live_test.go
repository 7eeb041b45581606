package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// liveEnsemble writes an ensemble with a script agent and two LLM agents
// served by srv, and a responses file that covers only `covered`.
func liveEnsemble(t *testing.T, responses string) (dir string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string]string{
		"ensemble.yaml": `name: live
models:
  local:
    provider: openai
    model: m
    base_url: ${TEST_LLM_URL}
    api_key_env: TEST_LLM_KEY
agents:
  - name: fetch
    script: fetch.sh
  - name: covered
    model_profile: local
    prompt: p
    dependencies: [fetch]
  - name: uncovered
    model_profile: local
    prompt: p
    dependencies: [fetch]
`,
		"fetch.sh":       "cat >/dev/null\necho 'fetching' >&2\necho '{\"rows\": 3}'\n",
		"responses.yaml": responses,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// countingServer answers Chat Completions and counts the requests.
func countingServer(t *testing.T) *fakemodel.Server {
	t.Helper()
	return fakemodel.New(t, fakemodel.Text("real reply"), fakemodel.WithUsage(1, 1))
}

// TestResponsesKeepUncoveredModelsOffline: with --responses, an LLM agent
// that has no entry fails its execution instead of calling its model (not
// one request reaches the server), unless --live or --live-all lets it; the
// script agent runs for real either way.
func TestResponsesKeepUncoveredModelsOffline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		responses string
		flags     []string
		requests  int
		wantErr   string // the error of uncovered; "" = it ran
	}{
		{name: "offline", responses: "covered: [canned]\n", requests: 0,
			wantErr: `agent "uncovered" has no responses in RESP and would call the real model; add responses for it, or pass --live uncovered (or --live-all)`},
		{name: "live agent", responses: "covered: [canned]\n", flags: []string{"--live", "uncovered"}, requests: 1},
		{name: "live all", responses: "covered: [canned]\n", flags: []string{"--live-all"}, requests: 1},
		{name: "live another", responses: "covered: [canned]\n", flags: []string{"--live", "covered"}, requests: 0,
			wantErr: `agent "uncovered" has no responses in RESP`},
		{name: "empty list is an entry", responses: "covered: [canned]\nuncovered: []\n", requests: 0,
			wantErr: `agent "uncovered": injected responses exhausted after 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := countingServer(t)
			dir := liveEnsemble(t, tt.responses)
			resp := filepath.Join(dir, "responses.yaml")
			args := append([]string{"run", filepath.Join(dir, "ensemble.yaml"), "--responses", resp, "--output", "json"}, tt.flags...)
			o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": "k", "PATH": os.Getenv("PATH")}, args...)
			var res struct {
				FinalState map[string]any   `json:"final_state"`
				Errors     []map[string]any `json:"errors"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
				t.Fatalf("exit %d, stdout %q, stderr %s", o.code, o.stdout, o.stderr)
			}
			if got := srv.Count(); got != tt.requests {
				t.Errorf("%d requests reached the model, want %d", got, tt.requests)
			}
			if res.FinalState["fetch"] == nil || res.FinalState["covered"] != "canned" {
				t.Errorf("final state %v", res.FinalState)
			}
			if tt.wantErr == "" {
				if o.code != 0 || res.FinalState["uncovered"] != "real reply" {
					t.Errorf("exit %d, final state %v, errors %v", o.code, res.FinalState, res.Errors)
				}
				return
			}
			want := strings.ReplaceAll(tt.wantErr, "RESP", resp)
			if o.code != 1 || len(res.Errors) != 1 || res.Errors[0]["agent_name"] != "uncovered" ||
				!strings.HasPrefix(res.Errors[0]["message"].(string), want) {
				t.Errorf("exit %d, errors %v, want one for uncovered: %s", o.code, res.Errors, want)
			}
		})
	}
}

// TestLiveAndResponsesNameKnownAgents: --live and the responses file must
// name agents of the ensemble; a misspelling is a usage error with a
// suggestion, before anything runs.
func TestLiveAndResponsesNameKnownAgents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, responses string
		flags           []string
		want            string
	}{
		{"live", "covered: [x]\n", []string{"--live", "uncoverd"}, `ensemble: --live: unknown agent "uncoverd"; did you mean "uncovered"?`},
		{"responses", "covered: [x]\nuncoverd: [y]\n", nil, `RESP:2:1: unknown agent "uncoverd" in responses; did you mean "uncovered"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := countingServer(t)
			dir := liveEnsemble(t, tt.responses)
			resp := filepath.Join(dir, "responses.yaml")
			args := append([]string{"run", filepath.Join(dir, "ensemble.yaml"), "--responses", resp}, tt.flags...)
			o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": "k"}, args...)
			want := strings.ReplaceAll(tt.want, "RESP", resp)
			if o.code != 2 || strings.TrimSpace(o.stderr) != want || o.stdout != "" || srv.Count() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", o.code, o.stdout, o.stderr, want)
			}
		})
	}
}

// TestVerboseShowsStderr: --verbose adds each execution's stderr tail to the
// text summary, indented under it; without it the summary has none.
func TestVerboseShowsStderr(t *testing.T) {
	t.Parallel()
	dir := liveEnsemble(t, "covered: [a]\nuncovered: [b]\n")
	base := []string{"run", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml"), "--output", "text"}
	env := map[string]string{"TEST_LLM_URL": "http://127.0.0.1:1/v1", "TEST_LLM_KEY": "k", "PATH": os.Getenv("PATH")}
	o := ensembleEnv(t, env, append(base, "--verbose")...)
	if want := "stderr:\n  turn 1, fetch (execution 1):\n    fetching\n"; o.code != 0 || !strings.Contains(o.stdout, want) {
		t.Errorf("exit %d, stdout %q, want it to contain %q (stderr %s)", o.code, o.stdout, want, o.stderr)
	}
	if o := ensembleEnv(t, env, base...); o.code != 0 || strings.Contains(o.stdout, "fetching") {
		t.Errorf("without --verbose: exit %d, stdout %q", o.code, o.stdout)
	}
}
