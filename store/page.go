package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/state"
)

// What an inspector (`ensemble ui`) reads of a run without replaying it:
// its head (Head), a page of its turns (Turns), one execution (Execution),
// the totals of its records (Tally), and whether a process writes it now
// (Writing). Each reads the rows it needs, not the whole run: the cost of a
// page does not grow with the run (docs/performance.md#the-inspector).

// Head is a run's row and what its last turn left pending: what the first
// screen of a run shows.
type Head struct {
	Ensemble         state.FileRef        `json:"ensemble"`
	Responses        *state.FileRef       `json:"responses,omitempty"`
	Profiles         []string             `json:"profiles,omitempty"`
	Options          state.Options        `json:"options"`
	Input            string               `json:"input"`
	Base             int                  `json:"base"` // the turns of the run's first state (copied by a fork)
	Pending          []state.AgentRequest `json:"pending_requests,omitempty"`
	CompletionReason string               `json:"completion_reason"`
	// Stopped is what the run reported of the turn it cut short when it
	// ended (a budget, a timeout): that turn's errors, which no saved turn
	// holds.
	Stopped *state.Stopped `json:"stopped,omitempty"`
}

// Head reads the head of r: its row, the input of its first state (read in
// SQL: the state is not decoded) and the pending requests of its last turn.
func (db *DB) Head(r *RunInfo) (*Head, error) {
	rows, err := db.query(`SELECT ensemble, responses, profiles, options, completion_reason, base,
		coalesce(json_extract(snapshot, '$.input'), ''),
		coalesce((SELECT coalesce(pending, 'null') FROM turns WHERE `+turnsOf("seq")+` ORDER BY key DESC LIMIT 1), json_extract(snapshot, '$.pending_requests')),
		stopped
		FROM runs WHERE seq = ?`, r.seq)
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	if len(rows) == 0 {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("%w %q in it: it was removed", ErrNoRun, r.ID)}
	}
	row := rows[0]
	h := &Head{CompletionReason: str(row[4]), Base: int(row[5].(int64)), Input: str(row[6])}
	bad := func(what string, err error) (*Head, error) {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("run %s: corrupt: %s: %v", r.ID, what, err)}
	}
	if err := unmarshal(row[0], &h.Ensemble); err != nil {
		return bad("ensemble", err)
	}
	if row[1] != nil {
		h.Responses = &state.FileRef{}
		if err := unmarshal(row[1], h.Responses); err != nil {
			return bad("responses", err)
		}
	}
	if row[2] != nil {
		if err := unmarshal(row[2], &h.Profiles); err != nil {
			return bad("profiles", err)
		}
	}
	if err := unmarshal(row[3], &h.Options); err != nil {
		return bad("options", err)
	}
	if row[7] != nil {
		if err := unmarshal(row[7], &h.Pending); err != nil {
			return bad("pending", err)
		}
	}
	if row[8] != nil {
		if err := unmarshal(row[8], &h.Stopped); err != nil {
			return bad("stopped", err)
		}
	}
	return h, nil
}

// Turn is one completed turn of a run: its records, and when it was saved
// (zero for the turns of the run's first state, which a fork copied).
type Turn struct {
	Turn    int             `json:"turn"`
	Records []*state.Record `json:"records"`
	Saved   time.Time       `json:"saved_at,omitzero"`
}

// Turns reads at most limit turns of r after turn after, in order. The
// turns of the run's first state (a fork's copied turns) are read from it;
// every later turn is a row.
func (db *DB) Turns(r *RunInfo, after, limit int) ([]Turn, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []Turn
	base, err := db.base(r)
	if err != nil {
		return nil, err
	}
	if after < base {
		hist, err := db.firstHistory(r)
		if err != nil {
			return nil, err
		}
		for _, rec := range hist {
			if rec.TurnNumber <= after || rec.TurnNumber > base {
				continue
			}
			if n := len(out); n > 0 && out[n-1].Turn == rec.TurnNumber {
				out[n-1].Records = append(out[n-1].Records, rec)
				continue
			}
			if len(out) == limit {
				break
			}
			out = append(out, Turn{Turn: rec.TurnNumber, Records: []*state.Record{rec}})
		}
		if len(out) == limit {
			return out, nil
		}
		after = base
	}
	rows, err := db.query(`SELECT turn, records, saved_at FROM turns WHERE key > (?1 << 32) + ?2 AND key <= (?1 << 32) + 4294967295 ORDER BY key LIMIT ?3`,
		r.seq, after, limit-len(out))
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	for _, row := range rows {
		t := Turn{Turn: int(row[0].(int64))}
		if err := unmarshal(row[1], &t.Records); err != nil {
			return nil, &Error{Path: db.path, Err: fmt.Errorf("run %s: corrupt: turn %d: records: %v", r.ID, t.Turn, err)}
		}
		t.Saved, _ = time.Parse(time.RFC3339Nano, str(row[2]))
		out = append(out, t)
	}
	return out, nil
}

