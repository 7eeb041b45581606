package ensemble_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/ensemble-run/ensemble/ensemble"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const budgetFile = `name: budgets
models:
  main:
    provider: ollama
    model: m
    pricing: {input_per_million: 0.15, output_per_million: 0.6}
    fallback: [backup]
  backup:
    provider: ollama
    model: b
agents:
  - name: writer
    model_profile: main
    budget: {max_tokens: 1000, max_cost: 0.5}
    retry: {attempts: 3, backoff: 250ms}
  - name: checker
    model_profile: backup
    retry: {attempts: 2, backoff: 2}
    budget: {max_requests: 4}
conversation_limits:
  max_tokens: 100000
  max_requests: 50
  max_cost: 2.5
`

func TestBudgetFields(t *testing.T) {
	t.Parallel()
	e, err := Load(writeFile(t, "e.yaml", budgetFile), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if b := e.Limits.Budget; b == nil || *b != (Budget{MaxTokens: 100000, MaxRequests: 50, MaxCost: 2.5}) {
		t.Fatalf("run budget %+v", b)
	}
	w, c := e.Agent("writer"), e.Agent("checker")
	if *w.Budget != (Budget{MaxTokens: 1000, MaxCost: 0.5}) || *c.Budget != (Budget{MaxRequests: 4}) {
		t.Fatalf("agent budgets %+v %+v", w.Budget, c.Budget)
	}
	if *w.Retry != (Retry{Attempts: 3, Backoff: 250 * time.Millisecond}) || *c.Retry != (Retry{Attempts: 2, Backoff: 2 * time.Second}) {
		t.Fatalf("retries %+v %+v", w.Retry, c.Retry)
	}
	m := e.Models["main"]
	if *m.Pricing != (Pricing{InputPerMillion: 0.15, OutputPerMillion: 0.6}) || len(m.Fallback) != 1 || m.Fallback[0] != "backup" {
		t.Fatalf("profile %+v", m)
	}
	if got := m.Pricing.Cost(1_000_000, 500_000); got != 0.45 {
		t.Fatalf("cost %v", got)
	}
}

func TestBudgetFieldErrors(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "bad.yaml", `name: bad
models:
  main:
    provider: ollama
    model: m
    pricing: {input_per_million: -1}
    fallback: [bakup, main, other, other]
  backup2:
    provider: ollama
    model: o
  other:
    provider: ollama
    model: o
agents:
  - name: writer
    model_profile: main
    budget: {}
    retry: {backoff: soon}
  - name: reader
    model_profile: main
    budget: {max_cost: 0, max_tokens: 0}
    retry: {attempts: 0}
conversation_limits:
  max_requests: 0
`)
	_, err := Load(path, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, path,
		`6:14: pricing of model profile "main": output_per_million is required`,
		`6:34: pricing of model profile "main": input_per_million must not be negative, got -1`,
		`7:16: model profile "main": unknown fallback profile "bakup"; did you mean "backup2"?`,
		`7:23: model profile "main": fallback lists the profile itself`,
		`7:36: model profile "main": fallback lists "other" twice`,
		`17:13: budget of agent "writer" sets no limit: give max_tokens, max_requests or max_cost`,
		`18:12: retry of agent "writer": attempts is required`,
		`18:22: retry of agent "writer": backoff must be a duration such as 1s or 250ms, or a number of seconds, got "soon"`,
		`21:24: budget of agent "reader": max_cost must be more than 0, got 0`,
		`21:39: budget of agent "reader": max_tokens must be at least 1, got 0`,
		`22:23: retry of agent "reader": attempts must be at least 1, got 0`,
		`24:17: conversation_limits: max_requests must be at least 1, got 0`,
	)
}
