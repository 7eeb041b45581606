package runners

import (
	"testing"

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
		{AgentName: "inner", Child: &state.Child{ConversationHistory: []*state.Record{{AgentName: "deep"}}}},
		{AgentName: "fan", InputData: map[string]any{"fan_out": map[string]any{"over": "x"}}},
	}}
	ir.Resume([]*state.Record{{AgentName: "other"}, {AgentName: "loop", Child: last}})
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
