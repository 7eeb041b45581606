package agent

import "context"

// Slots are the parallel budget of a run and of the runs of its child
// ensembles, all of them (docs/semantics.md#ensembles-of-ensembles): an
// executing agent holds one slot. An agent that runs a child keeps its slot
// and lends it to the child's run (Lend), so that a whole tree of
// ensembles runs at most the top run's parallel_agent_limit agents at once,
// however wide or deep, and a child always has a slot to go on with.
type Slots struct {
	pool chan struct{} // shared by the tree: a send takes a slot
	own  chan struct{} // the slot lent to this run; nil at the top
}

// NewSlots returns a tree's budget of n slots (at least 1).
func NewSlots(n int) *Slots { return &Slots{pool: make(chan struct{}, max(n, 1))} }

// Lend returns the slots of a child run started by an execution that holds
// one of s: the tree's, and the execution's own for the child's use.
func (s *Slots) Lend() *Slots {
	own := make(chan struct{}, 1)
	own <- struct{}{}
	return &Slots{pool: s.pool, own: own}
}

// Acquire waits for a slot, the lent one first: false when ctx ends first.
// release gives it back.
func (s *Slots) Acquire(ctx context.Context) (release func(), ok bool) {
	select {
	case <-s.own:
		return s.giveOwn, true
	default:
	}
	select {
	case <-s.own: // nil at the top: never
		return s.giveOwn, true
	case s.pool <- struct{}{}:
		return s.givePool, true
	case <-ctx.Done():
		return nil, false
	}
}

func (s *Slots) giveOwn()  { s.own <- struct{}{} }
func (s *Slots) givePool() { <-s.pool }
