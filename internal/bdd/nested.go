package bdd

import (
	"strings"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
)

// Steps name the agents of child ensembles by path, `review_round/critic`
// (docs/testing.md): their executions are the records kept in their parent
// agents' records, every execution of the child (every iteration of a
// loop) in the run's order.

func isPath(name string) bool { return strings.Contains(name, "/") }

// errorsOf are the run's errors, and for a path the failed executions of
// the agent it names, as errors of that name.
func (s *Scenario) errorsOf(name string) []engine.RunError {
	if !isPath(name) {
		return s.result.Errors
	}
	var out []engine.RunError
	for _, r := range agentpath.PathRecords(s.result.ConversationHistory, name) {
		if r.Error != nil {
			out = append(out, engine.RunError{TurnNumber: r.TurnNumber, AgentName: name, Message: *r.Error})
		}
	}
	return out
}
