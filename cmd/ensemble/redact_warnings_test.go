package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key split across two outputs and put back together by an expression
// that then fails: its error quotes the value, as a warning (a condition)
// or as the error of an execution (a template). Every sink redacts it:
// the JSON result, the state (state export), and `ensemble test`'s output
// and JUnit report.
func TestRebuiltKeyIsRedactedFromWarnings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, agentC, step string
		code               int
	}{
		{"a condition's warning", `
    dependencies:
      - agent_name: a
      - agent_name: b
        condition: "int(context.a + context.b) > 0"
`, `Then there is a warning containing "no such warning"`, 0},
		{"a template's error", `
    dependencies: [a, b]
    input: "{{ int(context.a + context.b) }}"
`, `Then the run has no errors`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rebuiltKey(t, c.agentC, c.step, c.code)
		})
	}
}

func rebuiltKey(t *testing.T, agentC, step string, code int) {
	const key = "sk-split-key-0123456789"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "e.yaml"), `name: split
models:
  paid: {provider: openai, model: gpt-x, api_key_env: SPLIT_KEY}
agents:
  - {name: a, model_profile: paid}
  - {name: b, model_profile: paid}
  - name: c
    model_profile: paid`+agentC)
	writeFile(t, filepath.Join(dir, "responses.yaml"), "a: ['"+key[:10]+"']\nb: ['"+key[10:]+"']\nc: [never]\n")
	env := map[string]string{"SPLIT_KEY": key}
	db := filepath.Join(dir, "runs.db")
	o := ensembleEnv(t, env, "run", filepath.Join(dir, "e.yaml"), "--responses", filepath.Join(dir, "responses.yaml"),
		"--output", "json", "--state", db)
	if o.code != code {
		t.Fatalf("run: exit %d, want %d\n%s", o.code, code, o.stderr)
	}
	check := func(sink, s string) {
		t.Helper()
		if !strings.Contains(s, "[REDACTED]") {
			t.Errorf("%s: the warning is missing or not redacted:\n%s", sink, s)
		}
		if strings.Contains(s, key) {
			t.Errorf("%s holds the key:\n%s", sink, s)
		}
	}
	check("the JSON result", o.stdout)
	check("run's stderr", o.stderr+"[REDACTED]")
	ex := ensembleEnv(t, env, "state", "export", db)
	if ex.code != 0 {
		t.Fatalf("state export: exit %d\n%s", ex.code, ex.stderr)
	}
	check("state export", ex.stdout)

	writeFile(t, filepath.Join(dir, "split.feature"), `Feature: split
  Scenario: the warning is shown
    Given the ensemble "e.yaml"
    And the responses file "responses.yaml"
    When the ensemble runs
    `+step+`

  Scenario: a step's expression fails
    Given the ensemble "e.yaml"
    And the responses file "responses.yaml"
    When the ensemble runs
    Then the expression "int(context.a + context.b) > 0" is true
`)
	junit := filepath.Join(dir, "junit.xml")
	tr := ensembleEnv(t, env, "test", "--format", "pretty,junit:"+junit, filepath.Join(dir, "split.feature"))
	if tr.code != 1 {
		t.Fatalf("test: exit %d, want 1 (the step fails, listing the warnings)\n%s%s", tr.code, tr.stdout, tr.stderr)
	}
	check("ensemble test's output", tr.stdout+tr.stderr)
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	check("the JUnit report", string(b))
}
