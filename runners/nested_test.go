package runners

import (
	"strings"

	"testing"

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
	if _, n := ir.pathEntry("loop/critic"); n != 3 {
		t.Errorf("loop/critic takes response %d, want 3", n)
	}
	if _, n := ir.pathEntry("loop/inner/deep"); n != 2 {
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
