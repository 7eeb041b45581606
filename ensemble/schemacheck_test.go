package ensemble_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// literalsFile is an ensemble whose agent approve depends on judge with
// the condition %s (quoted) on line 32.
const literalsFile = `name: lits
models:
  m: {provider: ollama, model: llama3.2}
agents:
  - name: judge
    model_profile: m
    output_schema:
      type: object
      properties:
        verdict: {type: string, enum: [APPROVE, REJECT]}
        score: {type: integer}
        ratio: {type: number}
        ok: {type: boolean}
        tags: {type: array, items: {type: string, enum: [bug, feature]}}
        keyed: {items: {enum: [a]}}
        note: {type: [string, "null"]}
        level: {oneOf: [{const: low}, {const: high}]}
        either: {anyOf: [{type: string}, {type: object}]}
        free: {description: anything}
        mixed: {anyOf: [{enum: [a, b]}, {type: integer}]}
        kind: {const: review}
        nested: {type: object, properties: {deep: {type: object, properties: {flag: {type: boolean}}}}}
        findings: {type: array, items: {type: object, properties: {severity: {enum: [low, high]}}}}
        ref: {$ref: "#/$defs/v"}
      $defs: {v: {enum: [x]}}
  - name: reviewers
    model_profile: m
    fan_out: {over: "['a', 'b']"}
    output_schema: {type: object, properties: {approved: {type: boolean}}}
  - name: approve
    model_profile: m
    dependencies: [reviewers, {agent_name: judge, condition: %s}]
`

// A literal compared with a field of an agent's output that the field's
// schema says it can never equal is a load error naming the values the
// schema allows and the closest one; comparisons the schema cannot rule
// out load.
func TestComparedLiteralsCheckedAgainstSchemas(t *testing.T) {
	t.Parallel()
	const judge = `the output_schema of agent "judge"`
	for _, c := range []struct {
		cond string
		want string // "" when the file loads
	}{
		{`context.judge.verdict == 'APPROVED'`,
			`compares context.judge.verdict with 'APPROVED', but 'APPROVED' is not one of "APPROVE", "REJECT", the values ` + judge + ` allows there, so the == is always false; did you mean "APPROVE"? (column 26 of the condition)`},
		{`'APPROVED' != context.judge.verdict`,
			`compares context.judge.verdict with 'APPROVED', but 'APPROVED' is not one of "APPROVE", "REJECT", the values ` + judge + ` allows there, so the != is always true and tests nothing; did you mean "APPROVE"? (column 1 of the condition)`},
		{`context.judge.verdict == 'approve'`, `did you mean "APPROVE"?`},
		{`context.judge?.verdict in ['APPROVE', 'REJECTED']`,
			`compares context.judge.verdict with 'REJECTED', but 'REJECTED' is not one of "APPROVE", "REJECT", the values ` + judge + ` allows there, so that item of the list never matches; did you mean "REJECT"? (column 39 of the condition)`},
		{`context.judge.verdict not in ['APPROVE', 'REJECT']`, ""},
		{`!(context.judge.verdict == 'OK')`, `so the != is always true`},
		{`context.judge.verdict == 5`, `5 is not one of "APPROVE", "REJECT"`},
		{`context.judge.score == '5'`,
			`compares context.judge.score with '5', but '5' is a string, and ` + judge + ` says context.judge.score is an integer, so the == is always false; did you mean 5? (column 24 of the condition)`},
		{`context.judge.score == 5 || context.judge.score == 5.0 || context.judge.score != -1`, ""},
		{`context.judge.score == 4.5`, `4.5 is a number with a fraction, and ` + judge + ` says context.judge.score is an integer`},
		{`context.judge.ratio == 4.5 || context.judge.ratio == 4`, ""},
		{`context.judge.ratio == '4'`, `says context.judge.ratio is a number, so the == is always false; did you mean 4?`},
		{`context.judge.ok == 'true'`, `'true' is a string, and ` + judge + ` says context.judge.ok is a boolean, so the == is always false; did you mean true?`},
		{`context.judge.ok == true && context.judge.ok != false`, ""},
		{`context.judge.note == nil || context.judge.note == 'x' || context.judge.verdict != nil || context.judge.score == nil`, ""},
		{`context.judge.note == 3`, `3 is an integer, and ` + judge + ` says context.judge.note is a string or null, so the == is always false; did you mean "3"?`},
		{`context.judge.level == 'medium'`, `'medium' is not one of "low", "high", the values ` + judge + ` allows there, so the == is always false (column 24 of the condition)`},
		{`context.judge.level == 'hihg'`, `did you mean "high"?`},
		{`context.judge.either == 3`, `context.judge.either is a string or an object`},
		{`context.judge.either == 'x' || context.judge.free == 3 || context.judge.free == 'x'`, ""},
		{`context.judge.mixed == 'c' || context.judge.mixed == 3`, ""},
		{`context.judge.mixed == true`, `true is a boolean, and ` + judge + ` says context.judge.mixed is a string or an integer`},
		{`context.judge.kind == 'reviews'`, `'reviews' is not "review", the only value ` + judge + ` allows there, so the == is always false; did you mean "review"?`},
		{`context.judge.nested.deep.flag != 'yes'`, `says context.judge.nested.deep.flag is a boolean, so the != is always true`},
		{`'bugs' in context.judge.tags`,
			`looks for 'bugs' among the items of context.judge.tags, but 'bugs' is not one of "bug", "feature", the values ` + judge + ` allows there, so the in is always false; did you mean "bug"? (column 1 of the condition)`},
		{`'bug' in context.judge.tags && 'feature' not in context.judge.tags`, ""},
		{`'b' in context.judge.keyed`, ""}, // maybe an object: in looks for a key
		{`any(context.judge.findings, .severity == 'medium')`, `compares context.judge.findings[].severity with 'medium'`},
		{`context.judge.findings[0].severity == 'hgh'`, `did you mean "high"?`},
		{`context.judge.ref == 'y'`, ""},
		{`(context.judge.verdict ?? 'NONE') == 'NONE'`, ""},
		{`context.judge.verdict == context.judge.note || lower(context.judge.verdict) == 'approve'`, ""},
		{`context.reviewers[0].approved == 'yes'`, `compares context.reviewers[].approved with 'yes', but 'yes' is a string, and the output_schema of agent "reviewers" says context.reviewers[].approved is a boolean`},
		{`all(context.reviewers, .approved == 'true')`, `did you mean true?`},
		{`all(context.reviewers, .approved) && len(context.reviewers) == 2`, ""},
	} {
		src := strings.Replace(literalsFile, "%s", strconv.Quote(c.cond), 1)
		_, err := LoadBytes("lits.yaml", []byte(src), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.cond, err)
		case c.want == "":
		case err == nil:
			t.Errorf("%s: loads, want an error: %s", c.cond, c.want)
		default:
			prefix := `lits.yaml:32:62: dependency "judge" of agent "approve": condition `
			if got := err.Error(); !strings.HasPrefix(got, prefix) || !strings.Contains(got, c.want) || strings.Count(got, "\n") > 0 {
				t.Errorf("%s:\n got: %s\nwant: %s…%s", c.cond, got, prefix, c.want)
			}
		}
	}
}

