package store

import (
	"errors"
	"fmt"
	"time"
)

// Judge verdicts (docs/testing.md#judge-review): what each judge step of a
// saved scenario run said (the step, the judge's rubric, the agent judged,
// the score and whether it passed, the judge's reason), kept with the
// result of its scenario run, and the label a person gave it in the
// inspector: pass or fail, the truth `test calibrate` holds the judge to.
//
// The table is made the first time a verdict is saved, so test runs
// without judges, and databases without test runs, are as they were.
const verdictSchema = `
CREATE TABLE IF NOT EXISTS test_verdicts (
	id         TEXT PRIMARY KEY,        -- TEST.rR.jN: the test run, its result (from 1), the judge step (from 1)
	test_run   INTEGER NOT NULL,
	result     INTEGER NOT NULL,        -- the idx of its result in test_results
	n          INTEGER NOT NULL,        -- the judge step's place among the result's, from 1
	judge      TEXT NOT NULL,
	agent      TEXT NOT NULL,
	step       TEXT NOT NULL,           -- the step's text, without its keyword
	rubric     TEXT NOT NULL,
	score      REAL NOT NULL,
	threshold  TEXT NOT NULL,           -- the score the step asks for at least
	scale      TEXT NOT NULL DEFAULT '',-- "1 to 5", when the step gives one
	passed     INTEGER NOT NULL,        -- 1: the judge passed the output
	reason     TEXT NOT NULL DEFAULT '',
	label      TEXT NOT NULL DEFAULT '',-- '' unlabelled, pass, fail: a person's
	labelled_at TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS test_verdicts_run ON test_verdicts (test_run, result, n);
`

// Labels of a verdict: what a person says the judged output deserved.
const (
	LabelPass = "pass"
	LabelFail = "fail"
)

// ErrNoVerdict is wrapped by the error for a verdict id the database does
// not hold.
var ErrNoVerdict = errors.New("no judge verdict")

// Verdict is what a judge step said of an agent's output in a scenario
// run, and the label a person gave it.
type Verdict struct {
	ID string `json:"id"`
	// Result is the index of its scenario run among the test run's
	// results, from 0 (TestResults' order).
	Result    int       `json:"result"`
	Judge     string    `json:"judge"`
	Agent     string    `json:"agent"`
	Step      string    `json:"step"`
	Rubric    string    `json:"rubric"`
	Score     float64   `json:"score"`
	Threshold string    `json:"threshold"`
	Scale     string    `json:"scale,omitempty"`
	Passed    bool      `json:"passed"`
	Reason    string    `json:"reason,omitempty"`
	Label     string    `json:"label,omitempty"`
	Labelled  time.Time `json:"labelled_at,omitzero"`
	TestRun   string    `json:"test_run,omitempty"` // set by AllVerdicts
}

// maxVerdictText caps the step, rubric and reason a verdict keeps.
const maxVerdictText = 16 << 10

func capText(s string) string {
	if len(s) <= maxVerdictText {
		return s
	}
	b := []byte(s[:maxVerdictText])
	for len(b) > 0 && b[len(b)-1]&0xc0 == 0x80 {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] >= 0xc0 {
		b = b[:len(b)-1]
	}
	return string(b) + "…"
}

