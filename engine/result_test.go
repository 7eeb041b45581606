package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
)

// WriteJSON streams the result record by record; its bytes must be exactly
// what encoding/json writes for the whole result at once, indented, and
// WriteCompactJSON's what json.Marshal writes.
func TestWriteJSONMatchesEncoder(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 2, "a", "?c"), agent("c", 1, "b"))
	run := scripted{
		"a": func(*agentpkg.Request) (any, error) { return map[string]any{"html": "<b>&</b>", "n": 1.5}, nil },
		"c": func(*agentpkg.Request) (any, error) { return nil, errors.New("c failed") },
	}
	full := engine.New(e, "in\"put", engine.Options{Runner: run}).Run(context.Background())
	empty := engine.New(build(agent("x", 1, "y"), agent("y", 1, "x")), "", engine.Options{Runner: run}).Run(context.Background())
	if len(full.ConversationHistory) < 3 || len(full.Errors) == 0 || len(empty.ConversationHistory) != 0 {
		t.Fatalf("fixtures: %d records, %d errors; %d records", len(full.ConversationHistory), len(full.Errors), len(empty.ConversationHistory))
	}
	nilLists := &engine.Result{Ensemble: "x"}
	for name, res := range map[string]*engine.Result{"full": full, "empty": empty, "nil lists": nilLists} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		encoded := *res
		if res == nilLists { // WriteJSON writes nil lists as []
			encoded.ConversationHistory, encoded.Errors, encoded.Warnings = []*state.Record{}, []engine.RunError{}, []state.Warning{}
		}
		if err := enc.Encode(&encoded); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := res.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: WriteJSON differs from the encoder:\n%s\nwant:\n%s", name, got.String(), want.String())
		}
		wantCompact, err := json.Marshal(&encoded)
		if err != nil {
			t.Fatal(err)
		}
		got.Reset()
		if err := res.WriteCompactJSON(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(wantCompact) {
			t.Errorf("%s: WriteCompactJSON differs from json.Marshal:\n%s\nwant:\n%s", name, got.String(), wantCompact)
		}
	}
}
