package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A test run (`ensemble test --state`, docs/testing.md#test-runs-in-the-state-database)
// is the runs of the scenarios of one `ensemble test`: a row for the test
// run (its id, when it started and ended, the feature files, how it ended)
// and a result per scenario run (which scenario, which row of an outline,
// which repeat, whether it passed, the step that failed and why), each
// naming the run its ensemble ran, an ordinary run of the database.
//
// The tables are made the first time a test run is added, so databases
// without test runs are as they were.
const testRunSchema = `
CREATE TABLE IF NOT EXISTS test_runs (
	seq         INTEGER PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	files       TEXT NOT NULL,          -- JSON list of the feature files
	started_at  TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL DEFAULT '' -- '' while it runs (or was killed), passed, failed, interrupted
);
CREATE TABLE IF NOT EXISTS test_results (
	test_run INTEGER NOT NULL,
	idx      INTEGER NOT NULL,          -- the order the scenario runs ended in, from 0
	run      TEXT NOT NULL DEFAULT '',  -- the id of the run of its ensemble, '' when none ran
	feature  TEXT NOT NULL,             -- the feature file
	scenario TEXT NOT NULL,             -- the scenario's name
	line     INTEGER NOT NULL,          -- the line of its Scenario
	example  INTEGER NOT NULL,          -- an outline's row, from 1; 0 for a plain scenario
	rep      INTEGER NOT NULL,          -- the repeat, from 1
	status   TEXT NOT NULL,             -- passed, failed, cancelled (not counted)
	step     TEXT NOT NULL DEFAULT '',  -- the first step that did not pass
	message  TEXT NOT NULL DEFAULT '',  -- and why
	duration REAL NOT NULL DEFAULT 0,   -- seconds
	PRIMARY KEY (test_run, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS test_results_run ON test_results (run);
`

// Statuses of a test result.
const (
	TestPassed    = "passed"
	TestFailed    = "failed"
	TestCancelled = "cancelled" // a repeat stopped once its scenario's verdict was known: it does not count
)

// ErrTestRunExists is wrapped by the error for a test run id the database
// holds already.
var ErrTestRunExists = errors.New("it holds a test run with that id already")

// ErrNoTestRun is wrapped by the error for a test run id the database does
// not hold.
var ErrNoTestRun = errors.New("no test run")

// TestRunInfo describes a test run of the database, with the count of its
// results by status.
type TestRunInfo struct {
	ID       string    `json:"id"`
	Files    []string  `json:"files"`
	Started  time.Time `json:"started_at"`
	Finished time.Time `json:"finished_at,omitzero"`
	Status   string    `json:"status"`
	Results  int       `json:"results"`
	Passed   int       `json:"passed"`
	Failed   int       `json:"failed"`
	seq      int64
	next     int // the index of the next result saved
}

// TestResult is one scenario run of a test run.
type TestResult struct {
	Run      string  `json:"run,omitempty"`
	Feature  string  `json:"feature"`
	Scenario string  `json:"scenario"`
	Line     int     `json:"line"`
	Example  int     `json:"example,omitempty"`
	Repeat   int     `json:"repeat"`
	Status   string  `json:"status"`
	Step     string  `json:"step,omitempty"`
	Message  string  `json:"message,omitempty"`
	Duration float64 `json:"duration_seconds"`
}

// hasTestRuns reports whether the test run tables exist.
func (db *DB) hasTestRuns() (bool, error) {
	rows, err := db.query(`SELECT count(*) FROM sqlite_schema WHERE name = 'test_runs'`)
	if err != nil {
		return false, err
	}
	return rows[0][0].(int64) > 0, nil
}

// CreateTestRun adds a test run of the feature files with the given id.
// An id the database holds already is refused.
func (db *DB) CreateTestRun(id string, files []string) (*TestRunInfo, error) {
	if err := CheckID(id); err != nil {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("test run id: %w", err)}
	}
	if files == nil {
		files = []string{}
	}
	data, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	var tr *TestRunInfo
	err = db.tx(func() error {
		if err := db.script(testRunSchema); err != nil {
			return err
		}
		if rows, err := db.query(`SELECT 1 FROM test_runs WHERE id = ?`, id); err != nil {
			return err
		} else if len(rows) > 0 {
			return fmt.Errorf("%w: %s", ErrTestRunExists, id)
		}
		if err := db.exec(`INSERT INTO test_runs (id, files, started_at) VALUES (?, ?, ?)`, id, string(data), now.Format(timeFormat)); err != nil {
			return err
		}
		rows, err := db.query(`SELECT seq FROM test_runs WHERE id = ?`, id)
		if err != nil {
			return err
		}
		tr = &TestRunInfo{ID: id, Files: files, Started: now, seq: rows[0][0].(int64)}
		return nil
	})
	if err != nil {
		return nil, &Error{Path: db.path, Err: err}
	}
	return tr, nil
}

