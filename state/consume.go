package state

// The edge bookkeeping of an agent's execution
// (docs/semantics.md#when-an-agent-is-ready): what the engine's committer
// writes, besides the execution's record and output, when an agent ready
// this turn has executed. The resolver reads these counts to decide which
// agents are ready; it never writes them.

// Consume records that agent executed (successfully or not) having been
// given the outputs behind its satisfied edges, in file order: outputs[i]
// is the output count of satisfied[i] when the agent was resolved (the
// output it received, even if the dependency has produced another since);
// a missing entry stands for the dependency's current count. Each edge
// records that output as consumed, and each edge named in fresh (a
// subsequence of satisfied) counts one trigger towards its max_executions.
// Call it once per execution of the agent.
func (s *State) Consume(agent string, satisfied []string, outputs []int, fresh []string) {
	if len(satisfied) == 0 {
		return
	}
	edges := s.edges[agent]
	if edges == nil {
		edges = make(map[string]*EdgeState, len(satisfied))
		s.edges[agent] = edges
	}
	var slab []EdgeState // the edges that never moved, allocated at once
	for i, d := range satisfied {
		out := s.outputs[d]
		if i < len(outputs) {
			out = outputs[i]
		}
		es := edges[d]
		if es == nil {
			if slab == nil {
				slab = make([]EdgeState, len(satisfied)-i)
			}
			es, slab = &slab[0], slab[1:]
			edges[d] = es
		}
		if out > es.Consumed {
			es.Consumed = out
		}
		if len(fresh) > 0 && fresh[0] == d {
			es.Triggered++
			fresh = fresh[1:]
		}
	}
}

// TakeRequests removes the n pending agent requests that made agent ready:
// the first n pending for it, since requests are only ever appended (a
// request made in the same turn comes after them and stays).
func (s *State) TakeRequests(agent string, n int) {
	if n == 0 {
		return
	}
	kept := s.pending[:0]
	for _, q := range s.pending {
		if n > 0 && q.Target == agent {
			n--
			continue
		}
		kept = append(kept, q)
	}
	clear(s.pending[len(kept):])
	s.pending = kept
	if len(s.pending) == 0 {
		s.pending = nil
	}
}
