package bdd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/agent"
)

// Every documented example matches its own step, and only that one: no
// step is ambiguous.
func TestStepExamplesMatchExactlyTheirStep(t *testing.T) {
	for i, d := range stepDefs {
		text := strings.TrimPrefix(d.Example, d.Keyword+" ")
		var matches []int
		for j, o := range stepDefs {
			if regexp.MustCompile(o.re).MatchString(text) {
				matches = append(matches, j)
			}
		}
		if !slices.Equal(matches, []int{i}) {
			t.Errorf("%q matches steps %v, want only %d", d.Example, matches, i)
		}
	}
}

func TestDocValue(t *testing.T) {
	for _, tc := range []struct {
		media, content string
		textOK         bool
		want           any
		isText         bool
		err            string
	}{
		{"", `{"a": 1}`, true, map[string]any{"a": 1.0}, false, ""},
		{"", `[1, "x"]`, true, []any{1.0, "x"}, false, ""},
		{"", "plain words: with a colon", true, "plain words: with a colon", true, ""},
		{"", "42", false, 42.0, false, ""},
		{"", "", false, nil, false, "it is empty"},
		{"", "{\"a\": 1,\n \"b\" 2}", true, nil, false, "line 2, column 6"},
		{"", `{"a": 1`, true, nil, false, "ends before the value does"},
		{"", `{"a": 1} {"b": 2}`, true, nil, false, "more than one JSON value"},
		{"json", `"text"`, true, "text", false, ""},
		{"yaml", "a: [1, 2]\nb: true", true, map[string]any{"a": []any{1.0, 2.0}, "b": true}, false, ""},
		{"yaml", "just text", true, "just text", true, ""},
		{"yaml", "a: [1, 2\nb: c", true, nil, false, "not valid YAML"},
		{"text", `{"not": "parsed"}`, true, `{"not": "parsed"}`, true, ""},
		{"xml", "<a/>", true, nil, false, `type "xml" is unknown`},
	} {
		v, isText, err := docValue(&godog.DocString{MediaType: tc.media, Content: tc.content}, tc.textOK)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: error %v, want one containing %q", tc.media, tc.content, err, tc.err)
			}
			continue
		}
		if err != nil || isText != tc.isText || !equalValues(v, tc.want) {
			t.Errorf("%s %q: %#v, %v, %v; want %#v, %v", tc.media, tc.content, v, isText, err, tc.want, tc.isText)
		}
	}
	if _, _, err := docValue(nil, true); err == nil || !strings.Contains(err.Error(), "needs a doc string") {
		t.Errorf("no doc string: %v", err)
	}
}

func TestSplitLine(t *testing.T) {
	for in, want := range map[string][2]string{
		"a/b.feature":      {"a/b.feature", ""},
		"a/b.feature:12":   {"a/b.feature", ":12"},
		"c:/x/b.feature":   {"c:/x/b.feature", ""},
		"a/b.feature:":     {"a/b.feature:", ""},
		"a/b.feature:12x3": {"a/b.feature:12x3", ""},
	} {
		f, l := splitLine(in)
		if f != want[0] || l != want[1] {
			t.Errorf("splitLine(%q) = %q, %q; want %q, %q", in, f, l, want[0], want[1])
		}
	}
}

func TestSuggest(t *testing.T) {
	for step, want := range map[string]string{
		"the ensemble run":                 "When the ensemble runs",
		`agent "x" ran 3 time`:             `Then agent "x" ran 3 times`,
		`agent "classify" runs 1 time`:     `Then agent "classify" ran 1 time`,
		`the run has 1 error`:              `Then the run has 1 error`,
		`agent "x" runs twice`:             `Then agent "llm_analyzer" ran 2 times`,
		`"x" answer "{\"approvd\": 1}"`:    `When "reviewer" answers "{\"approved\": true}"`,
		`the completion reason was "done"`: `Then the completion reason is "done"`,
		"the moon is made of cheese":       "",
	} {
		if got := Suggest(step); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", step, got, want)
		}
	}
}

