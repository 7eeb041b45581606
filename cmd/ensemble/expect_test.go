package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const expectDir = "testdata/expect"

// The file's expect: and --expect decide the exit code of a completed run:
// 8 when one is false, with the text summary naming it and the values it
// read, and the JSON result holding each.
func TestExpectationsDecideTheExitCode(t *testing.T) {
	t.Parallel()
	file := filepath.Join(expectDir, "review.yaml")
	tests := []struct {
		name      string
		responses string
		expect    []string
		code      int
		text      []string // in the summary
		missing   []string // not in it
	}{
		{"the reviewers say no", "reject.yaml", nil, 8,
			[]string{"review: expectation_failed after 5 turns", `expectation failed: context.judge.verdict == 'APPROVE' (` + file + `:21:5); it read context.judge.verdict = "REJECT"`}, nil},
		{"the reviewers say yes", "approve.yaml", nil, 0, []string{"review: completed after 5 turns"}, []string{"expectation failed"}},
		{"the fix loop ran out", "approve.yaml", []string{"!('fix' in held_back)", "executions.fix <= 2"}, 8,
			[]string{`expectation failed: !('fix' in held_back) (--expect); it read held_back = ["fix"]`}, []string{"executions.fix <= 2 (--expect)"}},
		{"a missing field", "approve.yaml", []string{"context.judge?.reason != nil"}, 8,
			[]string{`expectation failed: context.judge?.reason != nil (--expect); it read context.judge.reason is missing`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"run", file, "--responses", filepath.Join(expectDir, tc.responses)}
			for _, x := range tc.expect {
				args = append(args, "--expect", x)
			}
			o := ensembleCmd(t, "", append(args, "--output", "text")...)
			if o.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", o.code, tc.code, o.stdout, o.stderr)
			}
			for _, s := range tc.text {
				if !strings.Contains(o.stdout+o.stderr, s) {
					t.Errorf("the summary lacks %q:\n%s%s", s, o.stdout, o.stderr)
				}
			}
			for _, s := range tc.missing {
				if strings.Contains(o.stdout+o.stderr, s) {
					t.Errorf("the summary has %q:\n%s%s", s, o.stdout, o.stderr)
				}
			}
			j := ensembleCmd(t, "", append(args, "--output", "json")...)
			var res struct {
				CompletionReason string `json:"completion_reason"`
				Expectations     []struct {
					Expression string `json:"expression"`
					Held       bool   `json:"held"`
				} `json:"expectations"`
			}
			if err := json.Unmarshal([]byte(j.stdout), &res); err != nil || j.code != tc.code {
				t.Fatalf("json: exit %d, %v\n%s", j.code, err, j.stdout)
			}
			want := map[bool]string{true: "expectation_failed", false: "completed"}[tc.code == 8]
			if res.CompletionReason != want || len(res.Expectations) != 1+len(tc.expect) {
				t.Errorf("json: %+v", res)
			}
		})
	}
}

// --expect that does not compile, or names a key no agent has, is a usage
// error naming the flag; nothing runs.
func TestExpectFlagErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(expectDir, "review.yaml")
	for _, tc := range []struct{ expr, want string }{
		{"context.judge.verdict ==", `--expect "context.judge.verdict ==" does not compile: unexpected token EOF`},
		{"'yes'", `--expect "'yes'" does not compile: expectation must be boolean, but it is always a string`},
		{"context.jugde.verdict == 'APPROVE'", `--expect "context.jugde.verdict == 'APPROVE'" names context.jugde, but no agent of review has the state key "jugde"; did you mean "judge"?`},
	} {
		o := ensembleCmd(t, "", "run", file, "--responses", filepath.Join(expectDir, "approve.yaml"), "--expect", tc.expr)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) || o.stdout != "" {
			t.Errorf("%s: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", tc.expr, o.code, tc.want, o.stdout, o.stderr)
		}
	}
}

// A durable run saves its expectations with its reason: state show prints
// them again, and a resume checks them again, the file's and the
// --expect it is given.
func TestExpectationsOfASavedRun(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	o := ensembleCmd(t, "", "run", filepath.Join(expectDir, "review.yaml"), "--responses", filepath.Join(expectDir, "reject.yaml"),
		"--state", db, "--output", "json")
	if o.code != 8 {
		t.Fatalf("run: exit %d\n%s", o.code, o.stderr)
	}
	show := ensembleCmd(t, "", "state", "show", db, "--output", "text")
	if !strings.Contains(show.stdout, `expectation failed: context.judge.verdict == 'APPROVE'`) || !strings.Contains(show.stdout, `"REJECT"`) ||
		!strings.Contains(show.stdout, "expectation_failed") {
		t.Errorf("state show:\n%s%s", show.stdout, show.stderr)
	}
	if l := ensembleCmd(t, "", "state", "list", db); !strings.Contains(l.stdout, "expectation_failed") {
		t.Errorf("state list:\n%s%s", l.stdout, l.stderr)
	}
	r := ensembleCmd(t, "", "resume", db, "--expect", "len(held_back) == 0", "--output", "json")
	var res struct {
		Expectations []struct {
			Expression string `json:"expression"`
			Held       bool   `json:"held"`
		} `json:"expectations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 8 || len(res.Expectations) != 2 ||
		res.Expectations[1].Expression != "len(held_back) == 0" || res.Expectations[1].Held {
		t.Errorf("resume: exit %d, %v %+v\n%s", r.code, err, res, r.stderr)
	}
}

// ensemble test holds the file's expect: a scenario whose run ends with
// one false fails, naming it, unless a step asks for that ending.
func TestTestHoldsTheFilesExpectations(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "test", filepath.Join(expectDir, "review.feature"))
	if o.code != 1 || !strings.Contains(o.stdout, "the run ended expectation_failed") ||
		!strings.Contains(o.stdout, `expectation failed: context.judge.verdict == 'APPROVE'`) || !strings.Contains(o.stdout, `"REJECT"`) {
		t.Errorf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	a := ensembleCmd(t, "", "test", filepath.Join(expectDir, "acknowledged.feature"))
	if a.code != 0 {
		t.Errorf("acknowledged: exit %d\n%s\n%s", a.code, a.stdout, a.stderr)
	}
}

// run --report writes the expectations in the Markdown report.
func TestExpectationsInTheReport(t *testing.T) {
	t.Parallel()
	md := filepath.Join(t.TempDir(), "run.md")
	o := ensembleCmd(t, "", "run", filepath.Join(expectDir, "review.yaml"), "--responses", filepath.Join(expectDir, "reject.yaml"),
		"--report", md, "--output", "json")
	data, err := os.ReadFile(md)
	if o.code != 8 || err != nil || !strings.Contains(string(data), "## Expectations") ||
		!strings.Contains(string(data), "- **failed** `context.judge.verdict == 'APPROVE'`") {
		t.Errorf("exit %d, %v\n%s", o.code, err, data)
	}
}
