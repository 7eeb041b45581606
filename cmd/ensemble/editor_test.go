package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/schema"
)

func TestGraphCommand(t *testing.T) {
	t.Parallel()
	const glob = "../../examples/*/ensemble.yaml"
	paths, err := filepath.Glob(glob)
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s matched no example (%v): nothing to graph", glob, err)
	}
	for _, p := range paths {
		name := filepath.Base(filepath.Dir(p))
		for format, ext := range map[string]string{"mermaid": "mmd", "dot": "dot"} {
			args := []string{"graph", p}
			if format == "dot" {
				args = append(args, "--format", "dot")
			}
			o := ensembleCmd(t, "", args...)
			want, err := os.ReadFile(filepath.Join("../../internal/graph/testdata", name+"."+ext))
			if err != nil {
				t.Fatalf("%v (run go test ./graph -update)", err)
			}
			if o.code != 0 || o.stdout != string(want) || o.stderr != "" {
				t.Errorf("%s %s: exit %d, stderr %q, stdout\n%s", name, format, o.code, o.stderr, o.stdout)
			}
		}
	}
	if o := ensembleCmd(t, "", "graph", example+"ensemble.yaml", "--format", "svg"); o.code != 2 || !strings.Contains(o.stderr, "--format") {
		t.Errorf("bad format: exit %d, %s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "graph", "testdata/broken.yaml"); o.code != 2 || o.stdout != "" || !strings.Contains(o.stderr, "broken.yaml:") {
		t.Errorf("broken file: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
}

func TestSchemaCommand(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "schema")
	if o.code != 0 || o.stdout != string(schema.JSON) {
		t.Fatalf("exit %d, stderr %s", o.code, o.stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || doc["$schema"] == nil {
		t.Fatalf("not a schema: %v", err)
	}
	if o := ensembleCmd(t, "", "schema", "extra"); o.code != 2 {
		t.Fatalf("extra argument: exit %d", o.code)
	}
}

func TestValidateJSON(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "validate", "--output", "json", example+"ensemble.yaml", "../../examples/writer-reviewer/ensemble.yaml")
	if o.code != 0 || o.stdout != "[]\n" || o.stderr != "" {
		t.Fatalf("valid files: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
	o = ensembleCmd(t, "", "validate", "--output", "json", example+"ensemble.yaml", "testdata/broken.yaml", "nope.yaml")
	if o.code != 2 || o.stderr != "" {
		t.Fatalf("exit %d, stderr %q", o.code, o.stderr)
	}
	var problems []map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &problems); err != nil {
		t.Fatalf("stdout is not a JSON list: %v\n%s", err, o.stdout)
	}
	text := ensembleCmd(t, "", "validate", "testdata/broken.yaml")
	if n := strings.Count(text.stderr, "\n"); len(problems) != n+1 {
		t.Fatalf("%d problems in JSON, %d in text", len(problems), n)
	}
	for _, p := range problems {
		if len(p) != 5 || p["file"] == nil || p["line"] == nil || p["column"] == nil || p["message"] == "" || p["severity"] != "error" {
			t.Fatalf("problem %v", p)
		}
	}
	first, last := problems[0], problems[len(problems)-1]
	if first["file"] != "testdata/broken.yaml" || first["line"].(float64) < 1 || first["column"].(float64) < 1 {
		t.Errorf("first %v", first)
	}
	if last["file"] != "nope.yaml" || last["line"].(float64) != 0 || !strings.Contains(last["message"].(string), "cannot read") {
		t.Errorf("last %v", last)
	}
	golden(t, "validate-broken.json", o.stdout)
	if o := ensembleCmd(t, "", "validate", "--output", "xml", example+"ensemble.yaml"); o.code != 2 {
		t.Fatalf("bad --output: exit %d", o.code)
	}
}

// A warning is printed and passes; --strict fails on it, in text and JSON.
func TestValidateWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "join.yaml")
	src := `name: join
agents:
  - {name: start, ask: q}
  - {name: coder, ask: q, dependencies: [start, {agent_name: critic, requires_all: false}], conversation: {max_turns: 3}}
  - {name: critic, ask: q, dependencies: [coder], conversation: {max_turns: 3}}
  - {name: synth, ask: q, dependencies: [coder, critic], conversation: {max_turns: 3}}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	want := file + `:6:5: warning: agent "synth" joins "coder" and "critic", which run in the same loop`
	o := ensembleCmd(t, "", "validate", file)
	if o.code != 0 || !strings.HasPrefix(o.stderr, want) || o.stdout != file+": ok\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
	o = ensembleCmd(t, "", "validate", "--strict", file)
	if o.code != 2 || !strings.HasPrefix(o.stderr, file+`:6:5: agent "synth" joins`) || o.stdout != "" {
		t.Fatalf("--strict: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
	for _, c := range []struct {
		args     []string
		code     int
		severity string
	}{{nil, 0, "warning"}, {[]string{"--strict"}, 2, "error"}} {
		o = ensembleCmd(t, "", append(append([]string{"validate", "--output", "json"}, c.args...), file)...)
		var problems []map[string]any
		if err := json.Unmarshal([]byte(o.stdout), &problems); err != nil || o.code != c.code || len(problems) != 1 || problems[0]["severity"] != c.severity || problems[0]["line"] != 6.0 {
			t.Fatalf("json %v: exit %d, %s (%v)", c.args, o.code, o.stdout, err)
		}
	}
	if err := os.WriteFile(file, []byte(strings.Replace(src, "{name: synth,", "{name: synth, trigger: all,", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := ensembleCmd(t, "", "validate", "--strict", file); o.code != 0 || o.stderr != "" {
		t.Fatalf("trigger: all: exit %d, stderr %q", o.code, o.stderr)
	}
}