func TestSnippetFilterDropsGoSnippetsAndLocations(t *testing.T) {
	var out bytes.Buffer
	f := &snippetFilter{w: &out}
	in := "  Given the ensemble \"e.yaml\"   # scenario.go:97 -> *Scenario\n" +
		"  Scenario: x   # a.feature:3\n" +
		"\x1b[32mWhen the ensemble runs\x1b[0m \x1b[1;30m# scenario.go:97 -> *Scenario\x1b[0m\n" +
		"1 scenarios (1 undefined)\n\n" +
		"You can implement step definitions for undefined steps with these snippets:\n" +
		"func theEnsembleRun() error {\n"
	// Written in small pieces, as formatters do.
	for i := 0; i < len(in); i += 7 {
		f.Write([]byte(in[i:min(i+7, len(in))]))
	}
	f.flush()
	want := "  Given the ensemble \"e.yaml\"\n" +
		"  Scenario: x   # a.feature:3\n" +
		"\x1b[32mWhen the ensemble runs\x1b[0m\n" +
		"1 scenarios (1 undefined)\n\n"
	if out.String() != want {
		t.Errorf("filtered:\n%q\nwant:\n%q", out.String(), want)
	}
}

func TestFindFeatures(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b.feature", "a/z.feature", "a/notes.txt", ".hidden/h.feature", "a/.git/g.feature"} {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("Feature: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FindFeatures([]string{dir, filepath.Join(dir, "b.feature:3"), filepath.Join(dir, "b.feature")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a/z.feature"), filepath.Join(dir, "b.feature"), filepath.Join(dir, "b.feature:3")}
	if !slices.Equal(got, want) {
		t.Errorf("FindFeatures = %v, want %v", got, want)
	}
	if _, err := FindFeatures([]string{filepath.Join(dir, "nope")}); err == nil || !strings.Contains(err.Error(), "no such file or folder") {
		t.Errorf("a missing path: %v", err)
	}
}

func TestCheckFormat(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.xml")
	for in, want := range map[string]string{
		"":                       "pretty",
		"junit":                  junitFormat,
		"pretty,junit:" + report: "pretty," + junitFormat + ":" + report,
	} {
		if got, err := checkFormat(in); err != nil || got != want {
			t.Errorf("checkFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"html":   `unknown format "html"`,
		"junit:": "file name after : is empty",
	} {
		if _, err := checkFormat(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("checkFormat(%q): %v, want an error containing %q", in, err, msg)
		}
	}
}

// The steps can be driven without godog: a scenario's state is plain.
func TestScenarioWithoutGodog(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "e.yaml"), []byte(`name: e
input: hi
agents:
  - name: asker
    ask: "Yes?"
  - name: answerer
    ask: "And?"
    dependencies: [asker]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewScenario(dir, Options{})
	if err := s.thenReason("completed"); err == nil || !strings.Contains(err.Error(), "has not run yet") {
		t.Errorf("a Then step before the run: %v", err)
	}
	if err := s.givenResponds("asker", `{"ok": true}`); err != nil {
		t.Fatal(err)
	}
	if err := s.givenEnsemble("e.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := s.givenResponds("nobody", "x"); err == nil || !strings.Contains(err.Error(), `has no agent "nobody" (its agents: asker, answerer)`) {
		t.Errorf("unknown agent: %v", err)
	}
	if err := s.whenRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	checks := []error{
		s.thenReason("awaiting_input"),
		s.thenExitCode(5),
		s.thenRunFailed(),
		s.thenOrder("asker"),
		s.thenWaitingFor("answerer"),
		s.thenOutputIs("asker", `{"ok":true}`),
		s.thenExprTrue(`input == "hi" && context.asker.ok`),
		s.thenErrorCount(0),
	}
	for i, err := range checks {
		if err != nil {
			t.Errorf("check %d: %v", i, err)
		}
	}
	if err := s.thenOrder("answerer, asker"); err == nil || err.Error() != `agents ran in order "asker", want "answerer, asker"` {
		t.Errorf("order mismatch message: %v", err)
	}
	if err := s.thenRanTimes("asker", 2); err == nil || !strings.Contains(err.Error(), `agent "asker" ran 1 time, want 2 times`) {
		t.Errorf("count mismatch message: %v", err)
	}
	if err := s.thenOutputContains("answerer", "x"); err == nil || !strings.Contains(err.Error(), `agent "answerer" did not run`) {
		t.Errorf("output of an agent that waits: %v", err)
	}
	// An answer is read as any output: one nested too deep fails the
	// execution, and the agent then has no output.
	if err := s.answer(context.Background(), "answerer", strings.Repeat("[", 600)+strings.Repeat("]", 600)); err != nil {
		t.Fatal(err)
	}
	if err := s.thenOutputContains("answerer", "x"); err == nil || !strings.Contains(err.Error(), "produced no output") {
		t.Errorf("output of a failed agent: %v", err)
	}
	if err := s.thenReason("completed"); err != nil {
		t.Error(err)
	}
	if err := s.whenRuns(context.Background()); err == nil {
		t.Error("a second run in one scenario was allowed")
	}
}

func TestInlineEnsembleAndInput(t *testing.T) {
	s := NewScenario(t.TempDir(), Options{})
	if err := s.givenInlineEnsemble(&godog.DocString{Content: "name: inline\nagents:\n  - name: a\n    ask: \"?\"\n    bogus: 1\n"}); err != nil {
		t.Fatalf("an invalid ensemble fails the steps that need it, not the Given step: %v", err)
	}
	err := s.whenRuns(context.Background())
	if err == nil || !strings.Contains(err.Error(), "doc string line 5, column 5: unknown key \"bogus\"") {
		t.Fatalf("an invalid inline ensemble: %v", err)
	}
	if err := s.givenInlineEnsemble(&godog.DocString{Content: "name: inline\nagents:\n  - name: a\n    ask: \"?\"\n"}); err != nil {
		t.Fatal(err)
	}
	if err := s.givenInputDoc(&godog.DocString{Content: "line one\nline two"}); err != nil {
		t.Fatal(err)
	}
	if err := s.givenRespondsDoc("a", &godog.DocString{MediaType: "yaml", Content: "{answer: 42}"}); err != nil {
		t.Fatal(err)
	}
	if err := s.whenRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.thenExprTrue(`input == "line one\nline two" && context.a.answer == 42`); err != nil {
		t.Error(err)
	}
	if err := s.thenFinalStateIs("a", &godog.DocString{Content: `{"answer": 42}`}); err != nil {
		t.Error(err)
	}
	if err := s.thenFinalStateIs("a", &godog.DocString{Content: `{"answer": 41}`}); err == nil || err.Error() != `final state of "a" is {"answer":42}, want {"answer":41}` {
		t.Errorf("final state mismatch: %v", err)
	}
}

// A report's folder is created, as CI snippets expect
// (--format junit:reports/x.xml in a fresh checkout).
func TestCheckFormatCreatesTheReportFolder(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "reports", "nested", "junit.xml")
	if _, err := checkFormat("pretty,junit:" + report); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(report); err != nil {
		t.Errorf("the report was not created: %v", err)
	}
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkFormat("junit:" + filepath.Join(file, "r.xml")); err == nil || !strings.Contains(err.Error(), "cannot create the report") {
		t.Errorf("a report below a file: %v", err)
	}
}

// Tag expressions godog would crash on, or silently match nothing with
// (Cucumber's newer syntax), are usage errors.
func TestCheckTags(t *testing.T) {
	for _, ok := range []string{"", "@smoke", "~@slow", "@a && ~@b", "@a,@b && @c", " @a , ~@b ", "smoke"} {
		if err := checkTags(ok); err != nil {
			t.Errorf("checkTags(%q): %v", ok, err)
		}
	}
	for in, msg := range map[string]string{
		"@smoke &&":        `an empty tag`,
		"@a,":              `an empty tag`,
		"~":                `an empty tag`,
		"not @smoke":       `"not @smoke" is not a tag`,
		"@a and @b":        `"@a and @b" is not a tag`,
		"@a or @b":         `"@a or @b" is not a tag`,
		"(@a || @b)":       `"(@a || @b)" is not a tag`,
		"@a||@b":           `"@a||@b" is not a tag`,
		"!@a":              `"!@a" is not a tag`,
		"@smoke && not @x": `"not @x" is not a tag`,
	} {
		err := checkTags(in)
		if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "~@slow (not)") {
			t.Errorf("checkTags(%q): %v, want an error containing %q and the syntax", in, err, msg)
		}
	}
}

func TestRunRejectsBadTagsWithoutRunning(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.feature")
	if err := os.WriteFile(f, []byte("Feature: a\n  @x\n  Scenario: s\n    Given the turn limit is 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tags := range []string{"@x &&", "not @x"} {
		var out bytes.Buffer
		code, err := Run(RunOptions{Paths: []string{f}, Tags: tags, Output: &out, Stderr: &out})
		if code != ExitUsage || err == nil {
			t.Errorf("--tags %q: exit %d, %v; want %d and an error\n%s", tags, code, err, ExitUsage, out.String())
		}
	}
}

// FILE:LINE must name the line of a scenario, or nothing would run and the
// run would pass.
func TestLineMustNameAScenario(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.feature")
	src := "Feature: a\n\n  Scenario: one\n    Given the turn limit is 3\n\n  Rule: r\n    Scenario Outline: two <n>\n      Given the turn limit is <n>\n      Examples:\n        | n |\n        | 4 |\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"3", "7"} {
		if _, _, err := checkSyntax([]string{f + ":" + line}); err != nil {
			t.Errorf("line %s: %v", line, err)
		}
	}
	_, _, err := checkSyntax([]string{f + ":4"})
	if err == nil || !strings.Contains(err.Error(), f+":4: no scenario starts at line 4 (scenarios start at lines 3, 7)") {
		t.Errorf("a step's line: %v", err)
	}
}

// A file named explicitly must be a feature file: an ensemble given by
// mistake is not parsed as Gherkin line by line.
func TestFindFeaturesRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	y := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(y, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FindFeatures([]string{y}); err == nil || !strings.Contains(err.Error(), y+" is not a .feature file") {
		t.Errorf("an ensemble as a path: %v", err)
	}
}

// Validating a file that does not exist is bad input, not an invalid
// ensemble; "invalid with an error containing" searches the problems, not
// the header or the path of the message around them.
func TestValidatedSteps(t *testing.T) {
	dir := t.TempDir()
	s := NewScenario(dir, Options{})
	if err := s.whenValidated("broken.yaml"); err == nil || !strings.Contains(err.Error(), `the ensemble "broken.yaml" does not exist`) {
		t.Errorf("validating a missing file: %v", err)
	}
	if err := s.thenInvalid("broken"); err == nil {
		t.Error("a missing file passed as an invalid ensemble")
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("name: broken\nagents:\n  - name: a\n    ask: x\n    bogus: 1\n  - name: b\n    ask: y\n    dependencies: [nobody]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.whenValidated("broken.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{`unknown key "bogus"`, `broken.yaml:8:`, "nobody"} {
		if err := s.thenInvalid(sub); err != nil {
			t.Errorf("containing %q: %v", sub, err)
		}
	}
	for _, sub := range []string{"is invalid", `"broken.yaml"`, "\n"} {
		if err := s.thenInvalid(sub); err == nil {
			t.Errorf("containing %q passed: it is in no problem", sub)
		}
	}
	err := s.thenInvalid("mutually exclusive")
	if err == nil || !strings.Contains(err.Error(), `no problem contains "mutually exclusive"; the problems:`) || !strings.Contains(err.Error(), `unknown key "bogus"`) {
		t.Errorf("a mismatch: %v", err)
	}
}

// The step phrasings of the documentation's examples, exactly as written
// there, in a feature file run by Run: each is defined and does what it
// says.
func TestDocumentedPhrasingsRunAsWritten(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"examples/iterative-analysis/ensemble.yaml": `name: spec-steps
input: "default input"
models:
  m: {provider: openai, model: none, base_url: "http://127.0.0.1:9/v1"}
agents:
  - name: data_extractor
    script: scripts/extract.sh
  - name: llm_analyzer
    model_profile: m
    prompt: Analyze.
    dependencies:
      - data_extractor
      - agent_name: user_clarification
        requires_all: false
        condition: 'context.user_clarification != "stop"'
    conversation: {max_turns: 3}
  - name: user_clarification
    ask: "Which region?"
    dependencies:
      - agent_name: llm_analyzer
        condition: 'context.llm_analyzer == "plain text reply" || (context.llm_analyzer?.needs_clarification ?? false) == true'
  - name: final_synthesis
    model_profile: m
    prompt: Report.
    dependencies:
      - agent_name: llm_analyzer
        condition: 'input == "report please"'
  - name: x
    script: scripts/fail.sh
    dependencies:
      - agent_name: user_clarification
        condition: 'context.user_clarification == "fail"'
`,
		"examples/iterative-analysis/scripts/extract.sh": "#!/bin/sh\necho '{\"rows\": 3}'\n",
		"examples/iterative-analysis/scripts/fail.sh":    "#!/bin/sh\necho '{\"success\": false, \"error\": \"upstream timeout\"}'\n",
		"responses.yaml": "user_clarification: [stop]\n",
		"steps.feature": `Feature: The documented steps as written

  Scenario: One clarification that stops the analyzer
    Given the ensemble "examples/iterative-analysis/ensemble.yaml"
    Given the input "Sales figures for Q3"
    Given agent "llm_analyzer" responds "plain text reply"
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    Then agent "final_synthesis" did not run
    Then the agents ran in this order: "data_extractor, llm_analyzer, user_clarification"
    Then the run has no errors

  Scenario: Two analyses
    Given the ensemble "examples/iterative-analysis/ensemble.yaml"
    Given agent "llm_analyzer" responds:
      """
      {"needs_clarification": true}
      """
    Given agent "llm_analyzer" responds:
      """
      {"needs_clarification": false, "analysis": "EMEA grew 12%"}
      """
    Given agent "user_clarification" responds "Q3 only"
    Given the turn limit is 5
    When the ensemble runs
    Then the completion reason is "completed"
    Then agent "llm_analyzer" ran 2 times
    Then the turn count is 4
    Then the output of agent "llm_analyzer" contains "EMEA"
    Then the expression "context.llm_analyzer.needs_clarification == false" is true

  Scenario: A failing agent
    Given the ensemble "examples/iterative-analysis/ensemble.yaml"
    Given agent "llm_analyzer" responds "plain text reply"
    Given agent "user_clarification" responds "fail"
    When the ensemble runs
    Then agent "x" failed with an error containing "timeout"
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{filepath.Join(dir, "steps.feature")}, Format: "pretty", NoColors: true, Output: &out, Stderr: &stderr})
	if code != ExitPassed || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out.String(), stderr.String())
	}
	if !strings.Contains(out.String(), "3 scenarios (3 passed)") || !strings.Contains(out.String(), "25 steps (25 passed)") {
		t.Errorf("not every step passed:\n%s", out.String())
	}
	for _, step := range []string{
		`Given the ensemble "examples/iterative-analysis/ensemble.yaml"`,
		`Given the input "Sales figures for Q3"`,
		`Given agent "llm_analyzer" responds "plain text reply"`,
		`Given agent "llm_analyzer" responds:`,
		`Given the responses file "responses.yaml"`,
		`Given the turn limit is 5`,
		`When the ensemble runs`,
		`Then the completion reason is "completed"`,
		`Then agent "llm_analyzer" ran 2 times`,
		`Then agent "final_synthesis" did not run`,
		`Then the agents ran in this order: "data_extractor, llm_analyzer, user_clarification"`,
		`Then the turn count is 4`,
		`Then the run has no errors`,
		`Then agent "x" failed with an error containing "timeout"`,
		`Then the output of agent "llm_analyzer" contains "EMEA"`,
		`Then the expression "context.llm_analyzer.needs_clarification == false" is true`,
	} {
		if !strings.Contains(files["steps.feature"], "    "+step+"\n") {
			t.Errorf("the feature does not use the documented step %s", step)
		}
	}
}

