package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/store"
)

// noProfilesEnv is the environment without $ENSEMBLE_PROFILES.
func noProfilesEnv(k string) (string, bool) {
	if k == "ENSEMBLE_PROFILES" {
		return "", false
	}
	return os.LookupEnv(k)
}

// batchFiles writes the files of a batch into dir.
func batchFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// Each run takes the injected responses from the first: three inputs
// through an ensemble whose agents have one response each all complete.
func TestBatchInjectedResponsesPerRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := writeBatchFiles(t, dir, 3)
	r := ensembleCmd(t, "", args...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), data)
	}
	for i, line := range lines {
		var l struct {
			ID     string        `json:"id"`
			Result engine.Result `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("doc-%d", i); l.ID != want || l.Result.CompletionReason != "completed" || len(l.Result.Errors) != 0 ||
			l.Result.FinalState["report"] != "All fine." || l.Result.Input != fmt.Sprintf("document %d", i) {
			t.Errorf("line %d: %s", i, line)
		}
	}
	for _, want := range []string{"ensemble: batch of 3 inputs in ", ": 3 completed, 0 failed\n", "by completion reason: completed 3\n", "usage: 0 requests"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("summary without %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "\r") {
		t.Errorf("a progress line off a terminal:\n%q", r.stderr)
	}
	// On a terminal, the progress line is taken down before the summary;
	// -q prints neither.
	var errb bytes.Buffer
	std := &stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errb, errTTY: true, getenv: noProfilesEnv}
	if code := run(context.Background(), args, std); code != 0 || !strings.Contains(errb.String(), "\r\x1b[Kensemble: batch of 3 inputs") {
		t.Errorf("on a terminal: exit %d\n%q", code, errb.String())
	}
	errb.Reset()
	if code := run(context.Background(), append(args, "-q"), std); code != 0 || errb.Len() != 0 {
		t.Errorf("-q: exit %d\n%q", code, errb.String())
	}
}

// batchScript fails for the input "fail", and for the input "block" waits
// while a file "block" is beside it, after making "started" (a script that
// outlives a killed process ends when the test removes "block").
const batchScript = `#!/bin/sh
in=$(cat)
dir=$(dirname "$0")
case "$in" in
*'"input":"fail"'*) echo "failing on purpose" >&2; exit 3 ;;
*'"input":"block"'*) if [ -e "$dir/block" ]; then touch "$dir/started"; fi; while [ -e "$dir/block" ]; do sleep 0.05; done ;;
esac
printf '{"echo": %s}\n' "$(printf '%s' "$in" | sed 's/.*"input":\("[^"]*"\).*/\1/')"
`

const batchScriptEnsemble = `name: echo
agents:
  - name: first
    script: step.sh
  - name: second
    script: step.sh
    dependencies: [first]
