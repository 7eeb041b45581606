package report

import (
	"fmt"
	"slices"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// Fan-out instances (docs/semantics.md#fan-out) are records of their own in
// the history, but not executions of their agent: the statistics fold them
// into their agent's row (their usage, their count and failures), whose
// own record holds the fan-out's time.

// addInstance folds an instance's record into its agent's statistics.
func (s *AgentStats) addInstance(rec *state.Record) {
	s.Instances++
	if rec.Error != nil {
		s.InstanceFailures++
	}
	s.Usage.Add(rec.Usage)
}

// instanceColumns says which columns the text summary needs for fan-out
// instances: their number, when an agent has any, and their failures, when
// one failed.
func instanceColumns(stats []*AgentStats) (instances, failed bool) {
	for _, s := range stats {
		instances = instances || s.Instances > 0
		failed = failed || s.InstanceFailures > 0
	}
	return instances, failed
}

// runsCell is the runs of an agent, and its instances when it fans out:
// "1 (3 instances)", in the Markdown report's table.
func runsCell(s *AgentStats) string {
	if s.Instances == 0 {
		return fmt.Sprint(s.Runs)
	}
	return fmt.Sprintf("%d (%s)", s.Runs, Count(s.Instances, "instance"))
}

// failedCell is the failed runs of an agent, and its failed instances;
// zero writes the number of runs (dash, or fmt.Sprint).
func failedCell(s *AgentStats, zero func(int) string) string {
	if s.InstanceFailures == 0 {
		return zero(s.Failures)
	}
	return fmt.Sprintf("%s (%s)", zero(s.Failures), Count(s.InstanceFailures, "failed instance"))
}

// instanceFacts describes an instance's record in the report: "instance 2
// of `summarize`".
func instanceFacts(rec *state.Record) string {
	if rec.Of == "" || rec.Instance == nil {
		return ""
	}
	return fmt.Sprintf("instance %d of %s", *rec.Instance, code(rec.Of))
}

// instanceStarted adds a fan-out's instance that started to the status
// line, where it stands for its agent from then on: the agent itself never
// starts (only its instances do). nil when name is no instance of an agent
// of the turn.
func (p *Progress) instanceStarted(name string) *agentProgress {
	agent, _, ok := ensemble.ParseInstanceName(name)
	parent := p.byName[agent]
	if !ok || parent == nil {
		return nil
	}
	p.agents = slices.DeleteFunc(p.agents, func(a *agentProgress) bool { return a == parent })
	a := &agentProgress{name: name}
	p.agents = append(p.agents, a)
	p.byName[name] = a
	return a
}
