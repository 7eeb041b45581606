package bdd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// Ctrl-C during a test run with repeats exits 130, as a cancelled run
// does, and leaves the baseline it was to save as it was: a baseline of
// the few runs that ended would be read later as a full one.
func TestRepeatInterruptedExits130AndSavesNoBaseline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var requests atomic.Int64
	srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		if requests.Add(1) == 5 { // the third run's draft: Ctrl-C
			cancel()
		}
		if strings.HasPrefix(r.System, "COIN") {
			return fakemodel.Reply{Text: "yes"}
		}
		return fakemodel.Reply{Text: "draft"}
	})
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": coinFeature("")})
	base := filepath.Join(t.TempDir(), "baseline.json")
	const before = `{"kept": "the baseline of an earlier test run"}`
	if err := os.WriteFile(base, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TEST_LLM_URL": srv.URL()}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	o := runRepeats(t, RunOptions{Options: Options{LookupEnv: lookup, Models: true, GuardModels: true, LiveAll: true},
		Paths: []string{dir}, Context: ctx,
		Repeats: Repeats{Repeat: 20, Concurrency: 1, PassRate: rate(0.5), SaveBaseline: base}})
	if o.code != ExitCancelled || o.err != nil {
		t.Fatalf("exit %d, %v, want %d:\n%s\n%s", o.code, o.err, ExitCancelled, o.out, o.stderr)
	}
	if !strings.Contains(o.stderr, "baseline "+base+" was not saved") {
		t.Fatalf("no word of the baseline not saved:\n%s", o.stderr)
	}
	if b, err := os.ReadFile(base); err != nil || string(b) != before {
		t.Fatalf("the baseline changed: %v %s", err, b)
	}
	if n := requests.Load(); n >= 40 {
		t.Fatalf("%d model requests: the runs went on after Ctrl-C", n)
	}
}