// Every expression over the context is checked: guards, selects (whose
// output is the dependency's), fan_out.over and templates; a loop's until
// against the child's agents.
func TestComparedLiteralsEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("child.yaml", `name: child
models:
  m: {provider: ollama, model: llama3.2}
agents:
  - name: tests
    model_profile: m
    output_schema: {type: object, properties: {pass: {type: boolean}, verdict: {enum: [PASS, FAIL]}}}
`)
	path := write("parent.yaml", `name: parent
models:
  m: {provider: ollama, model: llama3.2}
agents:
  - name: judge
    model_profile: m
    output_schema: {type: object, properties: {verdict: {enum: [APPROVE, REJECT]}, items: {type: array}}}
  - name: guarded
    model_profile: m
    dependencies: [judge]
    when: "context.judge.verdict != 'REJECTED'"
  - name: picked
    model_profile: m
    dependencies:
      - {agent_name: judge, select: "output.verdict == 'APROVE'"}
  - name: failed
    model_profile: m
    dependencies:
      - {agent_name: judge, select: "output.verdict == 'whatever'", on: always}
  - name: spread
    model_profile: m
    dependencies: [judge]
    fan_out: {over: "context.judge.verdict == 'YES' ? context.judge.items : []"}
  - name: templated
    model_profile: m
    dependencies: [judge]
    input: "Verdict: {{ context.judge.verdict == 'Approve' ? 'ok' : 'no' }}"
  - name: build
    ensemble: child.yaml
    output: tests
    loop: {until: "output.pass == 'true' || context.tests.verdict == 'PASSED'", max_iterations: 3}
  - name: build_all
    ensemble: child.yaml
    loop: {until: "output.tests.verdict == 'FAILED'", max_iterations: 3, carry: "output.tests.verdict == 'PAS' ? 1 : 2"}
`)
	_, err := Load(path, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, path,
		`11:11: agent "guarded": when compares context.judge.verdict with 'REJECTED', but 'REJECTED' is not one of "APPROVE", "REJECT", the values the output_schema of agent "judge" allows there, so the != is always true and tests nothing; did you mean "REJECT"? (column 26 of the when)`,
		`15:37: dependency "judge" of agent "picked": select compares output.verdict with 'APROVE', but 'APROVE' is not one of "APPROVE", "REJECT"`,
		`23:21: fan_out of agent "spread": over compares context.judge.verdict with 'YES'`,
		`27:50: agent "templated": input compares context.judge.verdict with 'Approve', but 'Approve' is not one of "APPROVE", "REJECT", the values the output_schema of agent "judge" allows there, so the == is always false; did you mean "APPROVE"? (column 38 of the template)`,
		`31:19: loop of agent "build": until compares output.pass with 'true', but 'true' is a string, and the output_schema of agent "tests" says output.pass is a boolean, so the == is always false; did you mean true? (column 16 of the until)`,
		`31:19: loop of agent "build": until compares context.tests.verdict with 'PASSED', but 'PASSED' is not one of "PASS", "FAIL"`,
		`34:19: loop of agent "build_all": until compares output.tests.verdict with 'FAILED'`,
		`34:81: loop of agent "build_all": carry compares output.tests.verdict with 'PAS'`,
	)
}
