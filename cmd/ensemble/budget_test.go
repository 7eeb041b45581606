package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/internal/parity"
	"github.com/ensemble-run/ensemble/state"
)

// TestBudgetExceededThenResumeWithAHigherCap: a durable run stops with exit
// code 6 when its budget is spent, shows the spend, and resume --max-requests
// lets it finish.
func TestBudgetExceededThenResumeWithAHigherCap(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, fakemodel.Text("fine"), fakemodel.WithUsage(1000, 500))
	dir := t.TempDir()
	path := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(path, []byte(`name: budget-cli
models:
  local:
    provider: openai
    model: test-model
    base_url: ${TEST_LLM_URL}
    pricing: {input_per_million: 2, output_per_million: 8}
agents:
  - name: draft
    model_profile: local
    prompt: Draft.
  - name: polish
    model_profile: local
    prompt: Polish.
    dependencies: [draft]
conversation_limits:
  max_requests: 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TEST_LLM_URL": srv.URL()}
	db := filepath.Join(dir, "run.db")
	o := ensembleEnv(t, env, "run", path, "--state", db, "--output", "json")
	if o.code != 6 {
		t.Fatalf("exit %d, want 6: %s", o.code, o.stderr)
	}
	var res struct {
		CompletionReason string                  `json:"completion_reason"`
		TurnCount        int                     `json:"turn_count"`
		Usage            state.Usage             `json:"usage"`
		UsageByAgent     map[string]*state.Usage `json:"usage_by_agent"`
		Errors           []struct{ AgentName, Message string }
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.CompletionReason != "budget_exceeded" || res.TurnCount != 1 || srv.Count() != 1 {
		t.Fatalf("reason %q, turns %d, requests %d", res.CompletionReason, res.TurnCount, srv.Count())
	}
	// 1000 input tokens at 2 per million, 500 output at 8: 0.006.
	if res.Usage.Cost != 0.006 || res.UsageByAgent["draft"].Cost != 0.006 || res.UsageByAgent["polish"] != nil {
		t.Fatalf("usage %+v, by agent %v", res.Usage, res.UsageByAgent)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "max_requests 1 reached") {
		t.Fatalf("errors %+v", res.Errors)
	}

	// The state shows it; resume without a higher cap is refused before
	// anything runs (its stopped turn would pay again and stop again), with
	// one the run finishes.
	if o := ensembleEnv(t, env, "state", "show", db, "--output", "text"); !strings.Contains(o.stdout, "budget_exceeded") || !strings.Contains(o.stdout, "cost") {
		t.Fatalf("state show:\n%s%s", o.stdout, o.stderr)
	}
	if o := ensembleEnv(t, env, "resume", db, "--output", "json"); o.code != 2 || !strings.Contains(o.stderr, "raise the run's cap with --max-cost, --max-tokens or --max-requests") || srv.Count() != 1 {
		t.Fatalf("resume without a higher cap: exit %d, %d requests: %s", o.code, srv.Count(), o.stderr)
	}
	if o := ensembleEnv(t, env, "resume", db, "--max-requests", "0"); o.code != 2 {
		t.Fatalf("--max-requests 0: exit %d", o.code)
	}
	o = ensembleEnv(t, env, "resume", db, "--max-requests", "5", "--output", "text")
	if o.code != 0 {
		t.Fatalf("resume --max-requests 5: exit %d: %s", o.code, o.stderr)
	}
	for _, want := range []string{"cost", "polish", "usage: 2 requests"} {
		if !strings.Contains(o.stdout+o.stderr, want) {
			t.Fatalf("the summary lacks %q:\n%s", want, o.stdout+o.stderr)
		}
	}
}

// TestRetryEventsInJSONL: a script that fails once is tried again, and the
// stream shows the failed attempt.
func TestRetryEventsInJSONL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := "#!/bin/sh\nif [ ! -f tried ]; then touch tried; echo 'not yet' >&2; exit 3; fi\necho ok\n"
	if err := os.WriteFile(filepath.Join(dir, "flaky.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(path, []byte("name: retry-cli\nagents:\n  - name: flaky\n    script: flaky.sh\n    retry: {attempts: 3, backoff: 1ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ensembleCmd(t, "", "run", path, "--output", "jsonl")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	r := parseJSONL(t, o.stdout)
	if r.counts["agent_retry"] != 1 || r.counts["agent_completed"] != 1 || !strings.Contains(o.stdout, `"attempt":1`) || !strings.Contains(o.stdout, "exited with code 3") {
		t.Fatalf("counts %v:\n%s", r.counts, o.stdout)
	}
}

// TestBudgetInsideAToolLoop: the run's max_requests stops an LLM agent in
// the middle of its tool loop, before the request that would pass it.
func TestBudgetInsideAToolLoop(t *testing.T) {
	t.Parallel()
	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Calls: []fakemodel.Call{{ID: fmt.Sprintf("call_%d", r.N+1), Name: "lookup", Args: "{}"}}}
	})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lookup.sh"), []byte("#!/bin/sh\necho found\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(path, []byte(`name: tool-budget
models:
  local: {provider: openai, model: m, base_url: "${TEST_LLM_URL}"}
tools:
  - name: lookup
    description: Looks something up.
    script: lookup.sh
agents:
  - name: researcher
    model_profile: local
    prompt: Research.
    tools: [lookup]
conversation_limits:
  max_requests: 3
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ensembleEnv(t, map[string]string{"TEST_LLM_URL": srv.URL()}, "run", path, "--output", "jsonl")
	if o.code != 6 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	// The cut turn is not committed: no outcome events, so the stream's
	// counts are not the result's (parseJSONL's check); count by hand.
	count := func(ty string) int { return strings.Count(o.stdout, `"type":"`+ty+`"`) }
	if srv.Count() != 3 || count("tool_call_completed") != 3 || count("budget_exceeded") != 1 || count("agent_failed") != 0 {
		t.Fatalf("requests %d:\n%s", srv.Count(), o.stdout)
	}
	for _, want := range []string{`"completion_reason": "budget_exceeded"`, `max_requests 3 reached (3 made)`, `"usage_by_agent"`} {
		if !strings.Contains(o.stdout, want) && !strings.Contains(strings.ReplaceAll(o.stdout, `":"`, `": "`), want) {
			t.Fatalf("the stream lacks %s:\n%s", want, o.stdout)
		}
	}
}

// resume's help names the budget flags among the overrides it keeps, and
// says how a run stopped by its budget goes on.
func TestResumeHelpNamesBudgetFlags(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "resume", "--help")
	help := strings.Join(strings.Fields(o.stdout), " ")
	for _, want := range []string{"--parallel, --max-tokens, --max-requests, --max-cost) as it was started with", "A run stopped by its budget (exit 6) goes on when resumed with a higher cap"} {
		if !strings.Contains(help, want) {
			t.Errorf("resume --help does not say %q:\n%s", want, o.stdout)
		}
	}
}

