package bdd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A JUnit failure or error names the step as it is written, with its
// keyword and its FILE:LINE, and an undefined step the closest built-in
// step; a file given as FILE:LINE is the testsuite's file without the
// line, which godog adds to its name of the feature.
func TestJUnitNamesTheStepAndItsPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "a.feature")
	src := `Feature: places

  Background:
    Given the turn limit is 3

  Scenario: fails
    Then the completion reason is "completed"

  Scenario: is undefined
    When agent "x" runs 2 times
`
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{f, []string{
			`file="` + f + `"`,
			`message="Step Then the completion reason is &#34;completed&#34; (` + f + `:7): the ensemble has not run yet`,
			`type="undefined" message="Step When agent &#34;x&#34; runs 2 times (` + f + `:10): not a built-in step (see test --list-steps); did you mean: Then agent &#34;x&#34; ran 2 times"`,
		}},
		{f + ":6", []string{`file="` + f + `"`, `(` + f + `:7): the ensemble has not run yet`}},
		// With repeats: the failing run's step.
		{f + ":6 repeated", []string{`: Step Then the completion reason is &#34;completed&#34; (` + f + `:7): the ensemble has not run yet`}},
	} {
		var out, stderr bytes.Buffer
		path, repeated := strings.CutSuffix(tc.path, " repeated")
		o := RunOptions{Paths: []string{path}, Format: "junit", Output: &out, Stderr: &stderr}
		if repeated {
			o.Repeat = 2
		}
		code, err := Run(o)
		if code != ExitFailed || err != nil {
			t.Fatalf("%s: exit %d, %v; want %d\n%s%s", tc.path, code, err, ExitFailed, out.String(), stderr.String())
		}
		for _, want := range tc.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: the report lacks %s:\n%s", tc.path, want, out.String())
			}
		}
	}
}

// The list of undefined steps names where each is written.
func TestUndefinedStepsNameTheirPlaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "a.feature")
	src := "Feature: u\n\n  Scenario: one\n    Given the moon\n\n  Scenario: two\n    Given the turn limit is 2\n    And the moon\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"repeat"}} {
		o := RunOptions{Paths: []string{f}, Format: "progress"}
		if extra != nil {
			o.Repeat = 2
		}
		var out, stderr bytes.Buffer
		o.Output, o.Stderr = &out, &stderr
		if code, err := Run(o); code != ExitFailed || err != nil {
			t.Fatalf("%v: exit %d, %v\n%s%s", extra, code, err, out.String(), stderr.String())
		}
		if want := "  the moon (" + f + ":4, " + f + ":8)\n"; !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr lacks %q:\n%s", extra, want, stderr.String())
		}
	}
}

// A file given as FILE:LINE is named by its file alone in the places of the
// pretty and progress formats (godog wrote "a.feature:6:7", which reads as a
// line and a column) and in the Cucumber JSON's uri.
func TestFileLineIsNotPartOfThePlaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "a.feature")
	src := "Feature: places\n\n  Scenario: one\n    Given the turn limit is 2\n\n  Scenario: fails\n    Then the turn count is 2\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"pretty", "progress", "cucumber"} {
		var out, stderr bytes.Buffer
		code, err := Run(RunOptions{Paths: []string{f + ":6"}, Format: format, Output: &out, Stderr: &stderr, NoColors: true})
		if code != ExitFailed || err != nil {
			t.Fatalf("%s: exit %d, %v\n%s%s", format, code, err, out.String(), stderr.String())
		}
		want := "# " + f + ":7\n"
		if format == "cucumber" {
			want = `"uri": "` + f + `",`
		}
		if !strings.Contains(out.String(), want) || strings.Contains(out.String(), f+":6:") || strings.Contains(out.String(), `"`+f+`:6"`) {
			t.Errorf("%s: want %q, and no place after %s:6:\n%s", format, want, f, out.String())
		}
	}
}

// A scenario with no steps fails (godog counts it undefined), and every
// report says why: its JUnit testcase has an error, not a pass beside exit
// code 1, stderr names it, and a run with repeats gives the reason.
func TestScenarioWithoutStepsSaysWhyItFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "a.feature")
	src := "Feature: e\n  Scenario: nothing here\n\n  Scenario: fine\n    Given the turn limit is 2\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, repeat := range []int{0, 2} {
		var out, stderr bytes.Buffer
		code, err := Run(RunOptions{Paths: []string{f}, Format: "junit", Output: &out, Stderr: &stderr, Repeats: Repeats{Repeat: repeat}})
		if code != ExitFailed || err != nil {
			t.Fatalf("repeat %d: exit %d, %v\n%s%s", repeat, code, err, out.String(), stderr.String())
		}
		if !strings.Contains(out.String(), noSteps) || strings.Contains(out.String(), `failures="0" errors="0"`) {
			t.Errorf("repeat %d: the report does not fail the scenario with %q:\n%s", repeat, noSteps, out.String())
		}
		if want := f + `:2: Scenario "nothing here": ` + noSteps; repeat == 0 && !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// A mistyped column of the history table gets a "did you mean".
func TestHistoryColumnTypo(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{
		"e.yaml":    "name: e\nagents:\n  - {name: a, script: a.sh}\n",
		"a.sh":      "#!/bin/sh\ncat >/dev/null\necho 1\n",
		"a.feature": "Feature: f\n  Scenario: s\n    Given the ensemble \"e.yaml\"\n    When the ensemble runs\n    Then the conversation history is:\n      | agnt |\n      | a    |\n",
	})
	var out bytes.Buffer
	if err := os.Chmod(filepath.Join(dir, "a.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, err := Run(RunOptions{Paths: []string{dir}, Format: "progress", Output: &out, Stderr: &out, NoColors: true})
	want := `unknown history column "agnt": use turn, agent, execution, status, error, output; did you mean "agent"?`
	if code != ExitFailed || err != nil || !strings.Contains(out.String(), want) {
		t.Fatalf("exit %d, %v; want %q in:\n%s", code, err, want, out.String())
	}
}

// With repeats, a run that failed on an undefined step says so as the
// report without repeats does, with the closest built-in step.
func TestRepeatedUndefinedStepSuggests(t *testing.T) {
	t.Parallel()
	dir := writeTempFiles(t, map[string]string{"a.feature": "Feature: u\n  Scenario: one\n    When the ensemble run\n"})
	var out, stderr bytes.Buffer
	code, err := Run(RunOptions{Paths: []string{dir}, Output: &out, Stderr: &stderr, Repeats: Repeats{Repeat: 2}})
	want := `(` + filepath.Join(dir, "a.feature") + `:3): not a built-in step (see test --list-steps); did you mean: When the ensemble runs`
	if code != ExitFailed || err != nil || !strings.Contains(out.String(), want) {
		t.Fatalf("exit %d, %v; want %q in:\n%s", code, err, want, out.String())
	}
}
