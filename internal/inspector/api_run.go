package inspector

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// The API's view of one run (/api/runs/{id}) and its pages of turns.

// RunView is a run as its page's first screen shows it: what it is, its
// graph and what each agent did, and what it waits for.
type RunView struct {
	Run   *RunSummary                  `json:"run"`
	Head  *store.Head                  `json:"head"`
	Graph *Graph                       `json:"graph"`
	Tally map[string]*store.AgentTally `json:"agents"`
	// Questions are what a suspended run waits for: an answer each.
	Questions []engine.PendingInput `json:"questions,omitempty"`
	// QuestionsError says why a suspended run's questions could not be
	// read (its ensemble file changed or went away).
	QuestionsError string `json:"questions_error,omitempty"`
	// JobError is the error that stopped the run this server went on with
	// in the background (after an answer or a fork), if it failed.
	JobError string `json:"job_error,omitempty"`
	// Warnings are the run's first warnings (shownWarnings), reads of
	// missing keys among them (docs/semantics.md#reads-of-missing-keys),
	// and WarningsCount how many it has in all.
	Warnings      []state.Warning `json:"warnings,omitempty"`
	WarningsCount int             `json:"warnings_count,omitempty"`
}

// shownWarnings is how many warnings a run's first screen lists.
const shownWarnings = 100

// apiRun is GET /api/run?db=N&id=ID: a run's first screen. It reads the
// run's head and totals, not its turns (but those added since the totals
// were counted): its cost does not grow with the run, but for a suspended
// run, whose questions need its state.
func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	v, err := s.runView(i, d, info)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, v)
}

func (s *Server) runView(i int, d *database, info *store.RunInfo) (*RunView, error) {
	d.mu.Lock()
	batches := map[string]bool{}
	if bs, err := d.db.Batches(); err == nil {
		for _, b := range bs {
			batches[b.ID] = true
		}
	}
	rs, err := s.summary(i, d, info, batches)
	var head *store.Head
	if err == nil {
		head, err = d.db.Head(info)
	}
	t, _, _ := s.tally(i, d, info)
	var warnings []state.Warning
	var nWarnings int
	if err == nil {
		warnings, nWarnings, err = d.db.Warnings(info, shownWarnings)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for k := range warnings {
		warnings[k].Message = s.redacted(warnings[k].Message)
		warnings[k].Expression = s.redacted(warnings[k].Expression)
	}
	v := &RunView{Run: rs, Head: head, Tally: t.Agents, Warnings: warnings, WarningsCount: nWarnings}
	if e, ok := strings.CutPrefix(rs.Job, "error: "); ok {
		v.JobError = e
	}
	e, gerr := s.ensembleOf(head)
	v.Graph = graphOf(e, gerr, head, t.Agents)
	if last, err := s.lastOfParents(d, info, v.Graph, t.Agents); err != nil {
		return nil, err
	} else if len(last) > 0 {
		fillChildren(v.Graph, last)
	}
	if rs.Status == StatusSuspended && rs.Job == "" || info.CompletionReason == engine.AwaitingInput && rs.Status != StatusRunning {
		if e == nil {
			v.QuestionsError = "the questions cannot be read: " + gerr.Error()
		} else {
			sf, _, err := durable.Load(d.path, info.ID)
			if err != nil {
				v.QuestionsError = err.Error()
			} else {
				v.Questions = durable.Pending(e, sf)
				if v.Questions == nil {
					v.QuestionsError = "the run's state does not fit its ensemble file as it is now"
				}
				for _, q := range v.Questions {
					for _, n := range v.Graph.Agents {
						if n.Name == q.Agent {
							n.Status = "waiting"
						}
					}
				}
			}
		}
	}
	return v, nil
}

// lastOfParents are the records of the last execution of each agent of g
// that runs a child ensemble, and of each of its instances, by the agent's
// name: a turn read for each.
func (s *Server) lastOfParents(d *database, info *store.RunInfo, g *Graph, tally map[string]*store.AgentTally) (map[string][]*state.Record, error) {
	out := map[string][]*state.Record{}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil, &httpError{http.StatusServiceUnavailable, "the server is stopping"}
	}
	turns := map[int][]*state.Record{}
	for _, n := range g.Agents {
		if len(n.Children) == 0 {
			continue
		}
		for _, name := range append([]string{n.Name}, n.Instances...) {
			rec, err := lastExecution(d.db, info, name, tally[name], turns)
			if err != nil {
				return nil, err
			}
			if rec != nil {
				out[n.Name] = append(out[n.Name], rec)
			}
		}
	}
	return out, nil
}

// lastExecution is the record of the last execution (not a skip) of agent
// name, whose totals are t (nil when it never ran); turns caches the
// turns read. d is held.
func lastExecution(db *store.DB, info *store.RunInfo, name string, t *store.AgentTally, turns map[int][]*state.Record) (*state.Record, error) {
	if t == nil || t.Executions == 0 {
		return nil, nil
	}
	if t.Last == "skipped" {
		// Its last record is a skip: the execution before is looked for.
		rec, err := db.Execution(info, name, t.Executions, 0)
		if errors.Is(err, store.ErrNoExecution) {
			return nil, nil
		}
		return rec, err
	}
	recs, err := turnRecords(db, info, t.LastTurn, turns)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r != nil && r.AgentName == name && !r.Skipped {
			return r, nil
		}
	}
	return nil, nil
}

// turnRecords are the records of turn of run info, read once into turns.
func turnRecords(db *store.DB, info *store.RunInfo, turn int, turns map[int][]*state.Record) ([]*state.Record, error) {
	if recs, ok := turns[turn]; ok {
		return recs, nil
	}
	page, err := db.Turns(info, turn-1, 1)
	if err != nil {
		return nil, err
	}
	var recs []*state.Record
	if len(page) == 1 && page[0].Turn == turn {
		recs = page[0].Records
	}
	turns[turn] = recs
	return recs, nil
}

// TurnPage is a page of a run's turns.
type TurnPage struct {
	Turns []store.Turn `json:"turns"`
	// Last is the run's last turn: there are more after the page while
	// its last turn is below it.
	Last int `json:"last"`
}

// maxPage is the most turns a page holds.
const maxPage = 500

// apiTurns is GET /api/run/turns?db=N&id=ID&after=T&limit=L: at most L
// turns (default 50, at most 500) after turn T (default 0); after=-1 is the
// last page.
func (s *Server) apiTurns(w http.ResponseWriter, r *http.Request) {
	_, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	after, limit := 0, 50
	if v := q.Get("after"); v != "" {
		if after, err = strconv.Atoi(v); err != nil || after < -1 {
			writeError(w, http.StatusBadRequest, "after: a turn number, or -1 for the last page")
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			writeError(w, http.StatusBadRequest, "limit: a positive number of turns")
			return
		}
	}
	limit = min(limit, maxPage)
	if after == -1 {
		after = max(0, info.Turns-limit)
	}
	d.mu.Lock()
	turns, err := d.db.Turns(info, after, limit)
	d.mu.Unlock()
	if err != nil {
		s.fail(w, err)
		return
	}
	if turns == nil {
		turns = []store.Turn{}
	}
	s.reply(w, &TurnPage{Turns: turns, Last: info.Turns})
}