// Nothing carries over from one scenario to the next: responses left
// unused, the input, the limits, the ensemble and the result.
func TestEveryScenarioIsFresh(t *testing.T) {
	dir := t.TempDir()
	feature := `Feature: fresh

  Scenario: leaves things behind
    Given the ensemble:
      """
      name: first
      input: first input
      agents:
        - name: asker
          ask: "?"
          conversation: {max_turns: 2}
        - name: echo
          ask: "!"
          dependencies: [asker]
          conversation: {max_turns: 2}
      """
    And agent "asker" responds "one"
    And agent "asker" responds "left over"
    And agent "echo" responds "e1"
    And the input "changed"
    And the turn limit is 1
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And the output of agent "asker" is "one"

  Scenario: sees none of it
    Given the ensemble:
      """
      name: second
      input: second input
      agents:
        - name: asker
          ask: "?"
        - name: echo
          ask: "!"
          dependencies: [asker]
      """
    And agent "asker" responds "two"
    When the ensemble runs
    Then the run is waiting for input from "echo"
    And the output of agent "asker" is "two"
    And the turn count is 1
    And the expression "input == \"second input\"" is true
`
	f := filepath.Join(dir, "fresh.feature")
	if err := os.WriteFile(f, []byte(feature), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{f}, Format: "progress", Output: &out, Stderr: &out})
	if code != ExitPassed || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
}

