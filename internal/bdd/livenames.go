package bdd

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ensemble-run/ensemble/ensemble"
)

// liveNames are the names of `test --live`, and which of them a scenario's
// ensemble (or a judge) had: a name none had is a typo that would leave an
// agent off its model, which the test run warns of at its end.
type liveNames struct {
	mu   sync.Mutex
	seen map[string]bool
	// known are the agents and judges of the scenarios that ran: what a
	// typo is compared with.
	known map[string]bool
}

func newLiveNames(names []string) *liveNames {
	if len(names) == 0 {
		return nil
	}
	l := &liveNames{seen: map[string]bool{}, known: map[string]bool{}}
	for _, n := range names {
		l.seen[n] = false
	}
	return l
}

// mark notes the --live names that name an agent of the scenario's
// ensemble (a child's agent by its path, a fan-out instance) or one of its
// judges.
func (l *liveNames) mark(s *Scenario) {
	if l == nil || s.ens == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range s.ens.AgentNames() {
		l.known[n] = true
	}
	for n := range s.judges {
		l.known[n] = true
	}
	for n, seen := range l.seen {
		if seen {
			continue
		}
		if _, ok := s.judges[n]; ok {
			l.seen[n] = true
		} else if _, err := s.agent(n); err == nil {
			l.seen[n] = true
		}
	}
}

// report warns of the --live names no scenario had.
func (l *liveNames) report(w io.Writer) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var unknown []string
	for n, seen := range l.seen {
		if !seen {
			unknown = append(unknown, n)
		}
	}
	slices.Sort(unknown)
	known := make([]string, 0, len(l.known))
	for n := range l.known {
		known = append(known, n)
	}
	slices.Sort(known)
	for _, n := range unknown {
		fmt.Fprintf(w, "warning: --live %s: no scenario that ran has an agent or a judge of that name%s\n", n, ensemble.Suggest(n, known))
	}
}
