package state

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// consistent rejects a state that no run could have saved, such as one
// edited by hand, whose history and counts disagree. Resuming it would take
// injected responses from the wrong position, trigger agents on outputs
// they already consumed, or never trigger them again. It needs no ensemble
// (the engine checks the state against its ensemble) and runs after check,
// which has filled in the maps and rejected null records. Errors name the
// JSON field from the top of the file; the work is linear in the size of
// the state.
//
// What every saved state satisfies: every turn from 1 to turn_count ran at
// least one agent, so the records' turn numbers go 1, …, turn_count with
// no gap and never back; an agent runs (or is skipped) at most once a turn,
// and its records number its executions 1, 2, … (a skip's record is no
// execution: number 0, no output, no error); agent_execution_count counts each agent's
// records and output_count its successful ones (no error, or an output
// whose agent requests were refused); an edge never consumed more outputs
// than its dependency produced (skips included), each trigger consumed a new one, and each
// was an execution of its agent; a pending request comes from an agent that
// produced an output.
func (s *State) consistent() error {
	per, err := s.tallyHistory()
	if err != nil {
		return err
	}
	if err := s.checkCounts(per); err != nil {
		return err
	}
	if err := s.checkEdges(per); err != nil {
		return err
	}
	for i, q := range s.pending {
		if s.outputs[q.From] == 0 {
			return fmt.Errorf("state.pending_requests[%d].from is %q, which has no output to have made the request", i, q.From)
		}
	}
	for i, w := range s.warnings {
		if w.TurnNumber < 1 || w.TurnNumber > s.TurnCount+1 {
			return fmt.Errorf("state.warnings[%d].turn_number is %d, outside 1..%d", i, w.TurnNumber, s.TurnCount+1)
		}
	}
	return nil
}

// recordTally is what the history holds of one agent.
type recordTally struct{ records, outputs, skips, lastTurn int }

// tallyHistory checks the history's records one by one, and counts them
// by agent.
func (s *State) tallyHistory() (map[string]*recordTally, error) {
	per := make(map[string]*recordTally, len(s.executions))
	turn := 0
	for i, r := range s.history {
		at := fmt.Sprintf("state.conversation_history[%d]", i)
		if r.AgentName == "" {
			return nil, fmt.Errorf("%s.agent_name is empty", at)
		}
		if r.TurnNumber < turn {
			return nil, fmt.Errorf("%s.turn_number is %d, before the turn %d of the record above it", at, r.TurnNumber, turn)
		}
		if r.TurnNumber > turn+1 {
			return nil, fmt.Errorf("%s.turn_number is %d but no record is of turn %d (every turn runs an agent)", at, r.TurnNumber, turn+1)
		}
		turn = r.TurnNumber
		if r.Of != "" || r.Instance != nil {
			if err := instanceRecord(r, at); err != nil {
				return nil, err
			}
			continue // an instance is part of its agent's execution, which has its own record
		}
		t := per[r.AgentName]
		if t == nil {
			t = &recordTally{}
			per[r.AgentName] = t
		}
		if t.records+t.skips > 0 && t.lastTurn == r.TurnNumber {
			return nil, fmt.Errorf("%s is a second record of agent %q in turn %d (an agent runs at most once a turn)", at, r.AgentName, turn)
		}
		t.lastTurn = r.TurnNumber
		if r.Skipped {
			// A skip is no execution: no number, no output, no error.
			if r.Execution != 0 || r.Error != nil || r.OutputData != nil {
				return nil, fmt.Errorf("%s is skipped but has an execution number, an output or an error", at)
			}
			t.skips++
			continue
		}
		t.records++
		if r.Execution != t.records {
			return nil, fmt.Errorf("%s.execution is %d but it is record %d of agent %q", at, r.Execution, t.records, r.AgentName)
		}
		if r.ExecutionTime < 0 {
			return nil, fmt.Errorf("%s.execution_time is negative", at)
		}
		if u := r.Usage; u != nil && (u.Requests < 0 || u.InputTokens < 0 || u.OutputTokens < 0 || !(u.Cost >= 0) || math.IsInf(u.Cost, 0)) {
			return nil, fmt.Errorf("%s.usage holds a negative count", at)
		}
		if r.Error == nil || r.OutputData != nil {
			t.outputs++
		}
	}
	if turn != s.TurnCount {
		if len(s.history) == 0 {
			return nil, fmt.Errorf("state.turn_count is %d but state.conversation_history is empty", s.TurnCount)
		}
		return nil, fmt.Errorf("state.turn_count is %d but the last record of state.conversation_history is of turn %d", s.TurnCount, turn)
	}
	return per, nil
}

