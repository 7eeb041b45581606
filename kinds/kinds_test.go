package kinds

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	askkind "github.com/ensemble-run/ensemble/kinds/ask"
	llmkind "github.com/ensemble-run/ensemble/kinds/llm"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
)

func ran(_ context.Context, req *agent.Request) *agent.Result {
	return &agent.Result{Output: "ran " + req.Agent.Name}
}

// TestDispatch: each agent goes to the runner of its kind; replaced runners
// win over the kind's own.
func TestDispatch(t *testing.T) {
	t.Parallel()
	agents := []*ensemble.Agent{
		{Name: "s", Kind: scriptkind.Kind{}},
		{Name: "l", Kind: llmkind.Kind{}},
		{Name: "a", Kind: askkind.Kind{}},
	}
	d := Builtin().Runner(&agent.Host{}, map[string]agent.Runner{
		"script": agent.RunnerFunc(ran), "llm": agent.RunnerFunc(ran), "ask": agent.RunnerFunc(ran),
	})
	for _, a := range agents {
		if res := d.Run(context.Background(), &agent.Request{Agent: a}); res.Output != "ran "+a.Name {
			t.Errorf("%s: %#v", a.Name, res)
		}
	}
	if d.Simulator() != nil {
		t.Error("replaced LLM runner: a simulator anyway")
	}
	res := d.Run(context.Background(), &agent.Request{Agent: &ensemble.Agent{Name: "x"}})
	if res.Err == nil || res.Err.Error() != `agent "x" has no kind` {
		t.Errorf("no kind: %v", res.Err)
	}
	res = d.Run(context.Background(), &agent.Request{Agent: &ensemble.Agent{Name: "y", Kind: otherKind{}}})
	if res.Err == nil || res.Err.Error() != `agent "y": unknown agent kind other` {
		t.Errorf("unknown kind: %v", res.Err)
	}
	d = Builtin().Runner(&agent.Host{}, map[string]agent.Runner{"script": nil})
	res = d.Run(context.Background(), &agent.Request{Agent: agents[0]})
	if res.Err == nil || res.Err.Error() != `agent "s": no runner is configured for script agents` {
		t.Errorf("no runner: %v", res.Err)
	}
	if d.Simulator() == nil {
		t.Error("the LLM kind's runner plays no simulated users")
	}
}

// TestRegisterTwice: two kinds with one name are a programming error.
func TestRegisterTwice(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"script" registered twice`) {
			t.Errorf("recovered %v", r)
		}
	}()
	r := Builtin()
	r.Register(r.Kinds()[0])
}

// otherKind is a kind the registry does not know.
type otherKind struct{ scriptkind.Kind }

func (otherKind) String() string { return "other" }

// TestBuiltinKindsAnswer: the questions the rest of the program asks of a
// kind, declared once in package agent: which of them each built-in kind
// answers (a kind that lost a method would silently stop answering, and
// get the default).
func TestBuiltinKindsAnswer(t *testing.T) {
	t.Parallel()
	answers := func(k agent.Kind) map[string]bool {
		_, guarded := k.(agent.Guarded)
		_, json := k.(agent.JSONReplier)
		_, repairs := k.(agent.OutputRepairer)
		_, input := k.(agent.InputDescriber)
		_, memory := k.(agent.MemoryKeeper)
		_, human := k.(agent.HumanAsker)
		_, question := k.(agent.Questioner)
		_, timer := k.(agent.AnswerTimer)
		_, tools := k.(agent.ToolUser)
		_, parent := k.(agent.Parent)
		_, shape := k.(agent.Shaper)
		_, describe := k.(agent.Describer)
		_, model := k.(agent.ModelUser)
		return map[string]bool{"ModelUser": model, "Guarded": guarded, "JSONReplier": json, "OutputRepairer": repairs, "InputDescriber": input,
			"MemoryKeeper": memory, "HumanAsker": human, "Questioner": question, "AnswerTimer": timer, "ToolUser": tools, "Parent": parent,
			"Shaper": shape, "Describer": describe}
	}
	every := []string{"Shaper", "Describer"}
	want := map[string][]string{
		"script":   {"InputDescriber"},
		"llm":      {"Guarded", "JSONReplier", "OutputRepairer", "MemoryKeeper", "ToolUser", "ModelUser"},
		"ask":      {"MemoryKeeper", "HumanAsker", "Questioner", "AnswerTimer"},
		"ensemble": {"Parent"},
		"dispatch": {"Parent"},
	}
	// Every question agent declares is asked here.
	declared := capabilities(t)
	for _, k := range Builtin().Kinds() {
		got := answers(k)
		if asked := slices.Sorted(maps.Keys(got)); !slices.Equal(asked, declared) {
			t.Fatalf("the test asks %v; agent declares %v", asked, declared)
		}
		for q, ok := range got {
			if w := slices.Contains(want[k.String()], q) || slices.Contains(every, q); ok != w {
				t.Errorf("%s answers %s: %t, want %t", k, q, ok, w)
			}
		}
	}
}

// hostKind records the host its runner is built from.
type hostKind struct {
	scriptkind.Kind
	got **agent.Host
}

func (hostKind) String() string { return "host" }
func (k hostKind) Runner(h *agent.Host) agent.Runner {
	*k.got = h
	return agent.RunnerFunc(ran)
}

// TestHostForNestedRuns: a kind's runner may run agents of any kind (a
// nested ensemble): its host has the registry's kinds and dispatch.
func TestHostForNestedRuns(t *testing.T) {
	t.Parallel()
	var got *agent.Host
	r := Builtin()
	r.Register(hostKind{got: &got})
	d := r.Runner(&agent.Host{LookupEnv: func(string) (string, bool) { return "", false }}, nil)
	if got == nil || got.LookupEnv == nil || got.Dispatch != agent.Runner(d) || len(got.Kinds) != 6 || got.Kinds[5].String() != "host" {
		t.Fatalf("host %+v", got)
	}
	res := got.Dispatch.Run(context.Background(), &agent.Request{Agent: &ensemble.Agent{Name: "n", Kind: hostKind{}}})
	if res.Output != "ran n" {
		t.Errorf("dispatched: %#v", res)
	}
}

// capabilities are the interfaces of agent/capabilities.go, sorted.
func capabilities(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../agent/capabilities.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, sp := range g.Specs {
			if ts := sp.(*ast.TypeSpec); ts.Name.IsExported() {
				if _, ok := ts.Type.(*ast.InterfaceType); ok {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}
