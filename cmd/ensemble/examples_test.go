package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestEveryExampleRuns loads and runs every ensemble under examples/ with its
// responses file, as a user would, and checks how it ends.
func TestEveryExampleRuns(t *testing.T) {
	t.Parallel()
	wantReason := map[string]string{"runaway-loop": "max_total_turns"}
	files, err := filepath.Glob("../../examples/*/ensemble.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			responses := filepath.Join(dir, "responses.yaml")
			if _, err := os.Stat(responses); err != nil {
				t.Fatalf("every example needs a responses.yaml to run without a model: %v", err)
			}
			if o := ensembleCmd(t, "", "validate", file); o.code != 0 {
				t.Fatalf("validate: exit %d: %s", o.code, o.stderr)
			}
			o := ensembleCmd(t, "", "run", file, "--responses", responses, "--output", "json")
			var res struct {
				CompletionReason string `json:"completion_reason"`
				Errors           []any  `json:"errors"`
			}
			if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
				t.Fatalf("exit %d, stdout not JSON: %v\n%s", o.code, err, o.stderr)
			}
			want := wantReason[name]
			if want == "" {
				want = "completed"
			}
			if res.CompletionReason != want || len(res.Errors) != 0 {
				t.Fatalf("completion %q (want %q), errors %v", res.CompletionReason, want, res.Errors)
			}
		})
	}
}
