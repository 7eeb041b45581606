package state

import (
	"encoding/json"
)

// OutputRef stands in a record's input_data for a dependency's output that
// the history already holds: the output of the execution Execution of agent
// AgentName (docs/cli.md#the-result). A long run would otherwise hold and
// print every output once more for each agent it was delivered to.
//
// In JSON it is {"output_of": {"agent_name": "writer", "execution": 3}}.
type OutputRef struct {
	AgentName string `json:"agent_name"`
	Execution int    `json:"execution"`
}

type outputRefJSON struct {
	OutputOf struct {
		AgentName string `json:"agent_name"`
		Execution int    `json:"execution"`
	} `json:"output_of"`
}

// MarshalJSON writes {"output_of": {...}}.
func (r *OutputRef) MarshalJSON() ([]byte, error) {
	var j outputRefJSON
	j.OutputOf.AgentName, j.OutputOf.Execution = r.AgentName, r.Execution
	return json.Marshal(j)
}

// IsOutputRef reports whether v has the JSON shape of a reference,
// {"output_of": {"agent_name": …, "execution": …}}.
func IsOutputRef(v any) bool {
	_, ok := refOf(v)
	return ok
}

// refOf reads an OutputRef, typed or as decoded from JSON (a state file).
func refOf(v any) (OutputRef, bool) {
	switch x := v.(type) {
	case *OutputRef:
		return *x, x != nil
	case map[string]any:
		if len(x) != 1 {
			return OutputRef{}, false
		}
		inner, ok := x["output_of"].(map[string]any)
		if !ok || len(inner) != 2 {
			return OutputRef{}, false
		}
		name, ok1 := inner["agent_name"].(string)
		n, ok2 := inner["execution"].(float64)
		if !ok1 || !ok2 || n < 1 || n != float64(int(n)) {
			return OutputRef{}, false
		}
		return OutputRef{AgentName: name, Execution: int(n)}, true
	}
	return OutputRef{}, false
}

// Output returns the output of an agent's execution, from the history: false
// when that execution is not recorded or failed.
func (s *State) Output(agent string, execution int) (any, bool) {
	if s.indexed != len(s.history) {
		s.indexRecords()
	}
	recs := s.byAgent[agent]
	for i := len(recs) - 1; i >= 0; i-- { // executions are recorded in order: usually found at once
		r := s.history[recs[i]]
		if r.Execution == execution {
			if r.Error != nil {
				return nil, false
			}
			return r.OutputData, true
		}
		if r.Execution < execution {
			break
		}
	}
	return nil, false
}

// ExecutionRef names one execution of an agent.
type ExecutionRef struct {
	AgentName string `json:"agent_name"`
	Execution int    `json:"execution"`
}

// LastFailure returns the latest failed execution of an agent, or nil.
func (s *State) LastFailure(agent string) *Record {
	if s.indexed != len(s.history) {
		s.indexRecords()
	}
	recs := s.byAgent[agent]
	for i := len(recs) - 1; i >= 0; i-- {
		if r := s.history[recs[i]]; r.Error != nil {
			return r
		}
	}
	return nil
}

// LastSettled returns the latest record of agent that an edge delivers: a
// success, with failures a failed execution too (an on: always edge), and
// with skips a skip (a required edge); nil when there is none. A record is
// a success when it counts as an output (no error, or an output whose
// agent requests were refused).
func (s *State) LastSettled(agent string, failures, skips bool) *Record {
	if s.indexed != len(s.history) {
		s.indexRecords()
	}
	recs := s.byAgent[agent]
	for i := len(recs) - 1; i >= 0; i-- {
		switch r := s.history[recs[i]]; {
		case r.Skipped:
			if skips {
				return r
			}
		case failures || r.Error == nil || r.OutputData != nil:
			return r
		}
	}
	return nil
}

// handlesValue is Record.Handles as conditions see it: a list of
// {agent_name, execution}, empty when there is none.
func handlesValue(h []ExecutionRef) []any {
	out := make([]any, len(h))
	for i, r := range h {
		out[i] = map[string]any{"agent_name": r.AgentName, "execution": r.Execution}
	}
	return out
}

func (s *State) indexRecords() {
	if s.byAgent == nil || s.indexed > len(s.history) { // a history replaced by hand
		s.byAgent, s.indexed = map[string][]int{}, 0
	}
	for i := s.indexed; i < len(s.history); i++ {
		name := s.history[i].AgentName
		s.byAgent[name] = append(s.byAgent[name], i)
	}
	s.indexed = len(s.history)
}

// ResolveInput returns a record's input data with the dependency outputs it
// holds by reference (OutputRef) replaced by the outputs themselves, as the
// agent was given them. Only input_data.dependencies holds references; the
// maps on the way are copied, the outputs are shared. A reference to an
// execution the history does not hold stays as it is.
func (s *State) ResolveInput(inputData any) any {
	return resolveInput(inputData, s.Output)
}

// ResolveInput is State.ResolveInput over a result's history, looked up
// without an index: for tests and reports, not for a run's turns.
func ResolveInput(history []*Record, inputData any) any {
	return resolveInput(inputData, func(agent string, execution int) (any, bool) {
		for i := len(history) - 1; i >= 0; i-- {
			if r := history[i]; r.AgentName == agent && r.Execution == execution {
				return r.OutputData, r.Error == nil
			}
		}
		return nil, false
	})
}

func resolveInput(inputData any, output func(agent string, execution int) (any, bool)) any {
	m, ok := inputData.(map[string]any)
	if !ok {
		return inputData
	}
	deps, ok := m["dependencies"].(map[string]any)
	if !ok {
		return inputData
	}
	var out map[string]any
	for k, v := range deps {
		ref, ok := refOf(v)
		if !ok {
			continue
		}
		val, ok := output(ref.AgentName, ref.Execution)
		if !ok {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(deps))
			for k2, v2 := range deps {
				out[k2] = v2
			}
		}
		out[k] = val
	}
	if out == nil {
		return inputData
	}
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	cp["dependencies"] = out
	return cp
}
