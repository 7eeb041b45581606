package bdd

import (
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/ensemble-run/ensemble/state"
)

// simSpend is what the simulated people of a test run's scenarios used
// (simulator.go): counted apart from the runs' usage, and reported on its
// own line at the end of the test run.
type simSpend struct {
	mu sync.Mutex
	u  state.Usage
}

func (s *simSpend) add(u *state.Usage) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.u.Add(u)
}

// report writes the line of a test run whose simulated people made model
// requests; nothing otherwise.
func (s *simSpend) report(w io.Writer) {
	if s == nil {
		return
	}
	s.mu.Lock()
	u := s.u
	s.mu.Unlock()
	if u.Requests > 0 {
		fmt.Fprintln(w, simSpendLine(u))
	}
}

// simSpendLine says what simulated people used.
func simSpendLine(u state.Usage) string {
	line := fmt.Sprintf("simulated people: %s, %d tokens", requestsText(u.Requests), u.Tokens())
	if u.Cost > 0 {
		line += ", cost " + formatCost(u.Cost)
	}
	return line + " (apart from the runs' usage)"
}

// simulatorProperties are the JUnit properties of t's simulated people,
// over its runs: none when they made no model request.
func (t *tracked) simulatorProperties() []junitProperty {
	var u state.Usage
	for _, r := range t.runs {
		u.Add(&r.simulated)
	}
	if u.Requests == 0 {
		return nil
	}
	ps := []junitProperty{
		{Name: t.name + ": simulator requests", Value: strconv.Itoa(u.Requests)},
		{Name: t.name + ": simulator tokens", Value: strconv.Itoa(u.Tokens())},
	}
	if u.Cost > 0 {
		ps = append(ps, junitProperty{Name: t.name + ": simulator cost", Value: strconv.FormatFloat(u.Cost, 'f', -1, 64)})
	}
	return ps
}

// simulatedSpent is what the simulated people of rr's runs used.
func (rr *repeatRun) simulatedSpent() state.Usage {
	var u state.Usage
	for _, t := range rr.ts {
		for _, r := range t.runs {
			u.Add(&r.simulated)
		}
	}
	return u
}
