package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
)

// onFailure builds agent name depending on dep through a failure edge.
func onFailure(name, dep string, maxTurns int) *ensemble.Agent {
	a := agent(name, maxTurns, dep)
	a.Dependencies[0].OnFailure = true
	return a
}

// A failure edge runs its agent on the dependency's failures, with the
// failure as its input; a failure handled that way does not fail the run.
func TestFailureEdges(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		fetchFails, fallbackFails bool
		order                     string
		exit                      int
		handled                   bool
	}{
		"fetch succeeds: no fallback":     {false, false, "1:fetch 2:use", 0, false},
		"fetch fails, fallback handles":   {true, false, "1:fetch 2:fallback", 0, true},
		"fetch fails, fallback fails too": {true, true, "1:fetch 2:fallback", 1, false},
	} {
		e := build(agent("fetch", 1), agent("use", 1, "fetch"), onFailure("fallback", "fetch", 1))
		var given any
		run := scripted{
			"fetch": func(*agentpkg.Request) (any, error) {
				if c.fetchFails {
					return nil, errors.New("503 from upstream")
				}
				return "data", nil
			},
			"fallback": func(req *agentpkg.Request) (any, error) {
				given = req.Dependencies["fetch"]
				if c.fallbackFails {
					return nil, errors.New("no cache either")
				}
				return "cached data", nil
			},
		}
		res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
		if got := strings.Join(order(res), " "); got != c.order {
			t.Errorf("%s: order %s, want %s", name, got, c.order)
		}
		if res.ExitCode() != c.exit {
			t.Errorf("%s: exit %d, want %d (errors %+v)", name, res.ExitCode(), c.exit, res.Errors)
		}
		if c.fetchFails {
			if s := mustJSON(t, given); s != `{"agent":"fetch","error":"503 from upstream","execution":1}` {
				t.Errorf("%s: fallback was given %s", name, s)
			}
			if len(res.Errors) == 0 || res.Errors[0].AgentName != "fetch" || res.Errors[0].Handled != c.handled {
				t.Errorf("%s: errors %+v, want fetch's with handled %v", name, res.Errors, c.handled)
			}
			if c.handled && !strings.Contains(mustJSON(t, res.Errors[0]), `"handled":true`) {
				t.Errorf("%s: JSON %s", name, mustJSON(t, res.Errors[0]))
			}
		}
	}
}

// Failures are fresh like outputs: a failure edge fires once per failure.
func TestFailureEdgeFiresPerFailure(t *testing.T) {
	t.Parallel()
	e := build(agent("start", 1), agent("try", 3, "start", "?retry"), onFailure("retry", "try", 5))
	n := 0
	run := scripted{
		"try": func(*agentpkg.Request) (any, error) {
			if n++; n < 3 {
				return nil, errors.New("flaky")
			}
			return "ok", nil
		},
	}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if got := strings.Join(order(res), " "); got != "1:start 2:try 3:retry 4:try 5:retry 6:try" {
		t.Fatalf("order %s", got)
	}
	if res.ExitCode() != 0 || len(res.Errors) != 2 || !res.Errors[0].Handled || !res.Errors[1].Handled {
		t.Fatalf("exit %d, errors %+v", res.ExitCode(), res.Errors)
	}
}