// SaveTestResult adds a result to the test run, after those saved before.
func (db *DB) SaveTestResult(tr *TestRunInfo, r *TestResult) error {
	err := db.exec(`INSERT INTO test_results (test_run, idx, run, feature, scenario, line, example, rep, status, step, message, duration)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tr.seq, int64(tr.next), r.Run, r.Feature, r.Scenario, int64(r.Line), int64(r.Example), int64(r.Repeat), r.Status, r.Step, r.Message, r.Duration)
	if err != nil {
		return wrapErr(db, err)
	}
	tr.next++
	tr.Results++
	switch r.Status {
	case TestPassed:
		tr.Passed++
	case TestFailed:
		tr.Failed++
	}
	return nil
}

// FinishTestRun records how the test run ended.
func (db *DB) FinishTestRun(tr *TestRunInfo, status string) error {
	now := time.Now().UTC()
	if err := db.exec(`UPDATE test_runs SET status = ?, finished_at = ? WHERE seq = ?`, status, now.Format(timeFormat), tr.seq); err != nil {
		return wrapErr(db, err)
	}
	tr.Status, tr.Finished = status, now
	return nil
}

// testRunSelect reads test runs with the count of their results: one
// aggregate over the results' primary key per test run.
const testRunSelect = `SELECT seq, id, files, started_at, finished_at, status,
	(SELECT count(*) FROM test_results WHERE test_run = seq),
	(SELECT count(*) FROM test_results WHERE test_run = seq AND status = 'passed'),
	(SELECT count(*) FROM test_results WHERE test_run = seq AND status = 'failed')
	FROM test_runs `

// TestRuns lists the test runs of the database in the order they started.
func (db *DB) TestRuns() ([]*TestRunInfo, error) {
	return db.testRuns("ORDER BY seq")
}

// TestRun returns the test run with the given id, or an error wrapping
// ErrNoTestRun.
func (db *DB) TestRun(id string) (*TestRunInfo, error) {
	trs, err := db.testRuns("WHERE id = ?", id)
	if err != nil {
		return nil, err
	}
	if len(trs) == 0 {
		return nil, &Error{Path: db.path, Err: fmt.Errorf("%w %q in it", ErrNoTestRun, id)}
	}
	return trs[0], nil
}

func (db *DB) testRuns(where string, args ...any) ([]*TestRunInfo, error) {
	ok, err := db.hasTestRuns()
	if err != nil || !ok {
		return nil, wrapErr(db, err)
	}
	rows, err := db.query(testRunSelect+where, args...)
	if err != nil {
		return nil, wrapErr(db, err)
	}
	out := make([]*TestRunInfo, 0, len(rows))
	for _, row := range rows {
		tr := &TestRunInfo{seq: row[0].(int64), ID: str(row[1]), Status: str(row[5]),
			Results: int(row[6].(int64)), Passed: int(row[7].(int64)), Failed: int(row[8].(int64))}
		if err := json.Unmarshal([]byte(str(row[2])), &tr.Files); err != nil {
			return nil, &Error{Path: db.path, Err: fmt.Errorf("test run %s: corrupt: files: %v", tr.ID, err)}
		}
		tr.Started, _ = time.Parse(time.RFC3339Nano, str(row[3]))
		tr.Finished, _ = time.Parse(time.RFC3339Nano, str(row[4]))
		tr.next = tr.Results
		out = append(out, tr)
	}
	return out, nil
}

const testResultSelect = `SELECT run, feature, scenario, line, example, rep, status, step, message, duration FROM test_results `

// TestResults returns the results of the test run, in the order they were
// saved.
func (db *DB) TestResults(tr *TestRunInfo) ([]*TestResult, error) {
	rows, err := db.query(testResultSelect+`WHERE test_run = ? ORDER BY idx`, tr.seq)
	if err != nil {
		return nil, wrapErr(db, err)
	}
	return testResults(rows), nil
}

// TestResultOf returns the test run and the result whose run is runID; nil
// and nil when no test run names it.
func (db *DB) TestResultOf(runID string) (*TestRunInfo, *TestResult, error) {
	ok, err := db.hasTestRuns()
	if err != nil || !ok || runID == "" {
		return nil, nil, wrapErr(db, err)
	}
	rows, err := db.query(`SELECT (SELECT id FROM test_runs WHERE seq = test_run), `+testResultSelect[len("SELECT "):]+`WHERE run = ? LIMIT 1`, runID)
	if err != nil || len(rows) == 0 {
		return nil, nil, wrapErr(db, err)
	}
	tr, err := db.TestRun(str(rows[0][0]))
	if err != nil {
		return nil, nil, err
	}
	return tr, testResults([][]any{rows[0][1:]})[0], nil
}

func testResults(rows [][]any) []*TestResult {
	out := make([]*TestResult, len(rows))
	for i, row := range rows {
		out[i] = &TestResult{Run: str(row[0]), Feature: str(row[1]), Scenario: str(row[2]), Line: int(row[3].(int64)),
			Example: int(row[4].(int64)), Repeat: int(row[5].(int64)), Status: str(row[6]), Step: str(row[7]), Message: str(row[8])}
		switch d := row[9].(type) {
		case float64:
			out[i].Duration = d
		case int64:
			out[i].Duration = float64(d)
		}
	}
	return out
}