// A step given a doc string or a table it does not take, or missing one it
// needs, fails with a message saying so: godog would ignore the extra
// block (a silent mistake) and report a missing one in terms of Go.
func TestStepArgumentsAreChecked(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "e.yaml"), []byte("name: e\nagents:\n  - name: a\n    ask: \"?\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	feature := `Feature: arguments

  Scenario: a doc string where none is taken
    Given the ensemble "e.yaml"
    And agent "a" responds "x"
    When the ensemble runs
      """
      some input
      """

  Scenario: a missing doc string
    Given the ensemble "e.yaml"
    And agent "a" responds:
    When the ensemble runs

  Scenario: a table for a doc string
    Given the ensemble "e.yaml"
    And agent "a" responds:
      | x |

  Scenario: a missing table
    Given the ensemble "e.yaml"
    And agent "a" responds "x"
    When the ensemble runs
    Then the conversation history is:

  Scenario: a table where none is taken
    Given the ensemble "e.yaml"
      | a |

  Scenario: all fine
    Given the ensemble "e.yaml"
    And agent "a" responds:
      """
      x
      """
    When the ensemble runs
    Then the conversation history is:
      | agent |
      | a     |
`
	f := filepath.Join(dir, "args.feature")
	if err := os.WriteFile(f, []byte(feature), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{f}, Format: "junit", Output: &out, Stderr: &out})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v; want %d\n%s", code, err, ExitFailed, out.String())
	}
	for _, want := range []string{
		`Step When the ensemble runs (` + f + `:6): this step takes no doc string: remove the block below it`,
		`Step And agent &#34;a&#34; responds: (` + f + `:13): this step needs a doc string (a block between &#34;&#34;&#34; lines) below it`,
		`agent &#34;a&#34; responds: (` + f + `:18): this step takes a doc string (a block between &#34;&#34;&#34; lines), not a table`,
		`Step Then the conversation history is: (` + f + `:25): this step needs a table below it`,
		`Step Given the ensemble &#34;e.yaml&#34; (` + f + `:28): this step takes no table: remove the table below it`,
		`<testcase name="all fine" classname="arguments"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %s:\n%s", want, out.String())
		}
	}
}

// Responses queue per agent in the order the steps give them, a responses
// file's after the earlier steps' and before the later ones'; a JSON doc
// string is the output itself, also when it is a string.
func TestResponsesQueueInStepOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("e.yaml", `name: e
agents:
  - name: start
    ask: "Go?"
  - name: ping
    ask: "?"
    dependencies:
      - start
      - agent_name: pong
        requires_all: false
    conversation: {max_turns: 5}
  - name: pong
    ask: "!"
    dependencies: [ping]
    conversation: {max_turns: 5}
`)
	write("r.yaml", "ping: [b, c]\n")
	s := NewScenario(dir, Options{})
	steps := []error{
		s.givenEnsemble("e.yaml"),
		s.givenResponds("start", "go"),
		s.givenResponds("ping", "a"),
		s.givenResponsesFile("r.yaml"),
		s.givenResponds("ping", "d"),
		s.givenRespondsDoc("ping", &godog.DocString{MediaType: "json", Content: `"42"`}),
	}
	for range 5 {
		steps = append(steps, s.givenResponds("pong", "ok"))
	}
	steps = append(steps, s.whenRuns(context.Background()))
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	var got []any
	for _, r := range s.Result().ConversationHistory {
		if r.AgentName == "ping" {
			got = append(got, r.OutputData)
		}
	}
	if want := []any{"a", "b", "c", "d", "42"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ping's outputs %#v, want %#v", got, want)
	}
}

// A pretty or progress report written to a file has no colours, no Go
// locations of step definitions and no Go snippets, as on stdout.
func TestFileReportsAreForPeople(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "u.feature")
	if err := os.WriteFile(f, []byte("Feature: u\n  Scenario: s\n    Given the turn limit is 3\n    When the ensemble run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pretty, progress := filepath.Join(dir, "pretty.txt"), filepath.Join(dir, "progress.txt")
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{f}, Format: "junit,pretty:" + pretty + ",progress:" + progress, Output: &out, Stderr: &stderr})
	if code != ExitFailed || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	for _, p := range []string{pretty, progress} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		if strings.Contains(s, "\x1b[") || strings.Contains(s, ".go:") || strings.Contains(s, "func ") || !strings.Contains(s, "1 scenarios (1 undefined)") || !strings.HasSuffix(s, "\n") {
			t.Errorf("%s:\n%q", filepath.Base(p), s)
		}
	}
}

// A Given step after the run would change nothing: it fails instead of
// being ignored.
func TestGivenAfterTheRunFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "e.yaml"), []byte("name: e\nagents:\n  - name: a\n    ask: \"?\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "late.feature")
	if err := os.WriteFile(f, []byte(`Feature: late
  Scenario: a response given too late
    Given the ensemble "e.yaml"
    When the ensemble runs
    Then the run is waiting for input from "a"
    Given agent "a" responds "yes"
    Then agent "a" did not fail
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{f}, Format: "progress", Output: &out, Stderr: &out})
	if code != ExitFailed || err != nil || !strings.Contains(out.String(), `the ensemble already ran: Given steps go before When the ensemble runs`) {
		t.Errorf("exit %d, %v\n%s", code, err, out.String())
	}
}

