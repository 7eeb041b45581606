package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The llm-orc project of importer/llmorc's testdata imports into files that
// validate, and its pipeline runs with injected responses: the llm-orc
// scripts unchanged, the fan-out, the guard, the child, the dispatch and the
// loop.
func TestImportLLMOrcValidatesAndRuns(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "imported")
	o := ensembleCmd(t, "", "import", "llm-orc", filepath.Join("..", "..", "internal", "importer", "llmorc", "testdata", "project"), "--out", out)
	if o.code != 0 {
		t.Fatalf("import: exit %d\n%s", o.code, o.stderr)
	}
	for _, want := range []string{"wrote pipeline.yaml", "wrote scripts/count.py", "wrote scripts/_words.py"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("import's output lacks %q:\n%s", want, o.stdout)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
	if o := ensembleCmd(t, "", append([]string{"validate"}, files...)...); o.code != 0 || len(files) != 4 {
		t.Fatalf("validate %v: exit %d\n%s%s", files, o.code, o.stdout, o.stderr)
	}
	resp := filepath.Join(out, "responses.yaml")
	if err := os.WriteFile(resp, []byte("analyst: [\"two topics\"]\nskipped: [\"ran\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o = ensembleCmd(t, "", "run", filepath.Join(out, "pipeline.yaml"), "--responses", resp, "--output", "json")
	if o.code != 0 {
		t.Fatalf("run: exit %d\n%s", o.code, o.stderr)
	}
	var r struct {
		FinalState map[string]any `json:"final_state"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(map[string]any{"per-topic": r.FinalState["per-topic"], "report": r.FinalState["report"],
		"route": r.FinalState["route"], "refine": r.FinalState["refine"].(map[string]any)["done"],
		"shout": r.FinalState["shout"], "joined": r.FinalState["joined"], "digest": r.FinalState["digest"]})
	// route and summary give the child's output: agent's output (llm-orc's
	// deliverable), which digest reads.
	// shout's guard is false: it is skipped, and joined, after it and
	// report, runs with report's output alone (llm-orc passes only the
	// dependencies that succeeded).
	want := `{"digest":{"digest":"Inpu"},"joined":{"dependencies":["report"],"words":6},"per-topic":[{"chunk":"Rust is fast.","index":0,"label":"topic","of":2,"words":3},{"chunk":"Go is simple.","index":1,"label":"topic","of":2,"words":3}],` +
		`"refine":true,"report":{"words":6},"route":{"summary":"Rust is fast. Go is simple. Is Python sl"},"shout":null}`
	if string(got) != want {
		t.Errorf("final state\n got %s\nwant %s", got, want)
	}
	if o := ensembleCmd(t, "", "import", "llm-orc", ".", "--out", out); o.code != 2 {
		t.Errorf("import of a folder without .llm-orc: exit %d, want 2", o.code)
	}
}

// A loop whose carried field is null gives the next round the same input,
// as llm-orc does, never the text "null".
func TestImportLLMOrcNullCarry(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "imported")
	if o := ensembleCmd(t, "", "import", "llm-orc", filepath.Join("..", "..", "internal", "importer", "llmorc", "testdata", "fields"), "--out", out); o.code != 0 {
		t.Fatalf("import: exit %d\n%s", o.code, o.stderr)
	}
	resp := filepath.Join(out, "responses.yaml")
	if err := os.WriteFile(resp, []byte("extract: ['{\"a\": 1}']\nshaped: ['{\"n\": 1}']\njudge: ['{\"verdict\": \"ok\"}']\nunless: [fine]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ensembleCmd(t, "", "run", filepath.Join(out, "fields.yaml"), "--responses", resp, "--output", "json", "--input", "go")
	if o.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	var r struct {
		FinalState map[string]any `json:"final_state"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"again", "onward"} {
		seen, _ := r.FinalState[name].(map[string]any)["seen"].(string)
		if seen == "" || strings.Contains(seen, "null") {
			t.Errorf("%s's last round saw %q", name, seen)
		}
	}
}

// A dispatcher's cases include composite ensembles and leave out the file
// that does not validate; a script at the root of a dispatched child gets
// llm-orc's root stdin.
func TestImportLLMOrcDispatch(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "imported")
	o := ensembleCmd(t, "", "import", "llm-orc", filepath.Join("..", "..", "internal", "importer", "llmorc", "testdata", "dispatch"), "--out", out)
	if o.code != 0 {
		t.Fatalf("import: exit %d\n%s", o.code, o.stderr)
	}
	if !strings.Contains(o.stdout, "does not validate are no cases") {
		t.Errorf("the broken case is not listed:\n%s", o.stdout)
	}
	if o := ensembleCmd(t, "", "validate", filepath.Join(out, "router.yaml")); o.code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	o = ensembleCmd(t, "", "run", filepath.Join(out, "router.yaml"), "--output", "json", "--input", "go deep")
	if o.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	var r struct {
		FinalState map[string]any `json:"final_state"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(r.FinalState["run"])
	if want := `{"context":{},"input":"go deep","parameters":{}}`; string(got) != want {
		t.Errorf("the dispatched probe's stdin %s, want %s", got, want)
	}
}

// A bare script name is found in .llm-orc/scripts and llm-orc's primitives
// come from its package (--llm-orc-package): the converted ensemble runs.
func TestImportLLMOrcPrimitives(t *testing.T) {
	t.Parallel()
	td := filepath.Join("..", "..", "internal", "importer", "llmorc", "testdata")
	out := filepath.Join(t.TempDir(), "imported")
	o := ensembleCmd(t, "", "import", "llm-orc", filepath.Join(td, "primitives"), "--out", out,
		"--llm-orc-package", filepath.Join(td, "llm_orc_pkg", "llm_orc"))
	if o.code != 0 || !strings.Contains(o.stdout, "wrote primitives/text/upper.py") {
		t.Fatalf("import: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	o = ensembleCmd(t, "", "run", filepath.Join(out, "validation.yaml"), "--output", "json", "--input", "abc")
	if o.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	var r struct {
		FinalState map[string]any `json:"final_state"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(r.FinalState["check"]); string(got) != `{"checked":"ABC"}` {
		t.Errorf("check %s", got)
	}
}

// A probe script at each position of an llm-orc ensemble (root, dependent,
// fan-out instance, after a fan-out, after a skipped guarded agent, child
// of a dispatch, of a fan-out and of a loop) receives the stdin docs/llm-orc.md says llm-orc gives it.
func TestImportLLMOrcProbes(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "imported")
	if o := ensembleCmd(t, "", "import", "llm-orc", filepath.Join("..", "..", "internal", "importer", "llmorc", "testdata", "probes"), "--out", out); o.code != 0 {
		t.Fatalf("import: exit %d\n%s", o.code, o.stderr)
	}
	o := ensembleCmd(t, "", "run", filepath.Join(out, "probes.yaml"), "--output", "json")
	if o.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	var r struct {
		FinalState map[string]any `json:"final_state"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatal(err)
	}
	const in = "Rust is fast. Go is simple."
	root := `{"input": "` + in + `", "parameters": {"at": "root"}, "context": {}}`
	dep := func(name, response string) string {
		b, _ := json.Marshal(response)
		return `"` + name + `": {"response": ` + string(b) + `, "status": "success", "model_substituted": false}`
	}
	chunk := func(i int, item string) string {
		return `{"agent_name": "fan[` + string(rune('0'+i)) + `]", "input": "` + item + `", "chunk_index": ` + string(rune('0'+i)) +
			`, "total_chunks": 2, "base_input": "` + in + `", "context": {}}`
	}
	compact := func(s string) string {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%v: %s", err, s)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	dependent := `{"agent_name": "dependent", "input_data": "` + in + `", "context": {}, "dependencies": {` + dep("root", compact(root)) + `}}`
	fan := `[` + chunk(0, "Rust is fast") + `, ` + chunk(1, "Go is simple.") + `]`
	want := map[string]string{
		"root":      root,
		"dependent": dependent,
		"fan":       fan,
		"after-fan": `{"agent_name": "after-fan", "input_data": "` + in + `", "context": {}, "dependencies": {` + dep("fan", compact(fan)) + `}}`,
		// llm-orc hands a script only the dependencies that succeeded: the
		// skipped guarded agent is absent
		"after-guard": `{"agent_name": "after-guard", "input_data": "` + in + `", "context": {}, "dependencies": {` +
			dep("dependent", compact(dependent)) + `}}`,
		// the dispatched child's root script gets the dispatcher's input
		"route": `{"input": "` + in + `", "parameters": {}, "context": {}}`,
		// the root script of a fan-out's child gets its item, of a loop's
		// body the round's input
		"per-item": `[{"input": "Rust is fast", "parameters": {}, "context": {}}, {"input": "Go is simple.", "parameters": {}, "context": {}}]`,
		"rounds":   `{"input": "` + in + `", "parameters": {}, "context": {}}`,
		"guarded":  `null`,
	}
	for name, w := range want {
		got, _ := json.Marshal(r.FinalState[name])
		if string(got) != compact(w) {
			t.Errorf("%s's stdin\n got %s\nwant %s", name, got, compact(w))
		}
	}
}
