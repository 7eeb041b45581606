package inspector

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

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

// dbAndID are the database (db=N) and the id (id=ID: a run's, a test
// run's or a verdict's) a request names; an id that cannot be one is 404.
func (s *Server) dbAndID(r *http.Request) (int, *database, string, error) {
	i, d, err := s.dbOf(r)
	if err != nil {
		return 0, nil, "", err
	}
	id := r.URL.Query().Get("id")
	if err := store.CheckID(id); err != nil {
		return 0, nil, "", &httpError{http.StatusNotFound, "id: " + err.Error()}
	}
	return i, d, id, nil
}

// runOf is the run the request's db and id parameters name.
func (s *Server) runOf(r *http.Request) (int, *database, *store.RunInfo, error) {
	i, d, id, err := s.dbAndID(r)
	if err != nil {
		return 0, nil, nil, err
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

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func key(db int, id string) string { return strconv.Itoa(db) + "/" + id }

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
