package llm

import (
	"github.com/ensemble-run/ensemble/ensemble"
)

// DefaultOutputRepairs is output_repairs when absent: how many repair turns
// a reply that fails the agent's output_schema gets.
const DefaultOutputRepairs = 1

// decodeRepairs decodes output_repairs, which needs an output_schema, and
// checks that output_format does not contradict one (the schema implies
// json).
func decodeRepairs(f *ensemble.Fields, format string) int {
	if f.Has("output_format") && f.Has("output_schema") && format == "text" {
		f.Bad("output_format", "is text, but the agent has an output_schema, which implies json: remove output_format or write json")
	}
	if !f.Has("output_repairs") {
		return DefaultOutputRepairs
	}
	n, ok := f.Count("output_repairs")
	if ok && !f.Has("output_schema") {
		f.Bad("output_repairs", "needs an output_schema: repairs are for replies that fail it")
	}
	return n
}

// OutputRepairs is how many repair turns a's replies get when they fail its
// output_schema (also the injected responses it takes as repairs).
func (Kind) OutputRepairs(a *ensemble.Agent) int {
	if a.OutputSchema == nil {
		return 0
	}
	return SpecOf(a).OutputRepairs
}
