package ensemble_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// expect: is a list of expectations compiled at load, checked against the
// state keys, agents and output schemas as conditions are
// (docs/format.md#expectations).
func TestExpectDecoding(t *testing.T) {
	t.Parallel()
	good := `
name: review
agents:
  - name: judge
    ask: verdict?
    conversation: {state_key: verdict}
  - name: fix
    ask: fix?
    dependencies: [judge]
expect:
  - "context.verdict == 'APPROVE'"
  - "!('fix' in held_back) && len(errors) == 0 && executions.fix <= 2"
`
	e, err := LoadBytes("g.yaml", []byte(good), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Expect) != 2 || e.Expect[0].Source != "context.verdict == 'APPROVE'" || opaque.Get(e.Expect[0].Program) == nil ||
		e.Expect[0].Where != "g.yaml:11:5" || e.Expect[1].Where != "g.yaml:12:5" {
		t.Fatalf("expect %+v %+v", *e.Expect[0], *e.Expect[1])
	}
	if got := opaque.Get(e.Expect[1].Program).Names; strings.Join(got, ",") != "held_back,errors" {
		t.Fatalf("names %v", got)
	}

	bad := `
name: review
agents:
  - name: judge
    script: s.sh
    output_schema:
      type: object
      properties: {verdict: {enum: [APPROVE, REJECT]}}
expect:
  - "context.judg.verdict == 'APPROVE'"
  - "context.judge.verdict +"
  - "context.judge.verdict"
  - "1"
  - " "
  - [a]
  - "executions.jduge > 0"
  - "context.judge.verdit == 'APPROVE'"
  - "completion_reason == 'completed'"
`
	_, err = LoadBytes("s.yaml", []byte(bad), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "s.yaml",
		`5:13: agent "judge": script "s.sh" does not exist`,
		`10:5: expect #1 names context.judg, but no agent has the state key "judg"; did you mean "judge"? (column 9 of the expectation)`,
		`11:5: expect #2 does not compile: unexpected token EOF (column 23 of the expectation)`,
		`13:5: expect #4 does not compile: expectation must be boolean, but it is always a number`,
		`14:5: expect #5 must not be empty`,
		`15:5: expect #6 must be a string, got a list`,
		`16:5: expect #7 names executions.jduge, but no agent is named "jduge"; did you mean "judge"? (column 12 of the expectation)`,
		`17:5: expect #8 reads context.judge.verdit, but the output_schema of agent "judge" has no property "verdit"; did you mean "verdict"?`,
		`18:5: expect #9 does not compile: unknown name completion_reason`,
	)
}

// An expectation given to a command (--expect) is compiled and checked
// against the ensemble by the library, its errors naming the flag.
func TestCompileExpectation(t *testing.T) {
	t.Parallel()
	e, err := LoadBytes("g.yaml", []byte("name: x\nagents: [{name: judge, ask: q}]\n"), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ src, err string }{
		{"context.judge == 'yes' && len(held_back) == 0", ""},
		{"context.judge ==", `--expect "context.judge ==" does not compile: unexpected token EOF`},
		{"'x'", `--expect "'x'" does not compile: expectation must be boolean, but it is always a string`},
		{"context.jduge == 'yes'", `--expect "context.jduge == 'yes'" names context.jduge, but no agent of x has the state key "jduge"; did you mean "judge"?`},
		{"executions.jdge == 1", `--expect "executions.jdge == 1" names executions.jdge, but x has no agent "jdge"; did you mean "judge"?`},
	}
	for _, tc := range tests {
		x, err := CompileExpectation(tc.src, "--expect")
		if err == nil {
			err = e.CheckExpectation(x)
		}
		if got := ""; err != nil {
			got = err.Error()
			if tc.err == "" || !strings.HasPrefix(got, tc.err) {
				t.Errorf("%s: error %q, want %q", tc.src, got, tc.err)
			}
		} else if tc.err != "" {
			t.Errorf("%s: no error, want %q", tc.src, tc.err)
		}
	}
}

// --expect is held to the output schemas as the file's expect: is: a
// literal the schema rules out is an error with a did-you-mean.
func TestCompileExpectationLiterals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "name: x\nagents:\n  - name: judge\n    script: s.sh\n    output_schema:\n      type: object\n      properties:\n        verdict: {type: string, enum: [APPROVE, REJECT]}\n"
	e, err := LoadBytes(filepath.Join(dir, "g.yaml"), []byte(src), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ src, err string }{
		{"context.judge.verdict == 'APPROVE'", ""},
		{"context.judge.verdict == 'APPROVED'", `--expect "context.judge.verdict == 'APPROVED'": compares context.judge.verdict with 'APPROVED', but 'APPROVED' is not one of "APPROVE", "REJECT"`},
	} {
		x, err := CompileExpectation(tc.src, "--expect")
		if err == nil {
			err = e.CheckExpectation(x)
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.src, err, tc.err)
		}
	}
}
