package engine_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// withTemplate gives a a template of field (input, prompt).
func withTemplate(a *ensemble.Agent, field, src string) *ensemble.Agent {
	p, err := conditions.CompileTemplate(src, a.FanOut != nil)
	if err != nil {
		panic(err)
	}
	t := &ensemble.Template{Field: field, Source: src, Program: opaque.Make[ensemble.CompiledTemplate](p)}
	if field == "input" {
		a.Input = t
	}
	a.Templates = append(a.Templates, t)
	return a
}

// An agent's templates are evaluated as its execution is planned, over
// the state as the turn starts: one placeholder gives its value (a map
// stays a map), other templates give text.
func TestTemplatesAreEvaluatedForEachExecution(t *testing.T) {
	t.Parallel()
	facts := agent("facts", 1)
	whole := withTemplate(agent("whole", 1, "facts"), "input", "{{ context.facts }}")
	text := withTemplate(agent("text", 1, "facts"), "input", "Write the {{ input }} for {{ context.facts.region }} ({{ executions.facts }}).")
	withTemplate(text, "prompt", "You write for {{ context.facts.region }}.")
	plain := agent("plain", 1, "facts")
	var mu sync.Mutex
	got := map[string]map[string]any{}
	run := scripted{
		"facts": func(*agentpkg.Request) (any, error) {
			return map[string]any{"region": "EMEA", "n": 3.0}, nil
		},
	}
	for _, name := range []string{"whole", "text", "plain"} {
		run[name] = func(req *agentpkg.Request) (any, error) {
			mu.Lock()
			got[req.Agent.Name] = req.Templates
			mu.Unlock()
			return "ok", nil
		}
	}
	res := engine.New(build(facts, whole, text, plain), "report", engine.Options{Runner: run}).Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("%s %+v", res.CompletionReason, res.Errors)
	}
	want := map[string]map[string]any{
		"whole": {"input": map[string]any{"region": "EMEA", "n": 3.0}},
		"text":  {"input": "Write the report for EMEA (1).", "prompt": "You write for EMEA."},
		"plain": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("templates %#v, want %#v", got, want)
	}
}

// A fan-out instance's input is evaluated over its item: `{{ item }}`
// gives the item alone, not the whole list or document.
func TestFanOutInstanceInputIsItsItem(t *testing.T) {
	t.Parallel()
	e := splitEnsemble()
	withTemplate(e.Agent("summarize"), "input", "{{ item }}")
	sum := e.Agent("summarize")
	numbered := withTemplate(fan(agent("numbered", 1, "split"), "context.split.chunks"), "input", "Part {{ index + 1 }} of {{ count }}: {{ item }}")
	e = build(e.Agents[0], sum, e.Agents[2], numbered)
	var mu sync.Mutex
	inputs := map[string]any{}
	record := func(req *agentpkg.Request) (any, error) {
		mu.Lock()
		inputs[req.Instance.Name] = req.Templates["input"]
		mu.Unlock()
		return summary(req)
	}
	run := chunks(2, record)
	run["numbered"] = record
	res := engine.New(e, "the whole document", engine.Options{Runner: run}).Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("%s %+v", res.CompletionReason, res.Errors)
	}
	want := map[string]any{
		"summarize[0]": "c0", "summarize[1]": "c1",
		"numbered[0]": "Part 1 of 2: c0", "numbered[1]": "Part 2 of 2: c1",
	}
	if !reflect.DeepEqual(inputs, want) {
		t.Errorf("inputs %v, want %v", inputs, want)
	}
}

// A template that fails at run time fails the execution without running
// it, with a message naming the agent and the placeholder; in a fan-out,
// the instance whose item it failed on.
func TestTemplateFailureFailsTheExecution(t *testing.T) {
	t.Parallel()
	e := splitEnsemble()
	withTemplate(e.Agent("summarize"), "input", "{{ item.text }}")
	e.Agent("summarize").FanOut.FailOnError = false
	var ran atomic.Int32
	run := chunks(2, func(req *agentpkg.Request) (any, error) { ran.Add(1); return "x", nil })
	run["split"] = func(*agentpkg.Request) (any, error) {
		return map[string]any{"chunks": []any{map[string]any{"text": "a"}, "b"}}, nil
	}
	res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
	if n := ran.Load(); n != 1 {
		t.Errorf("%d instances ran, want 1", n)
	}
	var msgs []string
	for _, rec := range res.ConversationHistory {
		if rec.Error != nil {
			msgs = append(msgs, rec.AgentName+": "+*rec.Error)
		}
	}
	if len(msgs) != 1 || msgs[0] != `summarize[1]: input of agent "summarize" (a template) failed: {{ item.text }}: cannot fetch text from a string or a list` {
		t.Errorf("errors %q", msgs)
	}

	lone := withTemplate(agent("lone", 1), "input", "{{ context.nothing.here }}")
	res = engine.New(build(lone), "", engine.Options{Runner: scripted{}}).Run(context.Background())
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, `input of agent "lone" (a template) failed: {{ context.nothing.here }}: cannot fetch here from nil`) {
		t.Errorf("errors %+v", res.Errors)
	}
}
