package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/state"
)

// RunInfo describes a run of a database (`ensemble state list`).
type RunInfo struct {
	ID               string    `json:"id"`
	Ensemble         string    `json:"ensemble"`
	Started          time.Time `json:"started_at"`
	Saved            time.Time `json:"saved_at"`
	Turns            int       `json:"turn_count"`
	CompletionReason string    `json:"completion_reason"`
	// Parent is the id of the run this one was forked from, at its turn
	// ParentTurn (DB.Fork); "" and 0 for a run that is no fork.
	Parent     string `json:"parent,omitempty"`
	ParentTurn int    `json:"parent_turn"`
	seq        int64
}

// MarshalJSON writes parent_turn beside parent only: a run that is no
// fork has neither.
func (r *RunInfo) MarshalJSON() ([]byte, error) {
	type plain RunInfo
	if r.Parent != "" {
		return json.Marshal((*plain)(r))
	}
	return json.Marshal(struct {
		*plain
		ParentTurn *int `json:"parent_turn,omitempty"`
	}{plain: (*plain)(r)})
}

// Resumable reports whether `ensemble resume` would continue the run: it is
// still going, was killed, timed out or was interrupted.
func (r *RunInfo) Resumable() bool {
	return (&state.File{CompletionReason: r.CompletionReason}).Resumable()
}

// Runs lists the runs of the database in the order they were created.
func (db *DB) Runs() ([]*RunInfo, error) { return db.runs("") }

// runs lists the runs the SQL condition where (on id, "?" its one
// argument) selects, or every run.
func (db *DB) runs(where string, args ...any) ([]*RunInfo, error) {
	if where != "" {
		where = "WHERE " + where
	}
	rows, err := db.query(`SELECT seq, id, ensemble, started_at,
		max(saved_at, coalesce((SELECT saved_at FROM turns WHERE `+turnsOf("seq")+` ORDER BY key DESC LIMIT 1), '')), completion_reason,
		coalesce((SELECT turn FROM turns WHERE `+turnsOf("seq")+` ORDER BY key DESC LIMIT 1), base), parent, parent_turn FROM runs `+where+` ORDER BY seq`, args...)
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	out := make([]*RunInfo, 0, len(rows))
	for _, row := range rows {
		var ref state.FileRef
		if err := unmarshal(row[2], &ref); err != nil {
			return nil, &Error{Path: db.path, Err: fmt.Errorf("run %s: %v", str(row[1]), err)}
		}
		ri := &RunInfo{seq: row[0].(int64), ID: str(row[1]), Ensemble: ref.Name, CompletionReason: str(row[5]), Turns: int(row[6].(int64)),
			Parent: str(row[7]), ParentTurn: int(row[8].(int64))}
		ri.Started, _ = time.Parse(time.RFC3339Nano, str(row[3]))
		ri.Saved, _ = time.Parse(time.RFC3339Nano, str(row[4]))
		out = append(out, ri)
	}
	return out, nil
}

// Run returns the run with the given id, or an error wrapping ErrNoRun.
// It reads that run only: a batch asks for each of its thousands.
func (db *DB) Run(id string) (*RunInfo, error) {
	runs, err := db.runs("id = ?", id)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, &Error{Path: db.path, Err: fmt.Errorf("%w %q in it", ErrNoRun, id)}
}

// Load reads the run: its state as of its last completed turn, with what
// resuming it needs, as a state file holds them. The state is checked as
// state.Load checks a state file.
func (db *DB) Load(r *RunInfo) (*state.File, error) {
	f, err := db.load(r, maxTurn)
	if err != nil {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("run %s: %w", r.ID, err)}
	}
	return f, nil
}

// LoadAt reads the run as Load does, but as of its turn `turn` (the turns
// after it left out, its warnings of those turns too), as a run forked
// from that turn starts (Fork): with no completion reason, and r as its
// parent. The turns it reads are committed: a process writing the run
// meanwhile changes none of them.
func (db *DB) LoadAt(r *RunInfo, turn int) (*state.File, error) {
	if err := db.checkFork(r, turn); err != nil {
		return nil, err
	}
	f, err := db.load(r, int64(turn))
	if err != nil {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("run %s: %w", r.ID, err)}
	}
	f.CompletionReason = ""
	f.Parent = &state.Parent{Run: r.ID, Turn: turn}
	return f, nil
}

