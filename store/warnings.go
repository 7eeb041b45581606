package store

import (
	"fmt"

	"github.com/ensemble-run/ensemble/state"
)

// Warnings are the first limit warnings of run r, in the order they were
// recorded, and how many it has in all: what a page shows of them costs
// limit rows, however many the run has.
func (db *DB) Warnings(r *RunInfo, limit int) ([]state.Warning, int, error) {
	n, err := db.query(`SELECT count(*) FROM warnings WHERE run = ?`, r.seq)
	if err != nil {
		return nil, 0, err
	}
	total := 0
	if len(n) == 1 {
		if c, ok := n[0][0].(int64); ok {
			total = int(c)
		}
	}
	if total == 0 {
		return nil, 0, nil
	}
	rows, err := db.query(`SELECT warning FROM warnings WHERE run = ? ORDER BY idx LIMIT ?`, r.seq, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]state.Warning, 0, len(rows))
	for _, w := range rows {
		var sw state.Warning
		if err := unmarshal(w[0], &sw); err != nil {
			return nil, 0, fmt.Errorf("corrupt: warning: %v", err)
		}
		out = append(out, sw)
	}
	return out, total, nil
}
