package engine_test

import (
	"context"
	"io"
	"strings"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// A select delivers part of a dependency's output; one that fails at run
// time fails the execution, naming the expression, and the run goes on.
func TestSelectDelivers(t *testing.T) {
	t.Parallel()
	sel := func(src string) ensemble.CompiledSelect {
		s, err := conditions.CompileSelect(src)
		if err != nil {
			t.Fatal(err)
		}
		return opaque.Make[ensemble.CompiledSelect](s)
	}
	e := build(agent("classifier", 1), agent("writer", 1, "classifier"), agent("broken", 1, "classifier"), agent("after", 1, "?broken", "writer"))
	e.Agents[1].Dependencies[0].Select, e.Agents[1].Dependencies[0].SelectProgram = "output.topics", sel("output.topics")
	e.Agents[2].Dependencies[0].Select, e.Agents[2].Dependencies[0].SelectProgram = "output.nope.x", sel("output.nope.x")
	var got any
	run := scripted{
		"classifier": func(*agentpkg.Request) (any, error) {
			return map[string]any{"topics": []any{"go", "yaml"}, "confidence": 0.9}, nil
		},
		"writer": func(req *agentpkg.Request) (any, error) { got = req.Dependencies["classifier"]; return "ok", nil },
		"broken": func(*agentpkg.Request) (any, error) { t.Error("broken ran despite its failed select"); return nil, nil },
	}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if s := mustJSON(t, got); s != `["go","yaml"]` {
		t.Errorf("writer was given %s, want the topics", s)
	}
	if len(res.Errors) != 1 || res.Errors[0].AgentName != "broken" || !strings.Contains(res.Errors[0].Message, `select of dependency "classifier" (output.nope.x) failed`) {
		t.Fatalf("errors %+v", res.Errors)
	}
	if got := strings.Join(order(res), " "); got != "1:classifier 2:writer 2:broken 3:after" {
		t.Errorf("order %s", got)
	}
}

// A select whose value JSON cannot hold (a division by zero) fails the
// execution, naming the select; the result stays printable.
func TestSelectNotJSON(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1, "a"), agent("c", 1, "?b", "a"))
	for _, src := range []string{"output.n / 0", "[1, (output.n - 1) / 0]"} {
		s, err := conditions.CompileSelect(src)
		if err != nil {
			t.Fatal(err)
		}
		e.Agents[1].Dependencies[0].Select, e.Agents[1].Dependencies[0].SelectProgram = src, opaque.Make[ensemble.CompiledSelect](s)
		run := scripted{
			"a": func(*agentpkg.Request) (any, error) { return map[string]any{"n": 1.0}, nil },
			"b": func(*agentpkg.Request) (any, error) { t.Error("b ran"); return nil, nil },
		}
		res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
		if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "select of dependency \"a\" ("+src+") failed: its value holds") {
			t.Fatalf("%s: errors %+v", src, res.Errors)
		}
		if err := res.WriteJSON(io.Discard); err != nil {
			t.Fatalf("%s: the result cannot be written: %v", src, err)
		}
	}
}
