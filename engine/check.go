package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// CheckState returns an error when the state saved in f is not one a run of
// e could have written: its completion reason is unknown, or it names agents,
// dependency edges or state keys that e does not have, or holds memory for an
// agent whose runner keeps none. state.Load has already checked what needs
// no ensemble (history against counts). Errors name the JSON field.
//
// When e is not the file f was saved from (CheckEnsemble failed and the
// caller resumes anyway), only the completion reason is checked: the saved
// state may then name agents and edges that were removed since, which the
// resolver ignores.
func CheckState(e *ensemble.Ensemble, f *state.File) error {
	switch f.CompletionReason {
	case "", Completed, MaxTotalTurns, Timeout, Cancelled, AwaitingInput, BudgetExceeded, ExpectationFailed, StrictWarning:
	default:
		return fmt.Errorf("completion_reason %q is not one of %q, %q, %q, %q, %q, %q, %q, %q, or \"\" while the run goes on",
			f.CompletionReason, Completed, MaxTotalTurns, Timeout, Cancelled, AwaitingInput, BudgetExceeded, ExpectationFailed, StrictWarning)
	}
	if e.Hash != f.Ensemble.SHA256 {
		return nil
	}
	s := f.State
	c := s.Contents()
	agent := func(name, field string) (*ensemble.Agent, error) {
		if a := e.Agent(name); a != nil {
			return a, nil
		}
		return nil, fmt.Errorf("%s names agent %q, which the ensemble %s does not have", field, name, e.Path)
	}
	for i, r := range s.History() {
		if r.Of != "" { // an instance of a fan-out agent
			if a, err := agent(r.Of, fmt.Sprintf("state.conversation_history[%d].of", i)); err != nil {
				return err
			} else if a.FanOut == nil {
				return fmt.Errorf("state.conversation_history[%d] is an instance of %q, which has no fan_out", i, r.Of)
			}
			continue
		}
		if _, err := agent(r.AgentName, fmt.Sprintf("state.conversation_history[%d].agent_name", i)); err != nil {
			return err
		}
	}
	for _, counts := range []struct {
		field string
		m     map[string]int
	}{{"state.agent_execution_count", s.ExecutionCounts()}, {"state.output_count", c.OutputCount}} {
		for _, name := range slices.Sorted(maps.Keys(counts.m)) {
			if _, err := agent(name, counts.field); err != nil {
				return err
			}
		}
	}
	for _, target := range slices.Sorted(maps.Keys(c.Edges)) {
		a, err := agent(target, "state.edges")
		if err != nil {
			return err
		}
		for _, dep := range slices.Sorted(maps.Keys(c.Edges[target])) {
			if !slices.ContainsFunc(a.Dependencies, func(d *ensemble.Dependency) bool { return d.AgentName == dep }) {
				return fmt.Errorf("state.edges.%s.%s is the edge %s ← %s, but %q has no dependency on %q", target, dep, target, dep, target, dep)
			}
		}
	}
	for i, q := range s.Pending() { // q.From has outputs: the counts above name it
		if _, err := agent(q.Target, fmt.Sprintf("state.pending_requests[%d].target_agent_name", i)); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Memory)) {
		field := "state.memory." + name
		a, err := agent(name, "state.memory")
		if err != nil {
			return err
		}
		if !agentpkg.KeepsMemory(a) {
			return fmt.Errorf("%s is set, but %q is a %s agent, which keeps no memory", field, name, a.Kind)
		}
		if err := checkMemory(s.Memory(name)); err != nil {
			return fmt.Errorf("%s is not a stored conversation (%s)", field, err)
		}
	}
	byKey := make(map[string]*ensemble.Agent, len(e.Agents))
	for _, a := range e.Agents {
		byKey[a.StateKey()] = a
		if _, ok := s.Context()[a.StateKey()]; !ok && s.Outputs(a.Name) > 0 {
			return fmt.Errorf("state.accumulated_context has no %q, the state key of %q, which has %d outputs", a.StateKey(), a.Name, s.Outputs(a.Name))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(s.Context())) {
		switch a := byKey[key]; {
		case a == nil:
			return fmt.Errorf("state.accumulated_context.%s is the state key of no agent of the ensemble %s", key, e.Path)
		case s.Outputs(a.Name) == 0:
			return fmt.Errorf("state.accumulated_context.%s is set, but %q, whose state key it is, has no output", key, a.Name)
		}
	}
	return nil
}

// checkMemory checks the shape of the conversation an LLM agent or a
// simulated user keeps (as kinds/llm stores it): null, or
// {"version": N, "messages": [{"role": "…", …}, …]}. The runner reads the
// rest, and says what it cannot.
func checkMemory(raw json.RawMessage) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	var m struct {
		Version  *int `json:"version"`
		Messages *[]*struct {
			Role *string `json:"role"`
		} `json:"messages"`
	}
	const want = `{"version": 1, "messages": [{"role": …}, …]}`
	if err := json.Unmarshal(raw, &m); err != nil || m.Version == nil || *m.Version < 1 || m.Messages == nil {
		return fmt.Errorf("want %s", want)
	}
	for i, msg := range *m.Messages {
		if msg == nil || msg.Role == nil || *msg.Role == "" {
			return fmt.Errorf("messages[%d] has no role", i)
		}
	}
	return nil
}
