package ask

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// TestAnswersAreRecordedAndReplayed: answers typed while recording are
// served on replay, with no terminal; a changed
// question is a miss that shows the change.
func TestAnswersAreRecordedAndReplayed(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, &ensemble.Agent{Name: "analyzer"}, askAgent("clarify", "Which quarter?", "analyzer"))
	dir := t.TempDir()
	open := func(mode cassette.Mode) *cassette.Cassette {
		c, err := cassette.Open(cassette.Options{Dir: dir, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var cas *cassette.Cassette
	req := func(dep string, exec int) *agent.Request {
		return &agent.Request{Ensemble: e, Agent: e.Agent("clarify"), Turn: exec + 1, Execution: exec,
			Dependencies: map[string]any{"analyzer": dep}, Services: agent.Services{Recording: opaque.Make[agent.Recording](cas)}}
	}
	ctx := context.Background()
	cas = open(cassette.Record)
	live := &Runner{In: strings.NewReader("Q3\n{\"region\": \"EMEA\"}\n"), Interactive: true}
	for i, dep := range []string{"first draft", "second draft"} {
		r := req(dep, i+1)
		if res := live.Run(ctx, r); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "clarify.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "answer: Q3") || !strings.Contains(string(b), "Which quarter?") {
		t.Fatalf("file:\n%s", b)
	}
	// Replayed with no terminal.
	replay := &Runner{}
	cas = open(cassette.Replay)
	for i, want := range []any{"Q3", map[string]any{"region": "EMEA"}} {
		r := req([]string{"first draft", "second draft"}[i], i+1)
		res := replay.Run(ctx, r)
		if res.Err != nil || !reflect.DeepEqual(res.Output, want) {
			t.Fatalf("answer %d: %#v, %v", i+1, res.Output, res.Err)
		}
	}
	cas = open(cassette.Replay)
	res := replay.Run(ctx, req("third draft", 3))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "  analyzer:\n-   first draft\n+   third draft\n") {
		t.Fatalf("miss: %v", res.Err)
	}
}
