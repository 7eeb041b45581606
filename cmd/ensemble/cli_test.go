package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// TestValidateDirectoriesAndStdin: a directory stands for the ensemble
// files under it (not other YAML, hidden folders or testdata; but a file
// whose "agents" key is misspelt is one), "-" for an ensemble on standard
// input.
func TestValidateDirectoriesAndStdin(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "validate", "testdata/tree")
	if o.code != 2 || o.stdout != "testdata/tree/a.yaml: ok\n" {
		t.Fatalf("exit %d, stdout %q", o.code, o.stdout)
	}
	for _, want := range []string{"testdata/tree/sub/b.yml:6:", "testdata/tree/sub/broken.yaml:",
		`testdata/tree/sub/misspelt.yaml:3:1: unknown top-level key "agent"; did you mean "agents"?`} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	for _, not := range []string{"responses.yaml", "hidden", "ignored", "notes"} {
		if strings.Contains(o.stdout+o.stderr, not) {
			t.Errorf("%s was validated:\n%s%s", not, o.stdout, o.stderr)
		}
	}

	o = ensembleCmd(t, "", "validate", "--output", "json", "testdata/tree")
	var problems []ensemble.Problem
	if err := json.Unmarshal([]byte(o.stdout), &problems); err != nil || o.code != 2 {
		t.Fatalf("exit %d: %v\n%s", o.code, err, o.stdout)
	}
	files := map[string]bool{}
	for _, p := range problems {
		files[p.File] = true
	}
	if len(files) != 3 || !files["testdata/tree/sub/b.yml"] || !files["testdata/tree/sub/broken.yaml"] || !files["testdata/tree/sub/misspelt.yaml"] {
		t.Fatalf("problems in %v", files)
	}

	// Standard input: named <stdin>, scripts relative to the current
	// directory.
	ens := "name: s\nagents:\n  - name: one\n    script: testdata/tree/scripts/ok.sh\n"
	if o := ensembleCmd(t, ens, "validate", "-"); o.code != 0 || o.stdout != "<stdin>: ok\n" {
		t.Fatalf("stdin: exit %d %q %q", o.code, o.stdout, o.stderr)
	}
	o = ensembleCmd(t, ens+"    dependencies: [nobody]\n", "validate", "-")
	if o.code != 2 || !strings.HasPrefix(o.stderr, "<stdin>:5:") {
		t.Fatalf("stdin: exit %d %q", o.code, o.stderr)
	}
	o = ensembleCmd(t, ens+"    dependencies: [nobody]\n", "validate", "--output", "json", "-")
	if o.code != 2 || !strings.Contains(o.stdout, `"file": "<stdin>"`) {
		t.Fatalf("stdin json: exit %d %q", o.code, o.stdout)
	}

	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "responses.yaml"), []byte("a: [x]\n"), 0o644)
	if o := ensembleCmd(t, "", "validate", empty); o.code != 2 || !strings.Contains(o.stderr, empty+": no ensemble file") {
		t.Fatalf("a folder with no ensemble: exit %d %q", o.code, o.stderr)
	}
}

