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
	paths, _ := filepath.Glob("../../examples/*/ensemble.yaml")
	for _, p := range paths {
		name := filepath.Base(filepath.Dir(p))
		for format, ext := range map[string]string{"mermaid": "mmd", "dot": "dot"} {
			args := []string{"graph", p}
			if format == "dot" {
				args = append(args, "--format", "dot")
			}
			o := ensembleCmd(t, "", args...)
			want, err := os.ReadFile(filepath.Join("../../graph/testdata", name+"."+ext))
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
		if len(p) != 4 || p["file"] == nil || p["line"] == nil || p["column"] == nil || p["message"] == "" {
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