// --max-cost with no priced profile would protect nothing: run says so.
func TestMaxCostWithoutPricingWarns(t *testing.T) {
	t.Parallel()
	ex := "../../examples/writer-reviewer/"
	const warn = "warning: --max-cost is never reached: no model profile has pricing"
	o := ensembleCmd(t, "", "run", ex+"ensemble.yaml", "--responses", ex+"responses.yaml", "--max-cost", "1")
	if o.code != 0 || !strings.Contains(o.stderr, warn) {
		t.Fatalf("exit %d, stderr %q", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "run", ex+"ensemble.yaml", "--responses", ex+"responses.yaml", "--max-cost", "1", "-q"); strings.Contains(o.stderr, warn) {
		t.Fatalf("-q: stderr %q", o.stderr)
	}
}

// TestBudgetStoppedRunIsSavedWithItsErrors: a run stopped by its budget
// is saved with the errors its result names (the turn it cut short, never
// committed), in a state database and in a JSON state file alike: state
// show prints the result run printed, state export holds them; a resume
// with a higher cap plays the stopped turn again, and its result, and the
// saved run's after it, have no stale error.
func TestBudgetStoppedRunIsSavedWithItsErrors(t *testing.T) {
	t.Parallel()
	srv := parity.Start(t)
	env := srv.Env(false)
	var c parity.Case
	for _, k := range parity.Cases() {
		if k.Name == "budget" {
			c = k
		}
	}
	for _, format := range []string{"database", "JSON state file"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "run.db")
			path := db
			var o outcome
			if format == "database" {
				o = ensembleEnv(t, env, "run", c.Path(), "--state", db, "--output", "json")
			} else {
				// A JSON state file of an unfinished run (turn 1 of 3),
				// resumed until its budget stops it.
				if o := ensembleEnv(t, env, "run", c.Path(), "--state", db, "--max-turns", "1"); o.code != 3 {
					t.Fatalf("one turn: exit %d %s", o.code, o.stderr)
				}
				path = filepath.Join(dir, "run.json")
				b := strings.Replace(string(exportState(t, db, "")), `"completion_reason": "max_total_turns"`, `"completion_reason": ""`, 1)
				if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
					t.Fatal(err)
				}
				o = ensembleEnv(t, env, "resume", path, "--max-turns", "50", "--output", "json")
			}
			if o.code != 6 || !strings.Contains(o.stdout, `stopped before it finished: the run's budget was exceeded`) {
				t.Fatalf("run: exit %d, want 6 and the stopped execution in errors\n%s%s", o.code, o.stdout, o.stderr)
			}
			want := parity.Normalize(t, []byte(o.stdout))
			show := ensembleEnv(t, env, "state", "show", path, "--output", "json")
			if show.code != 0 || parity.Normalize(t, []byte(show.stdout)) != want {
				t.Fatalf("state show: exit %d\n%s\nwant (run)\n%s\n%s", show.code, parity.Normalize(t, []byte(show.stdout)), want, show.stderr)
			}
			sf, _, err := durable.Load(path, "")
			if err != nil {
				t.Fatal(err)
			}
			if export := string(exportState(t, path, "")); sf.CompletionReason != "budget_exceeded" || sf.State.Executions("c") != 0 ||
				sf.Stopped == nil || len(sf.Stopped.Errors) != 1 || sf.Stopped.Errors[0].AgentName != "c" || !strings.Contains(export, `"stopped": {`) {
				t.Fatalf("the saved run: c must be stopped, not committed:\n%s", export)
			}

			// A higher cap: the stopped turn (c) runs again, and nothing
			// of the first ending stays.
			o = ensembleEnv(t, env, "resume", path, "--max-requests", "5", "--output", "json")
			var res struct {
				CompletionReason    string           `json:"completion_reason"`
				AgentExecutionCount map[string]int   `json:"agent_execution_count"`
				Errors              []map[string]any `json:"errors"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &res); err != nil || o.code != 0 || res.CompletionReason != "completed" ||
				res.AgentExecutionCount["c"] != 1 || len(res.Errors) != 0 {
				t.Fatalf("resume --max-requests 5: exit %d (%v)\n%s%s", o.code, err, o.stdout, o.stderr)
			}
			want = parity.Normalize(t, []byte(o.stdout))
			show = ensembleEnv(t, env, "state", "show", path, "--output", "json")
			if show.code != 0 || parity.Normalize(t, []byte(show.stdout)) != want {
				t.Fatalf("state show after the resume: exit %d\n%s\nwant (resume)\n%s", show.code, parity.Normalize(t, []byte(show.stdout)), want)
			}
			if export := string(exportState(t, path, "")); strings.Contains(export, `"stopped"`) {
				t.Fatalf("the resumed run keeps what its first ending reported:\n%s", export)
			}
		})
	}
}