// SaveVerdicts adds the verdicts of the judge steps of the result the test
// run saved last (SaveTestResult), in the order of its steps, with their
// ids; their labels are left empty.
func (db *DB) SaveVerdicts(tr *TestRunInfo, vs []*Verdict) error {
	if len(vs) == 0 {
		return nil
	}
	if tr.next == 0 {
		return &Error{Path: db.path, Err: errors.New("judge verdicts: the test run has no result saved")}
	}
	result := tr.next - 1
	err := db.tx(func() error {
		if err := db.script(verdictSchema); err != nil {
			return err
		}
		for i, v := range vs {
			v.ID, v.Result, v.Label, v.Labelled = fmt.Sprintf("%s.r%d.j%d", tr.ID, result+1, i+1), result, "", time.Time{}
			v.Step, v.Rubric, v.Reason = capText(v.Step), capText(v.Rubric), capText(v.Reason)
			passed := int64(0)
			if v.Passed {
				passed = 1
			}
			if err := db.exec(`INSERT INTO test_verdicts (id, test_run, result, n, judge, agent, step, rubric, score, threshold, scale, passed, reason)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				v.ID, tr.seq, int64(result), int64(i+1), v.Judge, v.Agent, v.Step, v.Rubric, v.Score, v.Threshold, v.Scale, passed, v.Reason); err != nil {
				return err
			}
		}
		return nil
	})
	return wrapErr(db, err)
}

// hasVerdicts reports whether the verdict table exists.
func (db *DB) hasVerdicts() (bool, error) {
	rows, err := db.query(`SELECT count(*) FROM sqlite_schema WHERE name = 'test_verdicts'`)
	if err != nil {
		return false, err
	}
	return rows[0][0].(int64) > 0, nil
}

const verdictSelect = `SELECT v.id, v.result, v.judge, v.agent, v.step, v.rubric, v.score, v.threshold, v.scale, v.passed, v.reason, v.label, v.labelled_at,
	(SELECT id FROM test_runs WHERE seq = v.test_run) FROM test_verdicts v `

// Verdicts returns the judge verdicts of the test run, by result and step.
func (db *DB) Verdicts(tr *TestRunInfo) ([]*Verdict, error) {
	return db.verdicts(`WHERE v.test_run = ? ORDER BY v.result, v.n`, tr.seq)
}

// AllVerdicts returns the judge verdicts of every test run of the
// database, in the order the test runs started, each naming its test run.
func (db *DB) AllVerdicts() ([]*Verdict, error) {
	return db.verdicts(`ORDER BY v.test_run, v.result, v.n`)
}

// Verdict returns the verdict with the given id, or an error wrapping
// ErrNoVerdict.
func (db *DB) Verdict(id string) (*Verdict, error) {
	vs, err := db.verdicts(`WHERE v.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("%w %q in it", ErrNoVerdict, id)}
	}
	return vs[0], nil
}

func (db *DB) verdicts(where string, args ...any) ([]*Verdict, error) {
	ok, err := db.hasVerdicts()
	if err != nil || !ok {
		return nil, wrapErr(db, err)
	}
	rows, err := db.query(verdictSelect+where, args...)
	if err != nil {
		return nil, wrapErr(db, err)
	}
	out := make([]*Verdict, len(rows))
	for i, row := range rows {
		v := &Verdict{ID: str(row[0]), Result: int(row[1].(int64)), Judge: str(row[2]), Agent: str(row[3]), Step: str(row[4]),
			Rubric: str(row[5]), Threshold: str(row[7]), Scale: str(row[8]), Passed: row[9].(int64) == 1, Reason: str(row[10]),
			Label: str(row[11]), TestRun: str(row[13])}
		switch s := row[6].(type) {
		case float64:
			v.Score = s
		case int64:
			v.Score = float64(s)
		}
		v.Labelled, _ = time.Parse(time.RFC3339Nano, str(row[12]))
		out[i] = v
	}
	return out, nil
}

// LabelVerdict gives the verdict id the label a person chose (LabelPass or
// LabelFail), replacing any it had, and returns it labelled.
func (db *DB) LabelVerdict(id, label string) (*Verdict, error) {
	if label != LabelPass && label != LabelFail {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("label: %q is neither %s nor %s", label, LabelPass, LabelFail)}
	}
	if _, err := db.Verdict(id); err != nil {
		return nil, err
	}
	now := time.Now().UTC().Format(timeFormat)
	if err := db.exec(`UPDATE test_verdicts SET label = ?, labelled_at = ? WHERE id = ?`, label, now, id); err != nil {
		return nil, wrapErr(db, err)
	}
	return db.Verdict(id)
}
