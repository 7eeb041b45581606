package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestResultHasTheEnsemblesOutput: a file that names its output agent
// gives its result an output, that agent's output, right after
// final_state: in run --output json, in the JSON lines' run_completed, in
// state show (JSON and text) and in the text summary; a parent's ensemble
// agent without an output of its own gets what its child returns.
func TestResultHasTheEnsemblesOutput(t *testing.T) {
	t.Parallel()
	verdict := map[string]any{"verdict": "yes"}
	result := func(stdout string) map[string]any {
		t.Helper()
		var res map[string]any
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("not a result: %v\n%s", err, stdout)
		}
		return res
	}
	for _, file := range []string{"review.yaml", "parent.yaml"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "output", file)
			o := ensembleCmd(t, "", "run", path, "--output", "json")
			if o.code != 0 {
				t.Fatalf("exit %d: %s", o.code, o.stderr)
			}
			res := result(o.stdout)
			if !reflect.DeepEqual(res["output"], verdict) {
				t.Errorf("output %#v, want %#v", res["output"], verdict)
			}
			if i, j := strings.Index(o.stdout, "\n  \"final_state\""), strings.Index(o.stdout, "\n  \"output\""); i < 0 || j < i ||
				j > strings.Index(o.stdout, "\n  \"conversation_history\"") {
				t.Errorf("output is not between final_state and conversation_history:\n%s", o.stdout)
			}
			if file == "parent.yaml" {
				// The round's output is the child's judge's, not the
				// child's whole final state.
				if got := res["final_state"].(map[string]any)["round"]; !reflect.DeepEqual(got, verdict) {
					t.Errorf("the round's output %#v, want the child's judge's %#v", got, verdict)
				}
			}

			text := ensembleCmd(t, "", "run", path, "--output", "text")
			if text.code != 0 || !strings.Contains(text.stdout, "\noutput: {\"verdict\":\"yes\"}\nfinal state:") {
				t.Errorf("the text summary: exit %d\n%s%s", text.code, text.stdout, text.stderr)
			}

			lines := ensembleCmd(t, "", "run", path, "--output", "jsonl")
			var last map[string]any
			sc := bufio.NewScanner(strings.NewReader(lines.stdout))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				last = result(sc.Text())
			}
			if last["type"] != "run_completed" || !reflect.DeepEqual(last["result"].(map[string]any)["output"], verdict) {
				t.Errorf("run_completed: %v", last)
			}

			db := filepath.Join(t.TempDir(), "runs.db")
			if o := ensembleCmd(t, "", "run", path, "--state", db, "--output", "json"); o.code != 0 {
				t.Fatalf("run --state: exit %d: %s", o.code, o.stderr)
			}
			show := ensembleCmd(t, "", "state", "show", db, "--output", "json")
			if show.code != 0 || !reflect.DeepEqual(result(show.stdout)["output"], verdict) {
				t.Errorf("state show: exit %d %s\n%s", show.code, show.stderr, show.stdout)
			}
			show = ensembleCmd(t, "", "state", "show", db, "--output", "text")
			if show.code != 0 || !strings.Contains(show.stdout, "\noutput: {\"verdict\":\"yes\"}\n") {
				t.Errorf("state show --output text: exit %d %s\n%s", show.code, show.stderr, show.stdout)
			}
		})
	}
}
