package inspector

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/llmtrace"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// RunSummary is a run as the runs list shows it.
type RunSummary struct {
	DB               int         `json:"db"`
	DBPath           string      `json:"db_path"`
	ID               string      `json:"id"`
	Ensemble         string      `json:"ensemble"`
	Started          time.Time   `json:"started_at"`
	Saved            time.Time   `json:"saved_at"`
	Turns            int         `json:"turns"`
	CompletionReason string      `json:"completion_reason"`
	Status           string      `json:"status"`
	Duration         float64     `json:"duration_seconds"`
	Usage            state.Usage `json:"usage"`
	Failures         int         `json:"failures"`
	// Partial: the usage and failures are those of the run's last turns,
	// the whole run being counted (a long run, opened a moment ago).
	Partial    bool   `json:"partial,omitempty"`
	Batch      string `json:"batch,omitempty"`
	Parent     string `json:"parent,omitempty"`
	ParentTurn int    `json:"parent_turn,omitempty"`
	// Job is what this server does with the run in the background, if
	// anything: "running", or the error that stopped it from running.
	Job string `json:"job,omitempty"`
}

// Statuses of a run (RunSummary.Status), beside the completion reasons
// (max_total_turns, timeout, cancelled, budget_exceeded, expectation_failed, strict_warning).
const (
	StatusRunning    = "running"    // a process writes it now
	StatusSuspended  = "suspended"  // awaiting_input: waits for a person
	StatusCompleted  = "completed"  // completed, and no agent's last execution failed
	StatusFailed     = "failed"     // completed, but an agent's last execution failed
	StatusUnfinished = "unfinished" // stopped before it ended (killed): resume goes on
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// reply writes v as JSON with every secret redacted.
func (s *Server) reply(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.mu.Lock()
	red := s.redact
	s.mu.Unlock()
	b = red.Bytes(b)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

// httpError is an error with its HTTP status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// fail answers with err as a JSON error: its own status for an
// *httpError, 404 for a run or an execution that is not there, 400 for a
// fork from a turn the run has not, else 500; every secret redacted.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var he *httpError
	var se statusError
	code, msg := http.StatusInternalServerError, err.Error()
	switch {
	case errors.As(err, &he):
		code, msg = he.code, he.msg
	case errors.As(err, &se):
		code = se.HTTPStatus()
	case errors.Is(err, store.ErrNoRun), errors.Is(err, store.ErrNoExecution):
		code = http.StatusNotFound
	case errors.As(err, new(*store.ForkError)):
		code = http.StatusBadRequest // a turn the run has not
	}
	writeError(w, code, s.redacted(msg))
}

// redacted is msg with every secret the server knows redacted: an error
// may quote what a run or an ensemble file holds.
func (s *Server) redacted(msg string) string {
	s.mu.Lock()
	red := s.redact
	s.mu.Unlock()
	return red.String(msg)
}

// dbOf is the database the request's db parameter names (an index into
// Options.DBs; 0 when absent).
func (s *Server) dbOf(r *http.Request) (int, *database, error) {
	v := r.URL.Query().Get("db")
	if v == "" {
		v = "0"
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= len(s.dbs) {
		return 0, nil, &httpError{http.StatusNotFound, "no database " + strconv.Quote(v) + ": db is an index from 0 to " + strconv.Itoa(len(s.dbs)-1)}
	}
	return i, s.dbs[i], nil
}

// runOf is the run the request's db and id parameters name.
func (s *Server) runOf(r *http.Request) (int, *database, *store.RunInfo, error) {
	i, d, err := s.dbOf(r)
	if err != nil {
		return 0, nil, nil, err
	}
	id := r.URL.Query().Get("id")
	if err := store.CheckID(id); err != nil {
		return 0, nil, nil, &httpError{http.StatusNotFound, "id: " + err.Error()}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return 0, nil, nil, &httpError{http.StatusServiceUnavailable, "the server is stopping"}
	}
	info, err := d.db.Run(id)
	if err != nil {
		return 0, nil, nil, err
	}
	return i, d, info, nil
}

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

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func key(db int, id string) string { return strconv.Itoa(db) + "/" + id }

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

// Execution is one execution in full: its record (with its kind's
// details), and the memory its agent kept after it (an LLM agent's
// conversation: the model messages and tool calls). For an agent of a
// child ensemble (an agent path with a "/"), Path, Turn and Count say
// where it is: its path, the run's turn of the execution that ran the
// child, and how many records the path has in that execution (a loop's
// iterations).
type Execution struct {
	Record *state.Record    `json:"record"`
	Memory *json.RawMessage `json:"memory,omitempty"`
	Path   string           `json:"path,omitempty"`
	Turn   int              `json:"turn,omitempty"`
	Count  int              `json:"count,omitempty"`
	// Slim: the record is of a loop's earlier iteration, which a run keeps
	// without its input, output and stderr.
	Slim bool `json:"slim,omitempty"`
	// Parent is the execution of the run's agent that ran the child.
	Parent *ExecutionRef `json:"parent,omitempty"`
	// Requests are an LLM execution's model requests, each with the whole
	// message list it sent, rebuilt from the record's model_requests and
	// the memories it refers to (docs/llm.md#what-is-recorded).
	Requests []llmtrace.Sent `json:"requests,omitempty"`
	// ChildBefore counts, by agent name, the records of the child ensemble
	// this execution ran (if it ran one) in the executions of Path before it
	// in the turn: the number of an execution of PATH/AGENT in this one is
	// ChildBefore[AGENT] plus its place among this one's.
	ChildBefore map[string]int `json:"child_before,omitempty"`
}

// apiExecution is GET /api/run/execution?db=N&id=ID&agent=NAME&n=K[&turn=T]:
// execution K of agent NAME (K 0: a skip, with turn); turn spares looking
// for its turn.
func (s *Server) apiExecution(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	agentName := q.Get("agent")
	n, err := strconv.Atoi(q.Get("n"))
	if agentName == "" || err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "agent and n: an agent's name and the number of its execution, from 1")
		return
	}
	turn := 0
	if v := q.Get("turn"); v != "" {
		if turn, err = strconv.Atoi(v); err != nil {
			writeError(w, http.StatusBadRequest, "turn: a turn number")
			return
		}
	}
	if strings.Contains(agentName, "/") {
		ex, err := s.childExecution(i, d, info, agentName, n, turn)
		if err != nil {
			s.fail(w, err)
			return
		}
		s.reply(w, ex)
		return
	}
	d.mu.Lock()
	if turn == 0 && d.db != nil {
		// Its turn from the run's totals (counted when the run was shown),
		// so that one row is read, not every turn of the run ("Compare
		// with"); a run being counted still is searched.
		if t, _, err := s.tally(i, d, info); err == nil {
			turn = t.Agents[agentName].TurnOf(n)
		}
	}
	rec, err := d.db.Execution(info, agentName, n, turn)
	var mem json.RawMessage
	var sent []llmtrace.Sent
	if err == nil {
		mem, _ = d.db.MemoryAt(info, rec.TurnNumber, agentName)
		sent = requestsSent(d.db, info, rec, mem)
	}
	d.mu.Unlock()
	if err != nil {
		s.fail(w, err)
		return
	}
	ex := &Execution{Record: rec, Requests: sent}
	if len(mem) > 0 {
		ex.Memory = &mem
	}
	s.reply(w, ex)
}

