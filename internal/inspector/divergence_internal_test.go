package inspector

import (
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// The sentence of a divergence says where two runs part: at no turn, at a
// turn one of them did not reach, with other agents, or with an agent's
// other input or outcome.
func TestDivergenceNote(t *testing.T) {
	t.Parallel()
	rec := func(agent string, in, out any) *state.Record {
		return &state.Record{AgentName: agent, Execution: 1, InputData: in, OutputData: out}
	}
	failed := &store.TestResult{Step: `Then the output of agent "b" is "x"`}
	for _, tc := range []struct {
		name       string
		turn       int
		fail, pass []*state.Record
		want       []string
		not        string
	}{
		{"the same turns", 0, nil, nil, []string{"executed the same turns", `at Then the output of agent "b" is "x"`}, ""},
		{"the failing run ended", 3, nil, []*state.Record{rec("a", 1, 2)}, []string{"failing run ended (completed) before turn 3"}, ""},
		{"the passing run ended", 3, []*state.Record{rec("a", 1, 2)}, nil, []string{"went on to turn 3, after the passing run ended (completed)"}, ""},
		{"other agents", 2, []*state.Record{rec("a", 1, 2)}, []*state.Record{rec("b", 1, 2)}, []string{"part at turn 2: ran other agents"}, "outcome"},
		{"another output", 2, []*state.Record{rec("a", 1, "x")}, []*state.Record{rec("a", 1, "y")}, []string{`agent "a" gave another outcome`}, "input"},
		{"another input", 2, []*state.Record{rec("a", 1, "x")}, []*state.Record{rec("a", 2, "x")}, []string{`agent "a" got another input`}, "outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dv := &Divergence{Turn: tc.turn,
				Failing: &DivergenceSide{Result: failed, CompletionReason: "completed", Records: tc.fail},
				Passing: &DivergenceSide{Result: &store.TestResult{}, CompletionReason: "completed", Records: tc.pass}}
			got := noteOf(dv)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			if tc.not != "" && strings.Contains(got, tc.not) {
				t.Errorf("%q says %q", got, tc.not)
			}
		})
	}
}

// Of the passing runs, the one a failing run follows longest is compared
// with: a later divergence, and none at all latest.
func TestDivergenceLater(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		x, y int
		want bool
	}{{3, 2, true}, {2, 3, false}, {0, 5, true}, {5, 0, false}, {0, 0, false}} {
		if got := later(&divergedAt{turn: tc.x}, &divergedAt{turn: tc.y}); got != tc.want {
			t.Errorf("later(%d, %d) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}
