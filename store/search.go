package store

import (
	"encoding/json"
	"fmt"
)

// SearchRow is a turn whose records or memory hold a text: what the
// inspector's search decodes and looks into.
type SearchRow struct {
	Turn    int
	Records json.RawMessage
	// Memory is the JSON {agent: memory} of the agents whose memory the
	// turn changed; nil when none did.
	Memory json.RawMessage
}

// SearchTurns reads at most limit turns of r after turn after (the turns
// of its first state excepted: Turns reads those) whose records or memory
// hold lower, in ASCII lower case, as their stored JSON does ("" takes
// every turn). It also returns the last turn it looked at: the next call
// goes on after it. Only the turns that hold it are decoded; the rest are
// looked into by SQLite.
func (db *DB) SearchTurns(r *RunInfo, lower string, after, limit int) (rows []SearchRow, last int, err error) {
	if limit <= 0 {
		return nil, after, nil
	}
	// A window of turns at a time, so that one call returns soon even
	// when few turns hold the text.
	const window = 2000
	last = min(after+window, maxTurn)
	got, err := db.query(`SELECT turn, records, memory FROM turns WHERE key > (?1 << 32) + ?2 AND key <= (?1 << 32) + ?3
		AND (?4 = '' OR instr(lower(records), ?4) > 0 OR instr(lower(coalesce(memory, '')), ?4) > 0) ORDER BY key LIMIT ?5`,
		r.seq, after, last, lower, limit)
	if err != nil {
		return nil, after, &Error{Path: db.path, Err: fmt.Errorf("run %s: searching its turns: %v", r.ID, err)}
	}
	for _, row := range got {
		sr := SearchRow{Turn: int(row[0].(int64)), Records: rawOf(row[1]), Memory: rawOf(row[2])}
		rows = append(rows, sr)
	}
	if len(rows) == limit {
		last = rows[len(rows)-1].Turn
	}
	return rows, last, nil
}

// rawOf is a TEXT column's value as JSON (nil for NULL).
func rawOf(v any) json.RawMessage {
	switch v := v.(type) {
	case string:
		return json.RawMessage(v)
	case []byte:
		return json.RawMessage(v)
	}
	return nil
}
