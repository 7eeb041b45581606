package inspector

import (
	"net/http"
	"time"
)

// AgentStats is what one agent's executions of a run add up to.
type AgentStats struct {
	Executions int `json:"executions"`
	Failures   int `json:"failures,omitempty"`
	// Seconds is the time its executions took, added up.
	Seconds      float64 `json:"seconds"`
	Requests     int     `json:"requests"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Cost         float64 `json:"cost"`
}

// RunStats is a run among those of its ensemble, and its agents' totals.
type RunStats struct {
	ID      string                 `json:"id"`
	Started time.Time              `json:"started_at"`
	Turns   int                    `json:"turns"`
	Partial bool                   `json:"partial,omitempty"`
	Agents  map[string]*AgentStats `json:"agents"`
}

// EnsembleStats is what GET /api/run/across answers.
type EnsembleStats struct {
	Ensemble string      `json:"ensemble"`
	Runs     []*RunStats `json:"runs"`
	// Total is how many runs of the ensemble the database holds; Runs are
	// its last maxAcross.
	Total int `json:"total"`
}

// maxAcross is the most runs GET /api/run/across compares.
const maxAcross = 50

// apiAcross is GET /api/run/across?db=N&id=ID: the runs of the run's
// ensemble (its name) in the same database, its last 50 at most, in the
// order they were created, with each agent's executions, time, tokens and
// cost in each. A run of thousands of turns not yet counted has the totals
// of its last turns (partial) until it is, in the background.
func (s *Server) apiAcross(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		s.fail(w, &httpError{http.StatusServiceUnavailable, "the server is stopping"})
		return
	}
	runs, err := d.db.Runs()
	if err != nil {
		s.fail(w, err)
		return
	}
	out := &EnsembleStats{Ensemble: info.Ensemble, Runs: []*RunStats{}}
	for _, ri := range runs {
		if ri.Ensemble == info.Ensemble {
			out.Total++
		}
	}
	skip := out.Total - maxAcross
	for _, ri := range runs {
		if ri.Ensemble != info.Ensemble {
			continue
		}
		if skip--; skip >= 0 {
			continue
		}
		t, partial, err := s.tally(i, d, ri)
		if err != nil {
			s.fail(w, err)
			return
		}
		rs := &RunStats{ID: ri.ID, Started: ri.Started, Turns: ri.Turns, Partial: partial, Agents: map[string]*AgentStats{}}
		for name, a := range t.Agents {
			rs.Agents[name] = &AgentStats{Executions: a.Executions, Failures: a.Failures, Seconds: a.Seconds, Requests: a.Usage.Requests,
				InputTokens: a.Usage.InputTokens, OutputTokens: a.Usage.OutputTokens, Cost: a.Usage.Cost}
		}
		out.Runs = append(out.Runs, rs)
	}
	s.reply(w, out)
}