`

func TestBatchExitCodesAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	batchFiles(t, dir, map[string]string{"ensemble.yaml": batchScriptEnsemble, "step.sh": batchScript,
		"ok.jsonl": "\"a\"\n\"b\"\n", "fail.jsonl": "\"a\"\n\"fail\"\n\"b\"\n",
		"dup.jsonl": "{\"id\": \"x\", \"input\": \"a\"}\n{\"id\": \"x\", \"input\": \"b\"}\n",
		"bad.jsonl": "\"a\"\n{\"input\":\n"})
	ens := filepath.Join(dir, "ensemble.yaml")
	batch := func(inputs string, extra ...string) outcome {
		return ensembleCmd(t, "", append([]string{"batch", ens, "--inputs", filepath.Join(dir, inputs)}, extra...)...)
	}
	if r := batch("ok.jsonl"); r.code != 0 || strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, `"final_state":{"first":{"echo":"a"},"second":{"echo":"a"}}`) {
		t.Errorf("ok: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := batch("fail.jsonl")
	if r.code != 1 || strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stderr, ": 2 completed, 1 failed") ||
		!strings.Contains(r.stderr, "completed 3 (1 with a failed execution)") {
		t.Errorf("a failing input: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Every run stopped by --max-turns: their one exit code is the batch's.
	if r := batch("ok.jsonl", "--max-turns", "1"); r.code != engine.ExitMaxTurns || !strings.Contains(r.stderr, "max_total_turns 2") {
		t.Errorf("--max-turns 1: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct{ inputs, want string }{
		{"dup.jsonl", `dup.jsonl:2: the id "x" is the id of line 1 too`},
		{"bad.jsonl", "bad.jsonl:2: not valid JSON"},
	} {
		out := filepath.Join(dir, c.inputs+".out")
		r := batch(c.inputs, "--out", out)
		if _, err := os.Stat(out); r.code != 2 || !strings.Contains(r.stderr, c.want) || err == nil {
			t.Errorf("%s: exit %d, output %v\n%s", c.inputs, r.code, err, r.stderr)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"batch", ens}, "--inputs FILE is required"},
		{[]string{"batch", ens, "--inputs", "x", "--concurrency", "0"}, "--concurrency must be at least 1"},
		{[]string{"batch", ens, "--inputs", "-", "--state", filepath.Join(dir, "s.db")}, "--state needs --inputs FILE"},
		{[]string{"batch", "--resume", filepath.Join(dir, "s.db"), ens}, "--resume takes no ensemble file"},
		{[]string{"batch", "--resume", filepath.Join(dir, "s.db"), "--max-turns", "3"}, "--max-turns: a resumed batch goes on"},
		{[]string{"batch", ens, "--inputs", "x", "--batch-id", "b"}, "--batch-id needs --state"},
	} {
		if r := ensembleCmd(t, "", c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, r.code, r.stderr)
		}
	}
}

// comparableLines are the lines of a batch's output without what depends
// on the clock.
func comparableLines(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var l map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, string(l["id"])+" "+comparableResult(t, l["result"]))
	}
	return out
}

// waitFor waits until ok, for up to a minute.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// savedLines is how many lines the batch of the database at path has saved.
func savedLines(path string) int {
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		return 0
	}
	defer db.Close()
	bs, err := db.Batches()
	if err != nil || len(bs) != 1 {
		return 0
	}
	return bs[0].Lines
}

// batchReference writes the script ensemble and the inputs into dir, and
// returns their paths and the output of an uninterrupted batch of them, to
// compare a resumed batch's with.
func batchReference(t *testing.T, dir, inputs string) (ens, in string, want []byte) {
	t.Helper()
	batchFiles(t, dir, map[string]string{"ensemble.yaml": batchScriptEnsemble, "step.sh": batchScript, "in.jsonl": inputs})
	ens, in = filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "in.jsonl")
	ref := filepath.Join(dir, "reference.jsonl")
	if r := ensembleCmd(t, "", "batch", ens, "--inputs", in, "--out", ref); r.code != 0 {
		t.Fatalf("reference: exit %d\n%s", r.code, r.stderr)
	}
	want, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	return ens, in, want
}

// A batch with --state cancelled mid-way (Ctrl-C, in process) keeps the
// lines of the inputs before the run it stopped; batch --resume finishes
// that run and the others and ends with the lines an uninterrupted batch
// writes, the first ones untouched.
func TestBatchStateCancelAndResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ens, in, want := batchReference(t, dir, "\"a\"\n{\"id\": \"b\", \"input\": \"b\"}\n\"block\"\n\"c\"\n\"d\"\n\"e\"\n")

	batchFiles(t, dir, map[string]string{"block": ""})
	db, out := filepath.Join(dir, "runs.db"), filepath.Join(dir, "out.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		std := &stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errb, getenv: noProfilesEnv}
		code <- run(ctx, []string{"batch", ens, "--inputs", in, "--out", out, "--state", db, "--concurrency", "2"}, std)
	}()
	// The blocked run has started, and the 4 others have ended.
	waitFor(t, "the blocked run", func() bool { _, err := os.Stat(filepath.Join(dir, "started")); return err == nil })
	waitFor(t, "the other runs", func() bool { return savedLines(db) == 5 })
	cancel()
	if c := <-code; c != engine.ExitCancelled {
		t.Fatalf("cancelled batch: exit %d\n%s", c, errb.String())
	}
	for _, w := range []string{"interrupted after", "5 of 6 done (0 failed), 2 lines written", "the rest goes on with: ensemble batch --resume "} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("summary without %q:\n%s", w, errb.String())
		}
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := comparableLines(t, first), comparableLines(t, want); len(g) != 2 || strings.Join(g, "\n") != strings.Join(w[:2], "\n") {
		t.Fatalf("the output of the cancelled batch:\n%s", first)
	}
	// A line cut short, as a killed process may leave, is written again.
	f, err := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":3,"res`)
	f.Close()

	os.Remove(filepath.Join(dir, "block"))
	r := ensembleCmd(t, "", "batch", "--resume", db)
	if r.code != 0 || !strings.Contains(r.stderr, "resuming batch ") || !strings.Contains(r.stderr, ": 5 of 6 inputs done") {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, first) {
		t.Errorf("the lines written before were changed:\n%s\nthen\n%s", first, got)
	}
	if g, w := strings.Join(comparableLines(t, got), "\n"), strings.Join(comparableLines(t, want), "\n"); g != w {
		t.Errorf("resumed output\n%s\nwant\n%s", g, w)
	}
	// Its id is taken.
	if r := ensembleCmd(t, "", "batch", ens, "--inputs", in, "--state", db, "--batch-id", strings.Split(strings.TrimPrefix(r.stderr, "ensemble: resuming batch "), " ")[0]); r.code != 2 ||
		!strings.Contains(r.stderr, "holds a batch") || !strings.Contains(r.stderr, "ensemble batch --resume ") {
		t.Errorf("a batch id taken: exit %d\n%s", r.code, r.stderr)
	}
	// The batch is done: resuming it again needs its id, and writes the
	// same lines.
	if r := ensembleCmd(t, "", "batch", "--resume", db); r.code != 2 || !strings.Contains(r.stderr, "no unfinished batch") {
		t.Errorf("resuming a finished batch: exit %d\n%s", r.code, r.stderr)
	}
}