// childExecution is record n (from 1) of path, an agent of a child
// ensemble (`review/critic`, `analyst[1]/think`), in the execution of turn
// that ran it (0: the last execution of the path's first agent).
func (s *Server) childExecution(i int, d *database, info *store.RunInfo, path string, n, turn int) (*Execution, error) {
	top, _, _ := strings.Cut(path, "/")
	if n < 1 {
		return nil, &httpError{http.StatusBadRequest, "n: the number of an execution of " + path + " within the execution that ran it, from 1"}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil, &httpError{http.StatusServiceUnavailable, "the server is stopping"}
	}
	turns := map[int][]*state.Record{}
	var recs []*state.Record
	if turn > 0 {
		var err error
		if recs, err = turnRecords(d.db, info, turn, turns); err != nil {
			return nil, err
		}
	} else {
		t, _, err := s.tally(i, d, info)
		if err != nil {
			return nil, err
		}
		rec, err := lastExecution(d.db, info, top, t.Agents[top], turns)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			recs, turn = []*state.Record{rec}, rec.TurnNumber
		}
	}
	var tops []*state.Record
	for _, r := range recs {
		if r != nil && r.AgentName == top && !r.Skipped {
			tops = append(tops, r)
		}
	}
	found := exactPathRecords(tops, path)
	if n > len(found) {
		return nil, fmt.Errorf("%w: %s#%d in turn %d of run %s (%d there)", store.ErrNoExecution, path, n, turn, info.ID, len(found))
	}
	rec := found[n-1]
	// An execution's record holds the request it was given; a slim one
	// holds none.
	slim := rec.InputData == nil && !rec.Skipped
	var parent *ExecutionRef
	for _, r := range tops {
		if len(agentpath.PathRecords([]*state.Record{r}, path)) > 0 {
			parent = &ExecutionRef{Agent: r.AgentName, N: r.Execution, Turn: r.TurnNumber}
			break
		}
	}
	ex := &Execution{Record: rec, Path: path, Turn: turn, Count: len(found), Slim: slim, Parent: parent,
		Requests: requestsSent(nil, info, rec, nil)}
	if rec.Child() != nil {
		for _, r := range found[:n-1] {
			c := r.Child()
			if c == nil {
				continue
			}
			for _, run := range c.Runs() {
				for _, cr := range run.ConversationHistory {
					if cr == nil {
						continue
					}
					if ex.ChildBefore == nil {
						ex.ChildBefore = map[string]int{}
					}
					ex.ChildBefore[cr.AgentName]++
				}
			}
		}
	}
	return ex, nil
}

