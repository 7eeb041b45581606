package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
)

// run and batch refuse, with exit 2 and before anything is written, a
// run on Temporal that the cluster would not play as asked, each naming
// its flags; a build without the engine says so first, whatever else is
// asked.
func TestTemporalRefusals(t *testing.T) {
	t.Parallel()
	ens := example + "ensemble.yaml"
	inputs := filepath.Join(t.TempDir(), "inputs.jsonl")
	if err := os.WriteFile(inputs, []byte("\"a\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const addr = "127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string // in the default build; a notemporal build says it has no engine
	}{
		{[]string{"run", ens, "--state", "STATE"}, "ensemble: --state and --temporal: a run on Temporal is durable already\n"},
		{[]string{"run", ens, "--record", "REC"}, "ensemble: --record and --replay: a run on Temporal is neither recorded nor replayed; run it without --temporal\n"},
		{[]string{"run", ens, "--strict"}, "ensemble: --strict: a run on Temporal does not end on warnings; run it without --temporal, or read its warnings in the result\n"},
		{[]string{"run", ens, "--max-tokens", "10"}, "ensemble: --max-tokens, --max-requests and --max-cost: a run on Temporal has no budget (each execution is an activity, not capped mid-turn); run it without --temporal to cap it\n"},
		{[]string{"batch", ens, "--inputs", inputs, "--state", "STATE"}, "ensemble: --state and --temporal: runs on Temporal are durable already\n"},
		{[]string{"batch", ens, "--inputs", inputs, "--max-cost", "1"}, "ensemble: --max-tokens, --max-requests and --max-cost: a run on Temporal has no budget (each execution is an activity, not capped mid-turn); run it without --temporal to cap it\n"},
	} {
		dir := t.TempDir()
		state := filepath.Join(dir, "s.db")
		args := append([]string{}, tc.args...)
		for i, a := range args {
			args[i] = strings.NewReplacer("STATE", state, "REC", filepath.Join(dir, "rec")).Replace(a)
		}
		args = append(args, "--temporal", addr)
		want := tc.want
		if !durable.HasTemporal() {
			want = "ensemble: " + durable.ErrNoTemporal.Error() + "\n"
		}
		o := ensembleEnv(t, map[string]string{"PATH": os.Getenv("PATH")}, args...)
		if o.code != 2 || o.stderr != want {
			t.Errorf("%s: exit %d %q, want 2 and %q", strings.Join(args, " "), o.code, o.stderr, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s: wrote %v", strings.Join(args, " "), entries)
		}
	}
}