// load reads the run r as of its turn upTo (maxTurn: its last).
func (db *DB) load(r *RunInfo, upTo int64) (*state.File, error) {
	rows, err := db.query(`SELECT ensemble, responses, profiles, options, saved_at, completion_reason, base, snapshot, parent, parent_turn, stopped FROM runs WHERE seq = ?`, r.seq)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: it was removed", ErrNoRun)
	}
	row := rows[0]
	f := &state.File{Format: state.FileFormat, Version: state.FileVersion, CompletionReason: str(row[5])}
	if err := unmarshal(row[0], &f.Ensemble); err != nil {
		return nil, fmt.Errorf("corrupt: ensemble: %v", err)
	}
	if row[1] != nil {
		f.Responses = &state.FileRef{}
		if err := unmarshal(row[1], f.Responses); err != nil {
			return nil, fmt.Errorf("corrupt: responses: %v", err)
		}
	}
	if row[2] != nil {
		if err := unmarshal(row[2], &f.Profiles); err != nil {
			return nil, fmt.Errorf("corrupt: profiles: %v", err)
		}
	}
	if err := unmarshal(row[3], &f.Options); err != nil {
		return nil, fmt.Errorf("corrupt: options: %v", err)
	}
	f.SavedAt, _ = time.Parse(time.RFC3339Nano, str(row[4]))
	if row[8] != nil {
		f.Parent = &state.Parent{Run: str(row[8]), Turn: int(row[9].(int64))}
	}
	if row[10] != nil && upTo == maxTurn { // a turn cut short comes after the last
		f.Stopped = &state.Stopped{}
		if err := unmarshal(row[10], f.Stopped); err != nil {
			return nil, fmt.Errorf("corrupt: stopped: %v", err)
		}
	}
	// The state is rebuilt as plain contents, the snapshot then every turn
	// after it, and restored at the end.
	var st state.Contents
	if err := unmarshal(row[7], &st); err != nil {
		return nil, fmt.Errorf("corrupt: the run's first state: %v", err)
	}
	if st.TurnCount != int(row[6].(int64)) {
		return nil, errors.New("corrupt: the run's first state is not of its first turn")
	}
	fillMaps(&st)

	turns, err := db.query(`SELECT turn, records, counts, context, edges, memory, pending FROM turns
		WHERE key BETWEEN ?1 << 32 AND (?1 << 32) + ?2 ORDER BY key`, r.seq, upTo)
	if err != nil {
		return nil, err
	}
	// Decoded a chunk at a time on every CPU (decoding the history's JSON
	// is most of what reading a long run back costs), applied in order.
	context := map[string]lastValue{}
	for start := 0; start < len(turns); start += decodeChunk {
		deltas, err := decodeTurns(turns[start:min(start+decodeChunk, len(turns))])
		if err != nil {
			return nil, fmt.Errorf("corrupt: %v", err)
		}
		for _, d := range deltas {
			if err := d.apply(&st, context); err != nil {
				return nil, fmt.Errorf("corrupt: turn %d: %v", d.turn, err)
			}
		}
	}
	if err := decodeContext(&st, context); err != nil {
		return nil, fmt.Errorf("corrupt: %v", err)
	}
	ws, err := db.query(`SELECT warning FROM warnings WHERE run = ? ORDER BY idx`, r.seq)
	if upTo < maxTurn {
		ws, err = db.query(`SELECT warning FROM warnings WHERE run = ? AND json_extract(warning, '$.turn_number') <= ? ORDER BY idx`, r.seq, upTo)
	}
	if err != nil {
		return nil, err
	}
	st.Warnings = st.Warnings[:0:0]
	for _, w := range ws {
		var sw state.Warning
		if err := unmarshal(w[0], &sw); err != nil {
			return nil, fmt.Errorf("corrupt: warning: %v", err)
		}
		st.Warnings = append(st.Warnings, sw)
	}
	if len(st.Warnings) == 0 {
		st.Warnings = nil
	}
	f.State = state.Restore(st)
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

func fillMaps(s *state.Contents) {
	if s.AgentExecutionCount == nil {
		s.AgentExecutionCount = map[string]int{}
	}
	if s.AccumulatedContext == nil {
		s.AccumulatedContext = map[string]any{}
	}
	if s.OutputCount == nil {
		s.OutputCount = map[string]int{}
	}
	if s.Edges == nil {
		s.Edges = map[string]map[string]*state.EdgeState{}
	}
	if s.Memory == nil {
		s.Memory = map[string]json.RawMessage{}
	}
}

func str(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	return ""
}

// turnDelta is a row of turns, decoded: what the turn changed.
type turnDelta struct {
	turn    int
	records []*state.Record
	counts  map[string][2]int
	context [][2]json.RawMessage // [key, value]: the key's JSON string decoded, the value's kept as it is
	edges   map[string]map[string]*state.EdgeState
	memory  map[string]json.RawMessage
	pending []state.AgentRequest
}