// base is the turn count of r's first state.
func (db *DB) base(r *RunInfo) (int, error) {
	rows, err := db.query(`SELECT base FROM runs WHERE seq = ?`, r.seq)
	if err != nil {
		return 0, &Error{Path: db.path, Err: err}
	}
	if len(rows) == 0 {
		return 0, &Error{Path: db.path, Err: fmt.Errorf("%w %q in it: it was removed", ErrNoRun, r.ID)}
	}
	return int(rows[0][0].(int64)), nil
}

// firstHistory is the history of r's first state (read in SQL: the rest of
// the state is not decoded).
func (db *DB) firstHistory(r *RunInfo) ([]*state.Record, error) {
	rows, err := db.query(`SELECT coalesce(json_extract(snapshot, '$.conversation_history'), '[]') FROM runs WHERE seq = ?`, r.seq)
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	if len(rows) == 0 {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("%w %q in it: it was removed", ErrNoRun, r.ID)}
	}
	var hist []*state.Record
	if err := unmarshal(rows[0][0], &hist); err != nil {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("run %s: corrupt: the run's first state: %v", r.ID, err)}
	}
	return hist, nil
}

// ErrNoExecution is the error of Execution for an execution the run does
// not hold.
var ErrNoExecution = errors.New("no such execution")

// Execution reads the record of execution n of agent (its name in the
// history: `of[i]` for a fan-out instance; n 0 for a skip) in r; turn, when
// above 0, is the turn it is in, which spares looking for it.
func (db *DB) Execution(r *RunInfo, agent string, n, turn int) (*state.Record, error) {
	if turn > maxTurn {
		// A turn past the 32 bits of a key would be another run's.
		return nil, fmt.Errorf("%w: %s#%d in turn %d of run %s", ErrNoExecution, agent, n, turn, r.ID)
	}
	name, _ := json.Marshal(agent)
	needle := `"agent_name":` + string(name) + `,`
	var rows [][]any
	var err error
	if turn > 0 {
		rows, err = db.query(`SELECT turn, records FROM turns WHERE key = (?1 << 32) + ?2`, r.seq, turn)
	} else {
		rows, err = db.query(`SELECT turn, records FROM turns WHERE `+turnsOf("?1")+` AND instr(records, ?2) > 0 ORDER BY key`, r.seq, needle)
	}
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	for _, row := range rows {
		var recs []*state.Record
		if err := unmarshal(row[1], &recs); err != nil {
			return nil, &Error{Path: db.path, Err: fmt.Errorf("run %s: corrupt: turn %d: records: %v", r.ID, row[0].(int64), err)}
		}
		for _, rec := range recs {
			if rec != nil && rec.AgentName == agent && rec.Execution == n {
				return rec, nil
			}
		}
	}
	hist, err := db.firstHistory(r)
	if err != nil {
		return nil, err
	}
	for _, rec := range hist {
		if rec != nil && rec.AgentName == agent && rec.Execution == n && (turn <= 0 || rec.TurnNumber == turn) {
			return rec, nil
		}
	}
	return nil, fmt.Errorf("%w: %s#%d in run %s", ErrNoExecution, agent, n, r.ID)
}

// Tally is what the records of a run's turns add up to, per agent.
type Tally struct {
	// Turn is the last turn counted.
	Turn   int                    `json:"turn"`
	Usage  state.Usage            `json:"usage"`
	Agents map[string]*AgentTally `json:"agents"`
}

// AgentTally is what one agent's records add up to.
type AgentTally struct {
	Executions int         `json:"executions"`
	Failures   int         `json:"failures"`
	Skips      int         `json:"skips"`
	Usage      state.Usage `json:"usage"`
	// Seconds is the time its executions took, added up.
	Seconds float64 `json:"execution_seconds"`
	// Last is how its last record ended: ok, failed or skipped.
	Last string `json:"last"`
	// LastTurn is the turn of its last record.
	LastTurn int `json:"last_turn"`
	// execs and turns are the executions counted, in order, and the turn
	// of each: the index TurnOf reads.
	execs, turns []int
}

// TurnOf is the turn of the agent's execution n, when the tally counted
// it; 0 otherwise (a tally of a run's last turns only). With it, finding
// an execution reads one row (DB.Execution with its turn), not the run.
func (a *AgentTally) TurnOf(n int) int {
	if a == nil {
		return 0
	}
	i, ok := slices.BinarySearch(a.execs, n)
	if !ok {
		return 0
	}
	return a.turns[i]
}