// Ctrl-C (SIGINT to the binary) stops a batch cleanly: the running runs
// are stopped, no other starts, the lines before them are written, and the
// exit code is 130.
func TestBatchInterruptedBySIGINT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	batchFiles(t, dir, map[string]string{"ensemble.yaml": batchScriptEnsemble, "step.sh": batchScript, "block": "",
		"in.jsonl": "\"a\"\n\"block\"\n\"c\"\n"})
	out := filepath.Join(dir, "out.jsonl")
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "batch", filepath.Join(dir, "ensemble.yaml"), "--inputs", filepath.Join(dir, "in.jsonl"),
		"--out", out, "--concurrency", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the blocked run", func() bool { _, err := os.Stat(filepath.Join(dir, "started")); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if c := exitCode(t, err); c != engine.ExitCancelled {
		t.Fatalf("exit %d\n%s", c, stderr.String())
	}
	data, _ := os.ReadFile(out)
	if lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], `{"id":1,"result":`) {
		t.Errorf("output:\n%s", data)
	}
	if !strings.Contains(stderr.String(), "interrupted after") || !strings.Contains(stderr.String(), "1 of 3 done") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// A batch killed with SIGKILL while a run is in its turn, and resumed,
// ends with the lines of an uninterrupted batch.
func TestBatchKilledAndResumed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ens, in, want := batchReference(t, dir, "\"a\"\n\"block\"\n\"c\"\n\"d\"\n")
	batchFiles(t, dir, map[string]string{"block": ""})
	defer os.Remove(filepath.Join(dir, "block")) // ends the script the killed process leaves
	db, out := filepath.Join(dir, "runs.db"), filepath.Join(dir, "out.jsonl")
	cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "batch", ens, "--inputs", in, "--out", out, "--state", db, "--concurrency", "2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the blocked run", func() bool { _, err := os.Stat(filepath.Join(dir, "started")); return err == nil })
	waitFor(t, "the other runs", func() bool { return savedLines(db) == 3 })
	cmd.Process.Kill()
	cmd.Wait()
	os.Remove(filepath.Join(dir, "block"))
	r := ensembleCmd(t, "", "batch", "--resume", db, "-q")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(comparableLines(t, got), "\n"), strings.Join(comparableLines(t, want), "\n"); g != w {
		t.Errorf("resumed output\n%s\nwant\n%s", g, w)
	}
	// The blocked run was continued, not started again: one run per input.
	r = ensembleCmd(t, "", "state", "list", db)
	if n := strings.Count(r.stdout, "completed"); n != 4 {
		t.Errorf("state list:\n%s", r.stdout)
	}
}

