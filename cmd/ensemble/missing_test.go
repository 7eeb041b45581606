package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The mistakes of docs/semantics.md#reads-of-missing-keys, run through the
// CLI: testdata/missing misspells a guard's key and a template's, and reads
// keys that may be absent through ?. and ??.
var missingDir = filepath.Join("testdata", "missing")

type missingResult struct {
	CompletionReason string `json:"completion_reason"`
	TurnCount        int    `json:"turn_count"`
	Warnings         []struct {
		AgentName  string `json:"agent_name"`
		Kind       string `json:"kind"`
		Path       string `json:"path"`
		Suggestion string `json:"suggestion"`
		Expression string `json:"expression"`
		Message    string `json:"message"`
	} `json:"warnings"`
}

func runMissing(t *testing.T, file string, extra ...string) (outcome, missingResult) {
	t.Helper()
	args := append([]string{"run", filepath.Join(missingDir, file), "--responses", filepath.Join(missingDir, "responses.yaml"), "--output", "json"}, extra...)
	o := ensembleCmd(t, "", args...)
	var res missingResult
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s\n%s", o.code, err, o.stdout, o.stderr)
	}
	return o, res
}

// The JSON result names each mistake once: the agent, the expression, the
// path and the key meant; ?. and ?? reads are silent; the run still
// completes, exit 0.
func TestMissingReadsInTheResult(t *testing.T) {
	t.Parallel()
	o, res := runMissing(t, "ensemble.yaml")
	if o.code != 0 || res.CompletionReason != "completed" {
		t.Fatalf("exit %d, %s\n%s", o.code, res.CompletionReason, o.stderr)
	}
	type w struct{ agent, kind, path, suggestion, expression string }
	want := []w{
		{"security", "missing_read", "context.get_diff.touches_cod", "touches_code", "context.get_diff.touches_cod"},
		{"reviewer", "missing_read", "context.get_diff.dif", "diff", "context.author?.pach ?? context.get_diff.dif"},
		{"reviewer", "null_message", "", "", "context.author?.pach ?? context.get_diff.dif"},
	}
	if len(res.Warnings) != len(want) {
		t.Fatalf("warnings %+v\nwant %+v", res.Warnings, want)
	}
	for i, x := range res.Warnings {
		if g := (w{x.AgentName, x.Kind, x.Path, x.Suggestion, x.Expression}); g != want[i] {
			t.Errorf("warning %d: %+v, want %+v", i, g, want[i])
		}
	}
	if m := res.Warnings[0].Message; m != "when of security reads context.get_diff.touches_cod, a key its value does not have (did you mean `touches_code`?): it counted as null" {
		t.Errorf("message %q", m)
	}
	if m := res.Warnings[2].Message; !strings.Contains(m, `input of reviewer ({{ context.author?.pach ?? context.get_diff.dif }}) is null: the model is sent the text "null"`) {
		t.Errorf("message %q", m)
	}
}