// The ensemble is loaded with the profiles files whatever the order of the
// Given steps; an ensemble that stays invalid fails the run step.
func TestProfilesFileInAnyOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"e.yaml": "name: e\ninput: hi\nagents:\n  - name: a\n    model_profile: small\n    prompt: Answer.\n",
		"p.yaml": "models:\n  small: {provider: openai, model: none, base_url: \"http://127.0.0.1:9/v1\"}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	noProfiles := Options{LookupEnv: func(string) (string, bool) { return "", false }}
	for _, tc := range []struct {
		name  string
		steps []func(*Scenario) error
	}{
		{"ensemble first", []func(*Scenario) error{
			func(s *Scenario) error { return s.givenEnsemble("e.yaml") },
			func(s *Scenario) error { return s.givenResponds("a", "fine") },
			func(s *Scenario) error { return s.givenProfiles("p.yaml") },
		}},
		{"profiles first", []func(*Scenario) error{
			func(s *Scenario) error { return s.givenProfiles("p.yaml") },
			func(s *Scenario) error { return s.givenEnsemble("e.yaml") },
			func(s *Scenario) error { return s.givenResponds("a", "fine") },
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewScenario(dir, noProfiles)
			for i, step := range tc.steps {
				if err := step(s); err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
			}
			if err := s.whenRuns(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := s.thenOutputIs("a", "fine"); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("no profiles", func(t *testing.T) {
		t.Parallel()
		s := NewScenario(dir, noProfiles)
		if err := s.givenEnsemble("e.yaml"); err != nil {
			t.Fatal(err)
		}
		if err := s.whenRuns(context.Background()); err == nil || !strings.Contains(err.Error(), "small") {
			t.Errorf("an unknown model profile: %v", err)
		}
	})
}

// An LLM agent that has no injected response fails instead of calling its
// real model, as `ensemble run --responses` does: with a responses file, and
// with only `responds` steps.
func TestScenariosKeepModelsOffline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"e.yaml": "name: e\nmodels:\n  m: {provider: ollama, model: x}\nagents:\n" +
			"  - {name: covered, model_profile: m, prompt: p}\n  - {name: uncovered, model_profile: m, prompt: p}\n",
		"r.yaml": "covered: [hi]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, want string
		given      func(s *Scenario) error
	}{
		{"responses file", `agent "uncovered" has no responses in r.yaml and would call the real model; add responses for it`,
			func(s *Scenario) error { return s.givenResponsesFile("r.yaml") }},
		{"responds steps", `agent "uncovered" has no injected response and would call the real model; give it one: Given agent "uncovered" responds "..."`,
			func(s *Scenario) error { return s.givenResponds("covered", "hi") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			s := NewScenario(dir, Options{GuardModels: true, LLM: agent.RunnerFunc(func(context.Context, *agent.Request) *agent.Result {
				calls.Add(1)
				return &agent.Result{Output: "real"}
			})})
			for i, err := range []error{s.givenEnsemble("e.yaml"), tc.given(s), s.whenRuns(context.Background())} {
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if err := s.thenFailedWith("uncovered", tc.want); err != nil || calls.Load() != 0 {
				t.Errorf("%v; %d model calls", err, calls.Load())
			}
		})
	}
}

// "no unhandled errors" passes when every failure went through an on:
// failure edge to an agent that succeeded, and fails, naming them,
// otherwise; the load-warning steps read the file's warnings.
func TestHandledErrorsAndLoadWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crash.sh"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"handled", "name: h\nagents:\n  - {name: fetch, script: crash.sh}\n  - {name: cache, ask: \"?\", dependencies: [{agent_name: fetch, on: failure}]}\n", ""},
		{"unhandled", "name: u\nagents:\n  - {name: fetch, script: crash.sh}\n  - {name: cache, script: crash.sh, dependencies: [{agent_name: fetch, on: failure}]}\n",
			"the run has 2 unhandled errors, want none:\n  turn 1, fetch: script exited with code 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewScenario(dir, Options{})
			if err := s.givenInlineEnsemble(&godog.DocString{Content: tc.yaml}); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if err := s.givenResponds("cache", "cached"); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.whenRuns(context.Background()); err != nil {
				t.Fatal(err)
			}
			err := s.thenNoUnhandledErrors()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if err := s.thenNoErrors(); err == nil {
				t.Error("the run has no errors, though fetch failed")
			}
		})
	}

	s := NewScenario(dir, Options{})
	if err := s.givenInlineEnsemble(&godog.DocString{Content: "name: w\nagents:\n  - {name: a, ask: \"?\"}\n  - {name: b, ask: \"?\", trigger: all, dependencies: [{agent_name: a, requires_all: false}]}\n"}); err != nil {
		t.Fatal(err)
	}
	if err := s.thenLoadWarning("no required dependency"); err != nil {
		t.Error(err)
	}
	if err := s.thenLoadWarning("nothing like this"); err == nil || !strings.Contains(err.Error(), `trigger: all but no required dependency`) {
		t.Errorf("a warning that is not there: %v", err)
	}
	if err := s.thenNoLoadWarnings(); err == nil || !strings.Contains(err.Error(), "the ensemble has 1 warning, want none") {
		t.Errorf("no warnings: %v", err)
	}
}

