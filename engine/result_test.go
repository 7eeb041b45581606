package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
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
	withOutput := build(agent("a", 1), agent("b", 2, "a", "?c"), agent("c", 1, "b"))
	withOutput.Output = "a"
	output := engine.New(withOutput, "in", engine.Options{Runner: run}).Run(context.Background())
	if output.Output == nil {
		t.Fatal("fixtures: the result of a file with output: has no output")
	}
	nilLists := &engine.Result{Ensemble: "x"}
	for name, res := range map[string]*engine.Result{"full": full, "empty": empty, "output": output, "nil lists": nilLists} {
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

// The result's output is the output of the agent the file's output: names,
// the value under its state key; absent without output:, and when that
// agent has no output.
func TestResultOutput(t *testing.T) {
	t.Parallel()
	run := scripted{
		"a": func(*agentpkg.Request) (any, error) { return map[string]any{"n": 1.0}, nil },
		"b": func(*agentpkg.Request) (any, error) { return "from b", nil },
		"c": func(*agentpkg.Request) (any, error) { return nil, errors.New("c failed") },
	}
	tests := []struct {
		output string
		want   any
	}{
		{"", nil},
		{"a", map[string]any{"n": 1.0}},
		{"b", "from b"}, // under its state key, "bee"
		{"c", nil},      // failed: no output
		{"d", nil},      // never ran (its dependency failed)
	}
	for _, tt := range tests {
		t.Run(tt.output, func(t *testing.T) {
			t.Parallel()
			b := agent("b", 1, "a")
			b.Conversation.StateKey = "bee"
			e := build(agent("a", 1), b, agent("c", 1, "a"), agent("d", 1, "c"))
			e.Output = tt.output
			res := engine.New(e, "in", engine.Options{Runner: run}).Run(context.Background())
			if !reflect.DeepEqual(res.Output, tt.want) {
				t.Errorf("Output = %#v, want %#v", res.Output, tt.want)
			}
			var buf bytes.Buffer
			if err := res.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			var back map[string]any
			if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if got, ok := back["output"]; ok != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("the JSON's output = %#v (present %v), want %#v", got, ok, tt.want)
			}
		})
	}
}