// A run that ended but whose line was never saved (the process was killed
// in between) is not run again when the batch is resumed: its line is made
// from the saved run, with the ensemble's output.
func TestBatchResumeRunEndedWithoutItsLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ens := strings.Replace(batchScriptEnsemble, "name: echo\n", "name: echo\noutput: second\n", 1)
	batchFiles(t, dir, map[string]string{"ensemble.yaml": ens, "step.sh": batchScript, "in.jsonl": "\"a\"\n\"b\"\n\"c\"\n"})
	db, out := filepath.Join(dir, "runs.db"), filepath.Join(dir, "out.jsonl")
	r := ensembleCmd(t, "", "batch", filepath.Join(dir, "ensemble.yaml"), "--inputs", filepath.Join(dir, "in.jsonl"), "--out", out, "--state", db)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(want, []byte(`"output":`)) {
		t.Fatalf("the lines have no output:\n%s", want)
	}
	before := ensembleCmd(t, "", "state", "list", db, "--output", "json").stdout
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM batch_lines WHERE idx >= 1`, `UPDATE batches SET status = ''`} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	first := bytes.SplitAfter(want, []byte("\n"))[0]
	if err := os.WriteFile(out, first, 0o600); err != nil {
		t.Fatal(err)
	}
	r = ensembleCmd(t, "", "batch", "--resume", db)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(comparableLines(t, got), "\n"), strings.Join(comparableLines(t, want), "\n"); g != w {
		t.Errorf("resumed output\n%s\nwant\n%s", g, w)
	}
	// Nothing ran again: the runs are as they were.
	if l := ensembleCmd(t, "", "state", "list", db, "--output", "json"); l.stdout != before {
		t.Errorf("runs:\n%s\nwere\n%s", l.stdout, before)
	}
}

// A resumed batch refuses to go on when its inputs (or ensemble, or
// responses) changed, unless --force; the inputs may come from standard
// input when the batch is not durable.
func TestBatchResumeRefusesChangedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	batchFiles(t, dir, map[string]string{"ensemble.yaml": batchScriptEnsemble, "step.sh": batchScript, "in.jsonl": "\"a\"\n"})
	ens, in, db := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "runs.db")
	if r := ensembleCmd(t, "", "batch", ens, "--inputs", in, "--state", db, "--batch-id", "nightly", "-q"); r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	batchFiles(t, dir, map[string]string{"in.jsonl": "\"b\"\n"})
	if r := ensembleCmd(t, "", "batch", "--resume", db, "--batch-id", "nightly"); r.code != 2 ||
		!strings.Contains(r.stderr, "the inputs file "+in+" changed since the batch started") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("changed inputs: exit %d\n%s", r.code, r.stderr)
	}
	if r := ensembleCmd(t, "", "batch", "--resume", db, "--batch-id", "nightly", "--force", "--out", "-"); r.code != 0 ||
		!strings.Contains(r.stderr, "resuming anyway (--force)") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("--force: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := ensembleCmd(t, "\"x\"\n{\"id\": \"y\", \"input\": \"y\"}\n", "batch", ens, "--inputs", "-"); r.code != 0 ||
		!strings.Contains(r.stdout, `{"id":1,"result":{"ensemble":"echo","input":"x",`) || !strings.Contains(r.stdout, `{"id":"y","result":`) {
		t.Errorf("--inputs -: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestBatchOutputIsNotAnInput: --out naming a file the batch reads (the
// inputs, the ensemble, the state database, the responses), even by another
// path, is refused before anything is written: it would be overwritten.
func TestBatchOutputIsNotAnInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	batchFiles(t, dir, map[string]string{"ensemble.yaml": batchScriptEnsemble, "step.sh": batchScript,
		"in.jsonl": "\"a\"\n\"b\"\n", "responses.yaml": "{}\n"})
	if err := os.Symlink(filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	ens, in, db := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "runs.db")
	batch := []string{"batch", ens, "--inputs", in}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(batch, "--out", in), "is the --inputs file"},
		{append(batch, "--out", filepath.Join(dir, "link.jsonl")), "is the --inputs file"},
		{append(batch, "--out", filepath.Join(dir, ".", "ensemble.yaml")), "is the ensemble file"},
		{append(batch, "--out", db, "--state", db), "is the --state database"},
		{append(batch, "--out", filepath.Join(dir, "responses.yaml"), "--responses", filepath.Join(dir, "responses.yaml")), "is the --responses file"},
	} {
		r := ensembleCmd(t, "", c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", c.args[4:], r.code, c.want, r.stderr)
		}
		if b, err := os.ReadFile(in); err != nil || string(b) != "\"a\"\n\"b\"\n" {
			t.Fatalf("%v: the inputs are now %q (%v)", c.args[4:], b, err)
		}
		if b, _ := os.ReadFile(ens); string(b) != batchScriptEnsemble {
			t.Fatalf("%v: the ensemble file was overwritten", c.args[4:])
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("%v: the database was made", c.args[4:])
		}
	}
	// A resumed batch too: its output may be named again, not as its inputs.
	if r := ensembleCmd(t, "", append(batch, "--state", db, "--out", filepath.Join(dir, "out.jsonl"), "-q")...); r.code != 0 {
		t.Fatalf("batch: exit %d\n%s", r.code, r.stderr)
	}
	for _, out := range []string{in, db} {
		r := ensembleCmd(t, "", "batch", "--resume", db, "--batch-id", batchIDIn(t, db), "--out", out)
		if r.code != 2 || !strings.Contains(r.stderr, "the results would overwrite it") {
			t.Errorf("--resume --out %s: exit %d\n%s", out, r.code, r.stderr)
		}
	}
	if b, err := os.ReadFile(in); err != nil || string(b) != "\"a\"\n\"b\"\n" {
		t.Fatalf("resume: the inputs are now %q (%v)", b, err)
	}
}

// batchIDIn is the one batch of the database at db.
func batchIDIn(t *testing.T, db string) string {
	t.Helper()
	r := ensembleCmd(t, "", "batch", "--resume", db)
	_, rest, ok := strings.Cut(r.stderr, "\n  ")
	id, _, _ := strings.Cut(rest, " ")
	if !ok || id == "" {
		t.Fatalf("no batch in %s: %s", db, r.stderr)
	}
	return id
}
