package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state file edited by hand into one no run could have saved is refused
// (exit 2) before anything runs, naming the file and the field.
func TestResumeRejectsInconsistentStates(t *testing.T) {
	t.Parallel()
	dir, _, sp := resumable(t)
	good := exportState(t, sp, "") // resumed as a JSON state file
	edit := func(f func(file, st map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m, m["state"].(map[string]any))
		b, _ := json.MarshalIndent(m, "", "  ")
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"history emptied", edit(func(_, st map[string]any) { st["conversation_history"] = []any{} }),
			"state.turn_count is 3 but state.conversation_history is empty"},
		{"unknown completion reason", edit(func(f, _ map[string]any) { f["completion_reason"] = "finished" }),
			`completion_reason "finished" is not one of`},
		{"request for an unknown agent", edit(func(_, st map[string]any) {
			st["pending_requests"] = []any{map[string]any{"from": "seed", "target_agent_name": "ghost"}}
		}), `state.pending_requests[0].target_agent_name names agent "ghost", which the ensemble ` + filepath.Join(dir, "ensemble.yaml") + " does not have"},
		{"memory not a conversation", edit(func(_, st map[string]any) { st["memory"] = map[string]any{"judge": "x"} }),
			"state.memory.judge is not a stored conversation"},
		{"memory of a script agent", edit(func(_, st map[string]any) {
			st["memory"] = map[string]any{"ping": map[string]any{"version": 1, "messages": []any{}}}
		}), `state.memory.ping is set, but "ping" is a script agent, which keeps no memory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".state")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			o := ensembleCmd(t, "", "resume", path, "--output", "json")
			if o.code != 2 || o.stdout != "" || !strings.Contains(o.stderr, "state file "+path+": "+tc.msg) {
				t.Fatalf("exit %d, stdout %q, stderr %q, want exit 2 and %q", o.code, o.stdout, o.stderr, "state file "+path+": "+tc.msg)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, tc.data) {
				t.Fatal("a refused resume touched the state file")
			}
		})
	}
}