// An id flag given empty is refused, in every command that has one, before
// anything is read or run.
func TestEmptyIDFlagsAreRefused(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	for _, args := range [][]string{
		{"run", example + "ensemble.yaml", "--responses", example + "responses.yaml", "--state", db, "--run-id", ""},
		{"resume", db, "--run-id="},
		{"state", "show", db, "--run-id", ""},
		{"state", "export", db, "--run-id", ""},
		{"batch", example + "ensemble.yaml", "--inputs", "in.jsonl", "--state", db, "--batch-id", ""},
	} {
		flag := "--run-id"
		if args[0] == "batch" {
			flag = "--batch-id"
		}
		o := ensembleCmd(t, "", args...)
		if want := "ensemble: " + flag + " is empty: give an id, or leave the flag out for its default\n"; o.code != 2 || o.stderr != want {
			t.Errorf("%s: exit %d %q", strings.Join(args, " "), o.code, o.stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a database was made")
	}
}

// resume and the state commands, given an ensemble file for a state
// file, say so.
func TestResumeOfAnEnsembleFileSaysSo(t *testing.T) {
	t.Parallel()
	want := example + "ensemble.yaml is an ensemble file, not a state file; start a durable run with: ensemble run " + example + "ensemble.yaml --state run.db"
	for _, cmd := range [][]string{{"resume"}, {"state", "list"}, {"state", "show"}, {"state", "export"}} {
		o := ensembleCmd(t, "", append(cmd, example+"ensemble.yaml")...)
		if o.code != 2 || !strings.Contains(o.stderr, want) {
			t.Errorf("%s: exit %d %q", strings.Join(cmd, " "), o.code, o.stderr)
		}
	}
}

// Errors about --report name the path given, not the temporary file, and
// the report is private to its owner, as the state is.
func TestReportPathAndMode(t *testing.T) {
	t.Parallel()
	args := []string{"run", example + "ensemble.yaml", "--responses", example + "responses.yaml", "--output", "json"}
	o := ensembleCmd(t, "", append(args, "--report", "/nonexistent/x.md")...)
	if o.code != 2 || o.stderr != "ensemble: --report /nonexistent/x.md: cannot create it: no such file or directory\n" {
		t.Fatalf("exit %d %q", o.code, o.stderr)
	}
	path := filepath.Join(t.TempDir(), "run.md")
	if o := ensembleCmd(t, "", append(args, "--report", path)...); o.code != 0 {
		t.Fatalf("exit %d %s", o.code, o.stderr)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("report mode %v %v", fi.Mode(), err)
	}
}

// An interrupted run says how to go on: with its real state file, quoted
// for the shell, or how to make a run resumable.
func TestInterruptedRunNamesTheResumeCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sp := filepath.Join(t.TempDir(), "my run.json")
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--state", sp}, "(interrupted; the run goes on with: ensemble resume '" + sp + "' --run-id "},
		{nil, "(interrupted; a run started with --state FILE can be continued with resume FILE)"},
	} {
		var out, errb strings.Builder
		args := append([]string{"run", example + "ensemble.yaml", "--responses", example + "responses.yaml", "--output", "text"}, tc.extra...)
		code := run(ctx, args, &stdio{in: strings.NewReader(""), out: &out, err: &errb, getenv: noEnv})
		if code != 130 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("exit %d, stdout lacks %q:\n%s%s", code, tc.want, out.String(), errb.String())
		}
	}
	// resume says where it takes up.
	o := ensembleCmd(t, "", "resume", sp, "--output", "text")
	if want := regexp.MustCompile(`^ensemble: resuming run [-0-9a-f]+ of ` + regexp.QuoteMeta(sp) + ` from turn 1 \(0 turns done\)\n$`); o.code != 0 || !want.MatchString(o.stderr) {
		t.Fatalf("exit %d, stderr %q, want %q", o.code, o.stderr, want)
	}
}

func noEnv(string) (string, bool) { return "", false }