// answerBody is the body of POST /api/run/answer.
type answerBody struct {
	Answers map[string]string `json:"answers"`
	// Turns is the run's turn count the answers were given for (its
	// questions are those of that turn); absent: the run's as it is.
	Turns *int `json:"turns"`
}

// apiAnswer is POST /api/run/answer?db=N&id=ID {"answers": {AGENT: TEXT},
// "turns": T}: the run goes on with the answers, in the background; with
// turns, only if it is still at that turn.
func (s *Server) apiAnswer(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var body answerBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "the body: {\"answers\": {\"AGENT\": \"TEXT\"}}: "+err.Error())
		return
	}
	if len(body.Answers) == 0 {
		writeError(w, http.StatusBadRequest, "no answer given")
		return
	}
	if err := s.resume(i, d.path, info.ID, body.Answers, body.Turns); err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, map[string]any{"db": i, "id": info.ID, "status": StatusRunning})
}

// forkBody is the body of POST /api/run/fork.
type forkBody struct {
	Turn *int `json:"turn"`
}

// apiFork is POST /api/run/fork?db=N&id=ID {"turn": N}: a new run whose
// first N turns are the run's, which goes on in the background.
func (s *Server) apiFork(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var body forkBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || body.Turn == nil {
		writeError(w, http.StatusBadRequest, "the body: {\"turn\": N}")
		return
	}
	turn := *body.Turn
	if turn < 0 || turn > info.Turns {
		writeError(w, http.StatusBadRequest, "turn: from 0 to the run's "+strconv.Itoa(info.Turns))
		return
	}
	id, err := s.fork(i, d.path, info.ID, turn)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, map[string]any{"db": i, "id": id, "status": StatusRunning})
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// requestsSent rebuilds the model requests of an LLM execution rec: the
// memory it sent is the one its reference names (read from the turn of
// the execution that left it: one row), the messages it added are in the
// memory it left (after).
func requestsSent(db *store.DB, info *store.RunInfo, rec *state.Record, after json.RawMessage) []llmtrace.Sent {
	var tr llmtrace.Trace
	if ok, err := rec.Details.Decode(llmtrace.Detail, &tr); !ok || err != nil || len(tr.Requests) == 0 {
		return nil
	}
	var memSent []json.RawMessage
	n := 0
	if m := tr.Memory; m != nil {
		n = m.Messages
		if db != nil {
			if prev, err := db.MemoryAt(info, m.Turn, rec.AgentName); err == nil {
				memSent = llmtrace.Messages(prev)
			}
		}
	}
	if msgs := llmtrace.Messages(after); len(msgs) > 0 {
		return llmtrace.RebuildCapped(&tr, llmtrace.Conversation(memSent, msgs, n), maxRequestsBytes)
	}
	// No memory after it at hand (an agent of a child ensemble): the
	// messages it added are in its record.
	return llmtrace.RebuildCapped(&tr, llmtrace.WithAdded(memSent, n, rec.InputData), maxRequestsBytes)
}

// maxRequestsBytes bounds the message lists of one execution's requests
// in a reply: each request repeats the conversation so far, and a long
// memory sent by a long tool loop would make the reply its square.
const maxRequestsBytes = 32 << 20