// run --strict fails the run on the first: strict_warning, exit 7, before
// the skipped reviewer's turn runs; the text summary says why.
func TestStrictRunExits7(t *testing.T) {
	t.Parallel()
	o, res := runMissing(t, "ensemble.yaml", "--strict")
	if o.code != 7 || res.CompletionReason != "strict_warning" || res.TurnCount != 1 {
		t.Fatalf("exit %d, %s after %d turns\n%s", o.code, res.CompletionReason, res.TurnCount, o.stderr)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Suggestion != "touches_code" {
		t.Errorf("warnings %+v", res.Warnings)
	}
	txt := ensembleCmd(t, "", "run", filepath.Join(missingDir, "ensemble.yaml"), "--responses", filepath.Join(missingDir, "responses.yaml"), "--output", "text", "--strict")
	all := txt.stdout + txt.stderr
	for _, s := range []string{"strict_warning after 1 turn", "did you mean `touches_code`?", "--strict: an expression read a key its value does not have"} {
		if !strings.Contains(all, s) {
			t.Errorf("text output lacks %q:\n%s", s, all)
		}
	}
	if txt.code != 7 {
		t.Errorf("text: exit %d", txt.code)
	}
	// The file with its names right completes under --strict, with no
	// warning: the ?. and ?? reads are none.
	o, res = runMissing(t, "fixed.yaml", "--strict")
	if o.code != 0 || res.CompletionReason != "completed" || len(res.Warnings) != 0 {
		t.Fatalf("fixed: exit %d, %s, warnings %+v\n%s", o.code, res.CompletionReason, res.Warnings, o.stderr)
	}
}

// The warnings are in the text summary, the events (jsonl) and the
// Markdown report.
func TestMissingReadsInEveryOutput(t *testing.T) {
	t.Parallel()
	base := []string{"run", filepath.Join(missingDir, "ensemble.yaml"), "--responses", filepath.Join(missingDir, "responses.yaml")}
	report := filepath.Join(t.TempDir(), "run.md")
	txt := ensembleCmd(t, "", append(base, "--output", "text", "--report", report)...)
	if txt.code != 0 || !strings.Contains(txt.stdout+txt.stderr, "warning: turn 2, when of security reads context.get_diff.touches_cod, a key its value does not have (did you mean `touches_code`?)") {
		t.Errorf("text: exit %d\n%s\n%s", txt.code, txt.stdout, txt.stderr)
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Warnings") || !strings.Contains(string(md), "reads context.get\\_diff.dif") && !strings.Contains(string(md), "reads context.get_diff.dif") {
		t.Errorf("report:\n%s", md)
	}
	j := ensembleCmd(t, "", append(base, "--output", "jsonl")...)
	var found []map[string]any
	sc := bufio.NewScanner(strings.NewReader(j.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if ev["type"] == "warning" {
			found = append(found, ev)
		}
	}
	if len(found) != 3 {
		t.Fatalf("%d warning events, want 3:\n%s", len(found), j.stdout)
	}
	w, _ := found[0]["warning"].(map[string]any)
	if found[0]["agent"] != "security" || w["kind"] != "missing_read" || w["path"] != "context.get_diff.touches_cod" || w["suggestion"] != "touches_code" {
		t.Errorf("event %v", found[0])
	}
}

// --strict is a flag of run and resume, not of a run on Temporal.
func TestStrictFlagHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"run", "resume"} {
		o := ensembleCmd(t, "", cmd, "--help")
		if !strings.Contains(o.stdout, "--strict") || !strings.Contains(o.stdout, "7    --strict") {
			t.Errorf("%s --help lacks --strict or exit code 7:\n%s", cmd, o.stdout)
		}
	}
}

// A saved strict_warning run goes on with resume; a warning it recorded
// is not recorded again, so resume --strict stops only on a new one.
func TestResumeStrict(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	o, res := runMissing(t, "ensemble.yaml", "--strict", "--state", db)
	if o.code != 7 || res.TurnCount != 1 {
		t.Fatalf("run: exit %d after %d turns\n%s", o.code, res.TurnCount, o.stderr)
	}
	resume := func() (outcome, missingResult) {
		o := ensembleCmd(t, "", "resume", db, "--strict", "--output", "json")
		var res missingResult
		if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
			t.Fatalf("exit %d: %v\n%s\n%s", o.code, err, o.stdout, o.stderr)
		}
		return o, res
	}
	// Turn 2's resolution read touches_cod again (no new warning), then its
	// planning read dif: a new one, and the turn does not run.
	o, res = resume()
	if o.code != 7 || res.CompletionReason != "strict_warning" || res.TurnCount != 1 || len(res.Warnings) != 3 {
		t.Fatalf("resume: exit %d, %s after %d turns, warnings %+v\n%s", o.code, res.CompletionReason, res.TurnCount, res.Warnings, o.stderr)
	}
	o, res = resume()
	if o.code != 0 || res.CompletionReason != "completed" || res.TurnCount != 2 || len(res.Warnings) != 3 {
		t.Fatalf("second resume: exit %d, %s after %d turns, warnings %+v\n%s", o.code, res.CompletionReason, res.TurnCount, res.Warnings, o.stderr)
	}
}