// TestUnknownPathStepSuggests: a step naming a mistyped child path says
// which path was meant.
func TestUnknownPathStepSuggests(t *testing.T) {
	t.Parallel()
	s := NewScenario("../../examples/routing", Options{})
	if err := s.givenEnsemble("ensemble.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := s.givenResponds("route/specialst", "x"); err == nil || !strings.Contains(err.Error(), `did you mean "route/specialist"?`) {
		t.Errorf("a mistyped path: %v", err)
	}
}

func TestTookLessThan(t *testing.T) {
	s := NewScenario(t.TempDir(), Options{})
	if err := s.givenInlineEnsemble(&godog.DocString{Content: "name: timed\nagents:\n  - name: a\n    ask: \"?\"\n  - name: b\n    ask: \"?\"\n    dependencies: [{agent_name: a, condition: \"false\"}]\n"}); err != nil {
		t.Fatal(err)
	}
	if err := s.givenResponds("a", "ok"); err != nil {
		t.Fatal(err)
	}
	if err := s.whenRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.thenTookLessThan("a", 60); err != nil {
		t.Error(err)
	}
	// The execution_time the step reads is the one expressions see.
	if err := s.thenExprTrue("sum(filter(history, .agent_name == 'a'), .execution_time) < 60 && history[0].execution_time >= 0"); err != nil {
		t.Error(err)
	}
	if err := s.thenTookLessThan("a", 0); err == nil || !strings.Contains(err.Error(), `agent "a" took 0.`) || !strings.Contains(err.Error(), "in its execution 1 (turn 1), want less than 0 seconds") {
		t.Errorf("too slow: %v", err)
	}
	if err := s.thenTookLessThan("b", 1); err == nil || err.Error() != `agent "b" did not run, want it to take less than 1 second` {
		t.Errorf("did not run: %v", err)
	}
	if err := s.thenTookLessThan("nobody", 1); err == nil {
		t.Error("an unknown agent passed")
	}
}

// Given the run is strict: a read of a missing key ends the run
// strict_warning, exit 7, as run --strict does.
func TestStrictStep(t *testing.T) {
	s := NewScenario(t.TempDir(), Options{})
	doc := "name: strict\nagents:\n  - name: a\n    ask: \"?\"\n  - name: b\n    ask: \"?\"\n    dependencies: [a]\n    when: \"context.a.aproved\"\n"
	if err := s.givenInlineEnsemble(&godog.DocString{Content: doc}); err != nil {
		t.Fatal(err)
	}
	if err := s.givenRespondsDoc("a", &godog.DocString{MediaType: "yaml", Content: "{approved: true}"}); err != nil {
		t.Fatal(err)
	}
	if err := s.givenStrict(); err != nil {
		t.Fatal(err)
	}
	if err := s.whenRuns(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.thenReason("strict_warning"); err != nil {
		t.Error(err)
	}
	if err := s.thenExitCode(7); err != nil {
		t.Error(err)
	}
	if err := s.thenWarning("did you mean `approved`?"); err != nil {
		t.Error(err)
	}
}
