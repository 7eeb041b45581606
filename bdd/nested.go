package bdd

import (
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/runners"
	"github.com/ensemble-run/ensemble/state"
)

// Steps name the agents of child ensembles by path, `review_round/critic`
// (docs/testing.md): their executions are the records kept in their parent
// agents' records, every execution of the child (every iteration of a
// loop) in the run's order.

func isPath(name string) bool { return strings.Contains(name, "/") }

// pathRecords are the records of the agent at path among recs, whose
// agents' paths start with prefix. A part of path without an instance
// (`analyst/think`) takes in every instance's records (`analyst[1]/think`).
func pathRecords(recs []*state.Record, path, prefix string) []*state.Record {
	var out []*state.Record
	want := strings.Split(path, "/")
	for _, r := range recs {
		name := prefix + r.AgentName
		if partsMatch(want, name) {
			out = append(out, r)
		}
		if c := r.Child(); c != nil && len(want) > strings.Count(name, "/")+1 && partsMatch(want[:strings.Count(name, "/")+1], name) {
			for _, c := range c.Runs() {
				out = append(out, pathRecords(c.ConversationHistory, path, name+"/")...)
			}
		}
	}
	return out
}

// partsMatch reports whether the path name has the parts want, each the
// same or, where want names no instance, an instance of it.
func partsMatch(want []string, name string) bool {
	got := strings.Split(name, "/")
	if len(got) != len(want) {
		return false
	}
	for i, g := range got {
		if g != want[i] && runners.PathWithoutInstances(g) != want[i] {
			return false
		}
	}
	return true
}

// errorsOf are the run's errors, and for a path the failed executions of
// the agent it names, as errors of that name.
func (s *Scenario) errorsOf(name string) []engine.RunError {
	if !isPath(name) {
		return s.result.Errors
	}
	var out []engine.RunError
	for _, r := range pathRecords(s.result.ConversationHistory, name, "") {
		if r.Error != nil {
			out = append(out, engine.RunError{TurnNumber: r.TurnNumber, AgentName: name, Message: *r.Error})
		}
	}
	return out
}