// -q leaves errors only: no progress, no summary, no notices; the result
// is unchanged.
func TestQuiet(t *testing.T) {
	t.Parallel()
	args := []string{"run", example + "ensemble.yaml", "--responses", example + "responses.yaml"}
	loud := ensembleCmd(t, "", append(args, "--output", "json")...)
	quiet := ensembleCmd(t, "", append(args, "--output", "json", "-q")...)
	if quiet.code != 0 || normalize(quiet.stdout) != normalize(loud.stdout) || quiet.stderr != "" {
		t.Fatalf("json: exit %d, stderr %q", quiet.code, quiet.stderr)
	}
	o := ensembleCmd(t, "", append(args, "--output", "text", "--quiet")...)
	if o.code != 0 || !strings.HasPrefix(o.stdout, "final state:\n") || o.stderr != "" {
		t.Fatalf("text: exit %d %q %q", o.code, o.stdout, o.stderr)
	}
	// Errors still show.
	o = ensembleCmd(t, "", "run", "nope.yaml", "-q")
	if o.code != 2 || !strings.Contains(o.stderr, "nope.yaml") {
		t.Fatalf("error: exit %d %q", o.code, o.stderr)
	}
	// A failed execution is an error: -q prints it on stderr, one line.
	o = ensembleCmd(t, "", "run", "../../examples/runaway-loop/ensemble.yaml", "--output", "text", "-q")
	if o.code != 1 || !strings.HasPrefix(o.stderr, "ensemble: turn ") || strings.Contains(o.stdout, "completed") {
		t.Fatalf("failed run: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
	// resume -q: no notice either.
	sp := filepath.Join(t.TempDir(), "s.json")
	ensembleCmd(t, "", append(args, "--output", "json", "--state", sp, "--max-turns", "2")...)
	o = ensembleCmd(t, "", "resume", sp, "-q", "--output", "text", "--max-turns", "10")
	if o.code != 0 || o.stderr != "" || !strings.HasPrefix(o.stdout, "final state:\n") {
		t.Fatalf("resume -q: exit %d %q %q", o.code, o.stdout, o.stderr)
	}
}

// The text summary of a run where an agent failed and others never ran
// says so, and fits a narrow terminal ($COLUMNS) without breaking words.
func TestTextSummaryOfAFailedRunFitsTheTerminal(t *testing.T) {
	t.Parallel()
	for _, cols := range []string{"50", "100"} {
		o := ensembleEnv(t, map[string]string{"COLUMNS": cols}, "run", "../../examples/runaway-loop/ensemble.yaml", "--output", "text")
		if o.code != 1 {
			t.Fatalf("exit %d %s", o.code, o.stderr)
		}
		golden(t, "run-failed-"+cols+"cols.txt", o.stdout)
	}
}

// Shell completion offers the values of enum flags and the files each
// command takes.
func TestShellCompletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "x.yaml", "--output", ""}, "text\njson\njsonl\n:4\n"},
		{[]string{"resume", "s.json", "--output", "j"}, "text\njson\njsonl\n:4\n"},
		{[]string{"validate", "--output", ""}, "text\njson\n:4\n"},
		{[]string{"graph", "x.yaml", "--format", ""}, "mermaid\ndot\n:4\n"},
		{[]string{"test", "--format", ""}, "pretty\nprogress\njunit\ncucumber\nmarkdown\n:4\n"},
		{[]string{"run", ""}, "yaml\nyml\n:8\n"},
		{[]string{"validate", "a.yaml", ""}, "yaml\nyml\n:8\n"},
		{[]string{"graph", ""}, "yaml\nyml\n:8\n"},
		{[]string{"resume", ""}, ":0\n"},
		{[]string{"run", "x.yaml", "--responses", ""}, "yaml\nyml\n:8\n"},
		{[]string{"run", "x.yaml", "--state", ""}, ":0\n"},
	} {
		o := ensembleCmd(t, "", append([]string{"__complete"}, tc.args...)...)
		if o.code != 0 || o.stdout != tc.want {
			t.Errorf("%v: exit %d, got %q, want %q", tc.args, o.code, o.stdout, tc.want)
		}
	}
}

// A reader that closes stdout early (`| head -1`) does not kill the run:
// it ends as usual and writes its report.
func TestClosedStdoutStillWritesTheReport(t *testing.T) {
	t.Parallel()
	rp := filepath.Join(t.TempDir(), "run.md")
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "run", example+"ensemble.yaml", "--responses", example+"responses.yaml",
		"--output", "text", "--report", rp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close() // the reader is gone before the first line
	err = cmd.Wait()
	if code := exitCode(t, err); code != 0 {
		t.Fatalf("exit %d (%v), want 0", code, err)
	}
	if b, err := os.ReadFile(rp); err != nil || !bytes.Contains(b, []byte("completed")) {
		t.Fatalf("report: %v %.200s", err, b)
	}
}

// A loop whose writer may run only once ends "completed" after one round:
// validate warns of it, and the run's summary and result name the agent
// that was ready again but held back.
func TestLoopHeldBackIsReported(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "heldback")
	v := ensembleCmd(t, "", "validate", filepath.Join(dir, "ensemble.yaml"))
	if v.code != 0 || !strings.Contains(v.stderr, `agent "writer" is in a loop (with "reviewer") but runs only once`) {
		t.Errorf("validate: exit %d\n%s", v.code, v.stderr)
	}
	args := []string{"run", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml")}
	o := ensembleCmd(t, "", append(args, "--output", "text")...)
	if o.code != 0 || !strings.Contains(o.stdout+o.stderr, `held back: "writer" was ready again after 1 execution, but its conversation.max_turns stops it there`) {
		t.Errorf("text: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	j := ensembleCmd(t, "", append(args, "--output", "json")...)
	var res struct {
		HeldBack []map[string]any `json:"held_back"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &res); err != nil || len(res.HeldBack) != 1 || res.HeldBack[0]["agent_name"] != "writer" {
		t.Errorf("json: %v %+v\n%s", err, res, j.stdout)
	}
}
