package inspector

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/store"
)

// The API's list of runs (/api/runs) and their totals, counted in the
// background for a long run.

// summary is the summary of run info of database i; d is held.
func (s *Server) summary(i int, d *database, info *store.RunInfo, batches map[string]bool) (*RunSummary, error) {
	t, partial, err := s.tally(i, d, info)
	if err != nil {
		return nil, err
	}
	rs := &RunSummary{DB: i, DBPath: d.path, ID: info.ID, Ensemble: info.Ensemble, Started: info.Started, Saved: info.Saved,
		Turns: info.Turns, CompletionReason: info.CompletionReason, Usage: t.Usage, Partial: partial}
	rs.Parent, rs.ParentTurn = parentOf(info)
	if !info.Started.IsZero() {
		rs.Duration = max(0, info.Saved.Sub(info.Started).Seconds())
	}
	for _, a := range t.Agents {
		if a.Last == "failed" {
			rs.Failures++
		}
	}
	if b, _, ok := cutLast(info.ID, "."); ok && batches[b] {
		rs.Batch = b
	}
	switch {
	case d.db.Writing(info):
		rs.Status = StatusRunning
	case info.CompletionReason == engine.AwaitingInput:
		rs.Status = StatusSuspended
	case info.CompletionReason == engine.Completed && rs.Failures > 0:
		rs.Status = StatusFailed
	case info.CompletionReason == "":
		rs.Status = StatusUnfinished
	default:
		rs.Status = info.CompletionReason
	}
	s.mu.Lock()
	if j := s.jobs[key(i, info.ID)]; j != nil {
		rs.Job = j.status()
		if rs.Job == StatusRunning && rs.Status != StatusRunning {
			rs.Status = StatusRunning // starting: not writing yet
		}
	}
	s.mu.Unlock()
	return rs, nil
}

// bigTally is how many turns not yet counted make a run's totals counted
// in the background (on a connection of their own), so that the first
// screen of a long run does not wait for them: meanwhile its totals are
// those of its last recentTurns turns, and partial.
const (
	bigTally    = 2000
	recentTurns = 100
)

// tally is the totals of run info of database i, counted from where they
// were counted last; d is held. partial: the run's last turns only, the
// whole being counted in the background.
func (s *Server) tally(i int, d *database, info *store.RunInfo) (tally store.Tally, partial bool, err error) {
	k := key(i, info.ID)
	s.mu.Lock()
	t := s.tallies[k]
	s.mu.Unlock()
	if t == nil || t.Turn > info.Turns {
		t = &store.Tally{} // new, or a run whose id was reused
	}
	if info.Turns-t.Turn > bigTally {
		s.countLater(i, d.path, info.ID)
		p := &store.Tally{Turn: info.Turns - recentTurns}
		if err := d.db.TallyTurns(info, p); err != nil {
			return store.Tally{}, false, err
		}
		return *p, true, nil
	}
	if t.Turn < info.Turns {
		n := cloneTally(t)
		if err := d.db.TallyTurns(info, n); err != nil {
			return store.Tally{}, false, err
		}
		t = n
	}
	s.mu.Lock()
	if old := s.tallies[k]; old == nil || old.Turn <= t.Turn {
		s.tallies[k] = t
	}
	s.mu.Unlock()
	return *t, false, nil
}

// countLater counts the totals of run id of database i (at path) in the
// background, on a connection of its own, once at a time.
func (s *Server) countLater(i int, path, id string) {
	k := key(i, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counting[k] || s.ctx.Err() != nil {
		return
	}
	s.counting[k] = true
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		t, err := countRun(path, id)
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.counting, k)
		if err != nil {
			fmt.Fprintf(s.opts.Stderr, "ensemble ui: counting run %s of %s: %s\n", id, path, s.redacted(err.Error()))
			return
		}
		if old := s.tallies[k]; old == nil || old.Turn <= t.Turn {
			s.tallies[k] = t
		}
	}()
}

// countRun counts the totals of run id of the database at path.
func countRun(path, id string) (*store.Tally, error) {
	db, err := store.Open(path, false, store.SyncNormal)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	info, err := db.Run(id)
	if err != nil {
		return nil, err
	}
	t := &store.Tally{}
	return t, db.TallyTurns(info, t)
}

func cloneTally(t *store.Tally) *store.Tally {
	n := &store.Tally{Turn: t.Turn, Usage: t.Usage, Agents: make(map[string]*store.AgentTally, len(t.Agents))}
	for k, a := range t.Agents {
		c := *a
		n.Agents[k] = &c
	}
	return n
}

// apiRuns lists the runs: GET /api/runs?db=N&q=TEXT&status=STATUS (each
// optional; q matches the id, the ensemble, the batch or the parent).
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	only := -1
	if q.Get("db") != "" {
		i, _, err := s.dbOf(r)
		if err != nil {
			s.fail(w, err)
			return
		}
		only = i
	}
	text, status := strings.ToLower(strings.TrimSpace(q.Get("q"))), q.Get("status")
	out := []*RunSummary{}
	for i, d := range s.dbs {
		if only >= 0 && i != only {
			continue
		}
		list, err := s.listDB(i, d)
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, rs := range list {
			if status != "" && rs.Status != status {
				continue
			}
			if text != "" && !strings.Contains(strings.ToLower(rs.ID+" "+rs.Ensemble+" "+rs.Batch+" "+rs.Parent), text) {
				continue
			}
			out = append(out, rs)
		}
	}
	dbs := make([]string, len(s.dbs))
	for i, d := range s.dbs {
		dbs[i] = d.path
	}
	s.reply(w, map[string]any{"runs": out, "dbs": dbs})
}

func (s *Server) listDB(i int, d *database) ([]*RunSummary, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil, &httpError{http.StatusServiceUnavailable, "the server is stopping"}
	}
	runs, err := d.db.Runs()
	if err != nil {
		return nil, err
	}
	batches := map[string]bool{}
	if bs, err := d.db.Batches(); err == nil {
		for _, b := range bs {
			batches[b.ID] = true
		}
	}
	out := make([]*RunSummary, 0, len(runs))
	for _, info := range runs {
		rs, err := s.summary(i, d, info, batches)
		if err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
	return out, nil
}