// TallyTurns adds to t the records of r's turns after t.Turn (a new Tally
// counts the whole run, and then only what was added since). Only a few
// fields of each record are decoded.
func (db *DB) TallyTurns(r *RunInfo, t *Tally) error {
	if t.Agents == nil {
		t.Agents = map[string]*AgentTally{}
	}
	owned := map[*AgentTally]bool{}
	add := func(turn int, agent string, execution int, failed, skipped bool, u state.Usage, secs float64) {
		a := t.Agents[agent]
		if a == nil {
			a = &AgentTally{}
			t.Agents[agent] = a
		}
		if !skipped && execution > 0 && (len(a.execs) == 0 || a.execs[len(a.execs)-1] < execution) {
			if !owned[a] {
				// A copy of a tally shares its index: appending reallocates.
				owned[a] = true
				a.execs, a.turns = slices.Clip(a.execs), slices.Clip(a.turns)
			}
			a.execs, a.turns = append(a.execs, execution), append(a.turns, turn)
		}
		switch {
		case skipped:
			a.Skips++
			a.Last = "skipped"
		case failed:
			a.Executions++
			a.Failures++
			a.Last = "failed"
		default:
			a.Executions++
			a.Last = "ok"
		}
		a.LastTurn = turn
		a.Seconds += secs
		a.Usage.Add(&u)
		t.Usage.Add(&u)
	}
	base, err := db.base(r)
	if err != nil {
		return err
	}
	if t.Turn < base {
		hist, err := db.firstHistory(r)
		if err != nil {
			return err
		}
		for _, rec := range hist {
			if rec == nil || rec.TurnNumber <= t.Turn || rec.TurnNumber > base {
				continue
			}
			var u state.Usage
			if rec.Usage != nil {
				u = *rec.Usage
			}
			add(rec.TurnNumber, rec.AgentName, rec.Execution, rec.Error != nil, rec.Skipped, u, rec.ExecutionTime)
		}
		t.Turn = base
	}
	rows, err := db.query(`SELECT turn, records FROM turns WHERE key > (?1 << 32) + ?2 AND key <= (?1 << 32) + 4294967295 ORDER BY key`, r.seq, t.Turn)
	if err != nil {
		return &Error{Path: db.path, Err: err}
	}
	// Decoded on every CPU, a few fields of each record (decoding is most
	// of the cost), added in order.
	recs := make([][]tallyRecord, len(rows))
	errs := make([]error, len(rows))
	workers := min(runtime.GOMAXPROCS(0), (len(rows)+63)/64)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(rows); i += workers {
				errs[i] = unmarshal(rows[i][1], &recs[i])
				rows[i][1] = nil
			}
		})
	}
	wg.Wait()
	for i, row := range rows {
		turn := int(row[0].(int64))
		if errs[i] != nil {
			return &Error{Path: db.path, Err: fmt.Errorf("run %s: corrupt: turn %d: records: %v", r.ID, turn, errs[i])}
		}
		for _, rec := range recs[i] {
			var u state.Usage
			if rec.Usage != nil {
				u = *rec.Usage
			}
			add(turn, rec.AgentName, rec.Execution, rec.Error != nil, rec.Skipped, u, rec.Time)
		}
		t.Turn = max(t.Turn, turn)
	}
	return nil
}

// tallyRecord is what Tally reads of a record.
type tallyRecord struct {
	AgentName string       `json:"agent_name"`
	Execution int          `json:"execution"`
	Error     *string      `json:"error"`
	Skipped   bool         `json:"skipped"`
	Usage     *state.Usage `json:"usage"`
	Time      float64      `json:"execution_time"`
}

// Writing reports whether another process (or another open database of
// this one) writes r now: it holds the run's lock. The lock is taken and
// let go at once when it is free.
func (db *DB) Writing(r *RunInfo) bool {
	err := lockRange(db.lock, lockOffset(r.seq))
	if err == nil {
		db.Unlock(r)
		return false
	}
	return errors.Is(err, ErrLocked)
}

// MemoryAt is the memory agent's runner kept after turn (an LLM agent's
// conversation), when that turn changed it; nil otherwise.
func (db *DB) MemoryAt(r *RunInfo, turn int, agent string) (json.RawMessage, error) {
	if turn < 1 || turn > maxTurn {
		return nil, nil // no turn of r: a key out of its range would be another run's
	}
	rows, err := db.query(`SELECT json_quote(json_each.value) FROM turns, json_each(turns.memory) WHERE turns.key = (?1 << 32) + ?2 AND json_each.key = ?3`, r.seq, turn, agent)
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	if len(rows) == 0 || rows[0][0] == nil {
		return nil, nil
	}
	switch v := rows[0][0].(type) {
	case string:
		return json.RawMessage(v), nil
	case []byte:
		return json.RawMessage(v), nil
	}
	b, err := json.Marshal(rows[0][0])
	return b, err
}
