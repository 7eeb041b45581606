package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/state"
)

// The engine redacts the keys from what executions return before it
// records anything: the result, the state and the events never hold one.
func TestSecretsAreRedactedBeforeTheyAreRecorded(t *testing.T) {
	t.Parallel()
	const key = "sk-engine-secret-42"
	e := build(agent("a", 1), agent("b", 1, "a"))
	run := scripted{
		"a": func(*agentpkg.Request) (any, error) { return map[string]any{key: []any{"x " + key}}, nil },
		"b": func(*agentpkg.Request) (any, error) { return nil, errors.New("refused " + key) },
	}
	var mu sync.Mutex
	var evs []events.Event
	sink := func(ev events.Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() }
	r := engine.New(e, "input "+key, engine.Options{Runner: run, Events: sink, Secrets: secrets.New(key)})
	res := r.Run(context.Background())
	for name, v := range map[string]any{"result": res, "events": evs, "state": r.File("")} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); strings.Contains(s, key) || !strings.Contains(s, secrets.Redacted) {
			t.Errorf("%s: %s", name, s)
		}
	}
	if res.Errors[0].Message != "refused "+secrets.Redacted || res.Input != "input "+secrets.Redacted {
		t.Errorf("result %+v", res)
	}
}

// A redacted output behaves in conditions as it did before: its numbers
// stay numbers (they once became json.Number, and `score > 3` failed).
func TestRedactedOutputsKeepTheirTypes(t *testing.T) {
	t.Parallel()
	const key = "sk-engine-secret-42"
	e := build(agent("a", 1), agent("b", 1, "a|context.a.score > 3"))
	run := scripted{"a": func(*agentpkg.Request) (any, error) {
		return map[string]any{"score": 5.0, "note": "saw " + key}, nil
	}}
	res := engine.New(e, "", engine.Options{Runner: run, Secrets: secrets.New(key)}).Run(context.Background())
	if got := order(res); !slices.Equal(got, []string{"1:a", "2:b"}) || len(res.Warnings) != 0 {
		t.Errorf("ran %v, warnings %+v", got, res.Warnings)
	}
}

// What a kind records of an execution (its details: a child ensemble's
// records among them) is redacted too, member order kept.
func TestSecretsAreRedactedFromDetails(t *testing.T) {
	t.Parallel()
	const key = "sk-engine-secret-42"
	e := build(agent("a", 1))
	run := agentpkg.RunnerFunc(func(_ context.Context, req *agentpkg.Request) *agentpkg.Result {
		res := &agentpkg.Result{Output: "done"}
		child := &state.Child{Ensemble: "inner", ConversationHistory: []*state.Record{{AgentName: "deep", OutputData: "found " + key}}}
		if err := res.Details.Put(state.ChildDetail, child); err != nil {
			t.Error(err)
		}
		if err := res.Details.Put("note", map[string]any{"z": "last", "a": "said \"" + key + "\""}); err != nil {
			t.Error(err)
		}
		return res
	})
	res := engine.New(e, "", engine.Options{Runner: run, Secrets: secrets.New(key)}).Run(context.Background())
	rec := res.ConversationHistory[0]
	for _, d := range rec.Details {
		if strings.Contains(string(d.Value), key) || !strings.Contains(string(d.Value), secrets.Redacted) {
			t.Errorf("detail %s: %s", d.Key, d.Value)
		}
	}
	if c := rec.Child(); c == nil || c.ConversationHistory[0].OutputData != "found "+secrets.Redacted {
		t.Errorf("child %+v", c)
	}
}
