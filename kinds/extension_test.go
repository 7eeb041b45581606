package kinds_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/graph"
	"github.com/ensemble-run/ensemble/kinds"
)

// echoKind is a kind defined outside the project's packages, as a new kind
// would be: `echo: TEXT` with an optional `times: N`.
type echoKind struct{}

type echoSpec struct {
	Text  string
	Times int
}

func (echoKind) String() string   { return "echo" }
func (echoKind) Key() string      { return "echo" }
func (echoKind) Fields() []string { return []string{"times"} }
func (echoKind) Decode(f *ensemble.Fields, a *ensemble.Agent) {
	s := &echoSpec{Text: f.String("echo"), Times: f.Positive("times")}
	if f.Has("echo") {
		f.Require("echo", s.Text == "")
	}
	a.Spec = s
}
func (echoKind) Runner(*agent.Host) agent.Runner {
	return agent.RunnerFunc(func(_ context.Context, req *agent.Request) *agent.Result {
		s := req.Agent.Spec.(*echoSpec)
		return &agent.Result{Output: strings.Repeat(s.Text, max(s.Times, 1))}
	})
}
func (echoKind) Describe(_ *ensemble.Ensemble, a *ensemble.Agent) []string {
	return []string{"echo: " + a.Spec.(*echoSpec).Text}
}

// TestANewKind: a kind is one package plus one Register: the loader
// decodes and checks its fields with positions, the run dispatches to its
// runner, and the drawing asks it what to show.
func TestANewKind(t *testing.T) {
	t.Parallel()
	reg := kinds.Builtin()
	reg.Register(echoKind{})
	dir := t.TempDir()
	path := filepath.Join(dir, "e.yaml")
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	bad := "name: e\nagents:\n  - {name: a, echo: ha, times: 0}\n  - {name: b, script: s.sh, times: 2}\n  - {name: c}\n"
	_, err := ensemble.LoadBytes(path, []byte(bad), reg.Load(ensemble.LoadOptions{}))
	var list *ensemble.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("err %v", err)
	}
	want := []string{
		path + `:3:32: agent "a": times must be at least 1, got 0`,
		path + `:4:29: agent "b": times is only for echo agents, not script agents`,
		path + `:5:5: agent "c": script, model_profile, ask, ensemble, dispatch and echo are mutually exclusive; exactly one is required, found none`,
	}
	if got := strings.Split(list.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	good := "name: e\nagents:\n  - {name: a, echo: ha, times: 2}\n  - {name: b, script: s.sh, dependencies: [a]}\n"
	e, err := ensemble.LoadBytes(path, []byte(good), reg.Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	res := engine.New(e, "", engine.Options{Runner: reg.Runner(&agent.Host{}, nil)}).Run(context.Background())
	if len(res.Errors) != 0 || res.FinalState["a"] != "haha" || res.FinalState["b"] != "hi" {
		t.Errorf("errors %v, final state %v", res.Errors, res.FinalState)
	}
	var b bytes.Buffer
	if err := graph.Mermaid(&b, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `a1["a<br/>echo: ha"]`) {
		t.Errorf("drawing:\n%s", b.String())
	}
}
