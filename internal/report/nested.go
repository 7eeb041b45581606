package report

import (
	"cmp"
	"fmt"

	"github.com/ensemble-run/ensemble/state"
)

// child writes what the child ensemble of an execution ran
// (docs/semantics.md#ensembles-of-ensembles), nested under it: each run (a
// loop's iterations in order) with its ending, then its executions, named
// by path.
func (m *markdown) child(rec *state.Record) {
	c := rec.Child()
	if c == nil {
		return
	}
	runs := c.Runs()
	prefix, turn := m.prefix, m.turn
	m.prefix, m.turn = prefix+rec.AgentName+"/", cmp.Or(turn, rec.TurnNumber)
	defer func() { m.prefix, m.turn = prefix, turn }()
	for i, c := range runs {
		what := fmt.Sprintf("Child ensemble %s", code(c.Ensemble))
		if len(runs) > 1 {
			what += fmt.Sprintf(", iteration %d of %d", i+1, len(runs))
		}
		m.p("> **%s**: %s after %d turns\n\n", what, code(c.CompletionReason), c.TurnCount)
		for _, r := range c.ConversationHistory {
			m.execution(r)
		}
	}
}