// checkCounts holds the execution and output counts to the history's
// records.
func (s *State) checkCounts(per map[string]*recordTally) error {
	names := make(map[string]bool, len(per))
	for name := range per {
		names[name] = true
	}
	for name := range s.executions {
		names[name] = true
	}
	for name := range s.outputs {
		names[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		var t recordTally
		if p := per[name]; p != nil {
			t = *p
		}
		if n := s.executions[name]; n != t.records {
			return fmt.Errorf("state.agent_execution_count.%s is %d but state.conversation_history has %d records of %q", name, n, t.records, name)
		}
		if n := s.outputs[name]; n != t.outputs {
			return fmt.Errorf("state.output_count.%s is %d but state.conversation_history has %d successful records of %q", name, n, t.outputs, name)
		}
	}
	return nil
}

// checkEdges holds each edge's counts to the executions and skips of its
// two agents.
func (s *State) checkEdges(per map[string]*recordTally) error {
	skips := func(agent string) int {
		if t := per[agent]; t != nil {
			return t.skips
		}
		return 0
	}
	for _, target := range slices.Sorted(maps.Keys(s.edges)) {
		for _, dep := range slices.Sorted(maps.Keys(s.edges[target])) {
			es, at := s.edges[target][dep], fmt.Sprintf("state.edges.%s.%s", target, dep)
			// A failure edge (on: failure) consumes failures, not outputs;
			// an edge may consume skips too (docs/semantics.md#guards-that-skip):
			// at most one per execution or skip of the dependency.
			switch execs, runs := s.executions[dep], s.executions[target]; {
			case es.Consumed > execs+skips(dep):
				return fmt.Errorf("%s.consumed is %d but %q ran %d times%s", at, es.Consumed, dep, execs, skipped(skips(dep)))
			case es.Triggered > es.Consumed:
				return fmt.Errorf("%s.triggered is %d but consumed is %d (each trigger consumes a new output)", at, es.Triggered, es.Consumed)
			case es.Consumed > 0 && runs+skips(target) == 0:
				return fmt.Errorf("%s.consumed is %d but %q never ran (it consumes when it runs)", at, es.Consumed, target)
			case es.Triggered > runs:
				return fmt.Errorf("%s.triggered is %d but %q ran %d times", at, es.Triggered, target, runs)
			}
		}
	}
	return nil
}

// skipped is ", and was skipped N times" for N > 0, for a message.
func skipped(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" and was skipped %d times", n)
}

// instanceRecord checks the record of an instance of a fan-out agent
// (docs/semantics.md#fan-out): named `of[instance]`.
func instanceRecord(r *Record, at string) error {
	if r.Of == "" || r.Instance == nil {
		return fmt.Errorf("%s has one of instance and of without the other", at)
	}
	if want := fmt.Sprintf("%s[%d]", r.Of, *r.Instance); r.AgentName != want {
		return fmt.Errorf("%s.agent_name is %q but the record is instance %d of %q", at, r.AgentName, *r.Instance, r.Of)
	}
	if r.ExecutionTime < 0 {
		return fmt.Errorf("%s.execution_time is negative", at)
	}
	return nil
}