// decodeTurn decodes the row t of turns (turn, records, counts, context,
// edges, memory, pending). It reads no state: rows decode in any order.
func decodeTurn(t []any) (*turnDelta, error) {
	d := &turnDelta{turn: int(t[0].(int64))}
	if err := unmarshal(t[1], &d.records); err != nil {
		return nil, fmt.Errorf("records: %v", err)
	}
	for _, r := range d.records {
		if r == nil {
			return nil, errors.New("a history record is null")
		}
	}
	if err := unmarshal(t[2], &d.counts); err != nil {
		return nil, fmt.Errorf("counts: %v", err)
	}
	if t[3] != nil {
		if err := unmarshal(t[3], &d.context); err != nil {
			return nil, fmt.Errorf("context: %v", err)
		}
		for i, kv := range d.context {
			var key string
			if err := json.Unmarshal(kv[0], &key); err != nil {
				return nil, fmt.Errorf("context: %v", err)
			}
			d.context[i][0] = json.RawMessage(key)
		}
	}
	if t[4] != nil {
		if err := unmarshal(t[4], &d.edges); err != nil {
			return nil, fmt.Errorf("edges: %v", err)
		}
		for _, m := range d.edges {
			for dep, es := range m {
				if es == nil {
					delete(m, dep)
				}
			}
		}
	}
	if t[5] != nil {
		if err := unmarshal(t[5], &d.memory); err != nil {
			return nil, fmt.Errorf("memory: %v", err)
		}
	}
	if t[6] != nil {
		if err := unmarshal(t[6], &d.pending); err != nil {
			return nil, fmt.Errorf("pending: %v", err)
		}
	}
	return d, nil
}

// decodeChunk is how many rows of turns are decoded at once.
const decodeChunk = 1024

// decodeTurns decodes the rows of turns on every CPU, and lets go of the
// text of each row it decoded.
func decodeTurns(rows [][]any) ([]*turnDelta, error) {
	out := make([]*turnDelta, len(rows))
	errs := make([]error, len(rows))
	workers := min(runtime.GOMAXPROCS(0), (len(rows)+63)/64)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(rows); i += workers {
				if out[i], errs[i] = decodeTurn(rows[i]); errs[i] == nil {
					clear(rows[i][1:]) // the row's text can go: only its turn number is read again
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("turn %d: %v", rows[i][0].(int64), err)
		}
	}
	return out, nil
}

// lastValue is the last value a run's turns gave a context key, and the
// turn that gave it.
type lastValue struct {
	raw  json.RawMessage
	turn int
}

// decodeContext sets the context values of context in s.
func decodeContext(s *state.Contents, context map[string]lastValue) error {
	for k, last := range context {
		var v any
		if err := json.Unmarshal(last.raw, &v); err != nil {
			return fmt.Errorf("turn %d: context: %q: %v", last.turn, k, err)
		}
		s.AccumulatedContext[k] = v
	}
	return nil
}

// apply replays the turn d over s, but for the values it adds to the
// context, which go to context (by key: the last one is the one a state
// holds), to be decoded once all turns are applied (see decodeContext).
func (d *turnDelta) apply(s *state.Contents, context map[string]lastValue) error {
	if d.turn <= s.TurnCount {
		return fmt.Errorf("turn %d follows turn %d", d.turn, s.TurnCount)
	}
	s.History = append(s.History, d.records...)
	for a, c := range d.counts {
		if _, ok := s.AgentExecutionCount[a]; ok || c[0] != 0 {
			s.AgentExecutionCount[a] = c[0] // an agent only ever skipped has no entry
		}
		if _, ok := s.OutputCount[a]; ok || c[1] != 0 {
			s.OutputCount[a] = c[1] // an agent that never succeeded has no entry
		}
	}
	for _, kv := range d.context {
		context[string(kv[0])] = lastValue{kv[1], d.turn}
	}
	for target, m := range d.edges {
		s.Edges[target] = m
	}
	for a, m := range d.memory {
		s.Memory[a] = m
	}
	s.Pending = d.pending
	s.TurnCount = d.turn
	return nil
}

func unmarshal(v any, into any) error {
	switch b := v.(type) {
	case string:
		return json.Unmarshal([]byte(b), into)
	case []byte:
		return json.Unmarshal(b, into)
	case nil:
		return errors.New("missing")
	}
	return fmt.Errorf("not JSON text but %T", v)
}
