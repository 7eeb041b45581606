package responses

import (
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// TestResumeCountsPaths: a resumed run's responses by path go on after the
// executions of child agents its completed turns recorded, every loop
// iteration and every level counted, a fan-out agent's own record not.
func TestResumeCountsPaths(t *testing.T) {
	t.Parallel()
	r := NewResponses()
	for _, v := range []string{"1", "2", "3", "4"} {
		r.Add("loop/critic", v)
	}
	r.Add("loop/inner/deep", "d1")
	r.Add("loop/inner/deep", "d2")
	ir := Injected(r, nil)
	critic := func() *state.Record { return &state.Record{AgentName: "critic"} }
	earlier := &state.Child{ConversationHistory: []*state.Record{critic()}}
	last := &state.Child{Earlier: []*state.Child{earlier}, ConversationHistory: []*state.Record{
		critic(),
		withChild(&state.Record{AgentName: "inner"}, &state.Child{ConversationHistory: []*state.Record{{AgentName: "deep"}}}),
		{AgentName: "fan", InputData: map[string]any{"fan_out": map[string]any{"over": "x"}}},
	}}
	ir.Resume([]*state.Record{{AgentName: "other"}, withChild(&state.Record{AgentName: "loop"}, last)})
	if _, n, _ := ir.pathEntry(pathReq("loop/critic", 0)); n != 3 {
		t.Errorf("loop/critic takes response %d, want 3", n)
	}
	if _, n, _ := ir.pathEntry(pathReq("loop/inner/deep", 0)); n != 2 {
		t.Errorf("loop/inner/deep takes response %d, want 2", n)
	}
	if ir.taken["loop/fan"] != 0 || ir.taken["other"] != 0 {
		t.Errorf("taken %v", ir.taken)
	}
}

// TestUnknownPathSuggests: a mistyped path in responses gets a did-you-mean
// among the child agents' paths, as a mistyped top-level name does; a path
// that names a dispatch's case key as a level suggests the path without it.
func TestUnknownPathSuggests(t *testing.T) {
	t.Parallel()
	child := func(name string) *ensemble.Ensemble {
		c := &ensemble.Ensemble{Name: name, Agents: []*ensemble.Agent{{Name: "specialist"}, {Name: "answer"}}}
		c.Index()
		return c
	}
	e := &ensemble.Ensemble{Name: "routing", Agents: []*ensemble.Agent{
		{Name: "classifier"},
		{Name: "route", Kind: nestKind{children: []*ensemble.Ensemble{child("billing"), child("technical")}}},
	}}
	e.Index()
	for name, want := range map[string]string{
		"route/specialst":          `did you mean "route/specialist"?`,
		"rout/answer":              `did you mean "route/answer"?`,
		"route/billing/specialist": `did you mean "route/specialist"?`,
	} {
		r := NewResponses()
		r.Add(name, "x")
		if err := r.Validate(e); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %s", name, err, want)
		}
	}
}

// pathReq is a request of the agent at path in a child, below the
// instance numbered seq (0: none).
func pathReq(path string, seq int) *agent.Request {
	return &agent.Request{Agent: &ensemble.Agent{Name: path[strings.LastIndex(path, "/")+1:]}, Path: path, PathSeq: seq}
}

// nestKind stands in for a kind that runs child ensembles.
type nestKind struct {
	testKind
	children []*ensemble.Ensemble
}

func (k nestKind) Children(*ensemble.Agent) []*ensemble.Ensemble { return k.children }

// withChild is r with the run of a child ensemble c.
func withChild(r *state.Record, c *state.Child) *state.Record {
	if err := r.Details.Put(state.ChildDetail, c); err != nil {
		panic(err)
	}
	return r
}

// TestFanOutChildPaths: below a fan-out's instance, a child's agent is
// named with its instance (`analyst[1]/think`) or without it for every
// instance (`analyst/think`); both are valid in responses, and the shared
// entry answers each instance by its place in item order, once.
func TestFanOutChildPaths(t *testing.T) {
	t.Parallel()
	child := &ensemble.Ensemble{Name: "child", Agents: []*ensemble.Agent{{Name: "think"}}}
	child.Index()
	e := &ensemble.Ensemble{Name: "fan", Agents: []*ensemble.Agent{
		{Name: "analyst", FanOut: &ensemble.FanOut{}, Kind: nestKind{children: []*ensemble.Ensemble{child}}},
		{Name: "once", Kind: nestKind{children: []*ensemble.Ensemble{child}}},
	}}
	e.Index()
	r := NewResponses()
	r.Add("analyst/think", "first")
	r.Add("analyst/think", "second")
	r.Add("analyst[1]/think", "own")
	if err := r.Validate(e); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	bad := NewResponses()
	bad.Add("once[0]/think", "x")
	if err := bad.Validate(e); err == nil || !strings.Contains(err.Error(), `has no fan_out: its responses go under "once/think"`) {
		t.Errorf("an instance of an agent without fan_out: got %v", err)
	}
	if a := agentpath.AgentAt(e, "analyst[3]/think"); a == nil || a.Name != "think" {
		t.Errorf("AgentAt(analyst[3]/think) = %v", a)
	}
	if got := agentpath.PathWithoutInstances("a[1]/b/c[22]/d"); got != "a/b/c/d" {
		t.Errorf("PathWithoutInstances = %q", got)
	}

	ir := Injected(r, nil)
	// Instances in the order they ask, not item order: each gets its own.
	if ent, n, err := ir.pathEntry(pathReq("analyst[2]/think", 2)); err != nil || ent.Agent != "analyst/think" || n != 2 {
		t.Errorf("analyst[2]/think: %v %d %v", ent, n, err)
	}
	if ent, n, err := ir.pathEntry(pathReq("analyst[0]/think", 1)); err != nil || ent.Agent != "analyst/think" || n != 1 {
		t.Errorf("analyst[0]/think: %v %d %v", ent, n, err)
	}
	// An instance's own entry wins, counted on its own.
	if ent, n, err := ir.pathEntry(pathReq("analyst[1]/think", 5)); err != nil || ent.Agent != "analyst[1]/think" || n != 1 {
		t.Errorf("analyst[1]/think: %v %d %v", ent, n, err)
	}
	// A second execution in one instance's child is refused.
	if _, _, err := ir.pathEntry(pathReq("analyst[0]/think", 1)); err == nil || !strings.Contains(err.Error(), `under "analyst[0]/think"`) {
		t.Errorf("second execution: %v", err)
	}
}
