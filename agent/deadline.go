package agent

import "time"

// Deadline is when an ask agent's question stops waiting for its answer
// (its timeout:, saved with the run's suspension), and whether it had
// passed when the run was resumed: the agent's next execution then
// applies its on_timeout instead of asking.
type Deadline struct {
	At     time.Time
	Passed bool
}

// WithDeadlines adds to a the deadlines of the questions a resumed run
// waits for, by agent; it returns a, or new answers when a is nil and
// there are deadlines.
func (a *Answers) WithDeadlines(d map[string]Deadline) *Answers {
	if len(d) == 0 {
		return a
	}
	if a == nil {
		a = &Answers{given: map[string]string{}}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deadlines = make(map[string]Deadline, len(d))
	for k, v := range d {
		a.deadlines[k] = v
	}
	return a
}

// Deadline returns agent's deadline and forgets it: the agent's next
// execution takes it, once, as it takes an answer. Safe for concurrent
// use; nil has none.
func (a *Answers) Deadline(agent string) (Deadline, bool) {
	if a == nil {
		return Deadline{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.deadlines[agent]
	delete(a.deadlines, agent)
	return d, ok
}
