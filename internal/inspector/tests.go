package inspector

import (
	"cmp"
	"errors"
	"net/http"
	"slices"

	"github.com/ensemble-run/ensemble/store"
)

// The test runs of the databases (`test --state`, docs/ui.md#test-runs):
// their list, a test run's scenarios with their pass rates and each
// repeat's run, and the divergence of a failing run from a passing run of
// the same scenario: the first turn where they differ, side by side.

// TestRunSummary is a test run as the list of test runs shows it.
type TestRunSummary struct {
	DB     int    `json:"db"`
	DBPath string `json:"db_path"`
	*store.TestRunInfo
	// Cancelled counts the runs that did not count: a repeat stopped once
	// its scenario's verdict was known.
	Cancelled int `json:"cancelled"`
}

// TestScenario is a scenario of a test run (a row of an outline is one):
// its pass rate over its runs that count, and its runs, in the order they
// ended.
type TestScenario struct {
	Feature   string              `json:"feature"`
	Scenario  string              `json:"scenario"`
	Line      int                 `json:"line"`
	Example   int                 `json:"example,omitempty"`
	Passed    int                 `json:"passed"`
	Failed    int                 `json:"failed"`
	Cancelled int                 `json:"cancelled"`
	PassRate  *float64            `json:"pass_rate"` // nil: no run counted
	Runs      []*store.TestResult `json:"runs"`
}

// TestRunView is one test run: its summary and its scenarios, in the order
// of their first result.
type TestRunView struct {
	TestRun   *TestRunSummary `json:"test_run"`
	Scenarios []*TestScenario `json:"scenarios"`
}

func (s *Server) testRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/tests", s.apiTestRuns)
	mux.HandleFunc("GET /api/tests/run", s.apiTestRun)
	mux.HandleFunc("GET /api/tests/of", s.apiTestOf)
	mux.HandleFunc("GET /api/tests/divergence", s.apiDivergence)
	s.judgeRoutes(mux) // judges.go
}

// held runs f with database d held, open.
func held(d *database, f func(db *store.DB) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return &httpError{http.StatusServiceUnavailable, "the server is stopping"}
	}
	return f(d.db)
}

// apiTestRuns is GET /api/tests[?db=N]: the test runs of every database
// (or of one), oldest first.
func (s *Server) apiTestRuns(w http.ResponseWriter, r *http.Request) {
	only := -1
	if r.URL.Query().Get("db") != "" {
		i, _, err := s.dbOf(r)
		if err != nil {
			s.fail(w, err)
			return
		}
		only = i
	}
	out := []*TestRunSummary{}
	for i, d := range s.dbs {
		if only >= 0 && i != only {
			continue
		}
		var trs []*store.TestRunInfo
		if err := held(d, func(db *store.DB) (err error) { trs, err = db.TestRuns(); return }); err != nil {
			s.fail(w, err)
			return
		}
		for _, tr := range trs {
			out = append(out, &TestRunSummary{DB: i, DBPath: d.path, TestRunInfo: tr, Cancelled: tr.Results - tr.Passed - tr.Failed})
		}
	}
	s.reply(w, map[string]any{"test_runs": out})
}

// testRunOf is the test run the request's db and id parameters name, with
// its results.
func (s *Server) testRunOf(r *http.Request) (*TestRunSummary, []*store.TestResult, error) {
	i, d, id, err := s.dbAndID(r)
	if err != nil {
		return nil, nil, err
	}
	var tr *store.TestRunInfo
	var results []*store.TestResult
	err = held(d, func(db *store.DB) error {
		var err error
		if tr, err = db.TestRun(id); err == nil {
			results, err = db.TestResults(tr)
		}
		return err
	})
	if errors.Is(err, store.ErrNoTestRun) {
		return nil, nil, &httpError{http.StatusNotFound, "no test run " + id + " in " + d.path}
	}
	if err != nil {
		return nil, nil, err
	}
	return &TestRunSummary{DB: i, DBPath: d.path, TestRunInfo: tr, Cancelled: tr.Results - tr.Passed - tr.Failed}, results, nil
}

// apiTestRun is GET /api/tests/run?db=N&id=TEST: a test run's scenarios,
// each with its pass rate and its runs.
func (s *Server) apiTestRun(w http.ResponseWriter, r *http.Request) {
	sum, results, err := s.testRunOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, &TestRunView{TestRun: sum, Scenarios: scenariosOf(results)})
}

// scenarioKey is what identifies a scenario among a test run's results.
type scenarioKey struct {
	feature, scenario string
	line, example     int
}

func keyOf(r *store.TestResult) scenarioKey {
	return scenarioKey{r.Feature, r.Scenario, r.Line, r.Example}
}

// scenariosOf groups results by scenario, in the order of their first
// result, each scenario's runs by repeat.
func scenariosOf(results []*store.TestResult) []*TestScenario {
	var out []*TestScenario
	at := map[scenarioKey]*TestScenario{}
	for _, r := range results {
		k := keyOf(r)
		sc := at[k]
		if sc == nil {
			sc = &TestScenario{Feature: r.Feature, Scenario: r.Scenario, Line: r.Line, Example: r.Example}
			at[k] = sc
			out = append(out, sc)
		}
		sc.Runs = append(sc.Runs, r)
		switch r.Status {
		case store.TestPassed:
			sc.Passed++
		case store.TestFailed:
			sc.Failed++
		default:
			sc.Cancelled++
		}
	}
	for _, sc := range out {
		if n := sc.Passed + sc.Failed; n > 0 {
			rate := float64(sc.Passed) / float64(n)
			sc.PassRate = &rate
		}
		slices.SortStableFunc(sc.Runs, func(a, b *store.TestResult) int { return cmp.Compare(a.Repeat, b.Repeat) })
	}
	return out
}

// apiTestOf is GET /api/tests/of?db=N&id=RUN: the test run and result of
// a run, for its page; {} when it is no scenario's run.
func (s *Server) apiTestOf(w http.ResponseWriter, r *http.Request) {
	i, d, err := s.dbOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	id := r.URL.Query().Get("id")
	var tr *store.TestRunInfo
	var res *store.TestResult
	if err := held(d, func(db *store.DB) (err error) { tr, res, err = db.TestResultOf(id); return }); err != nil {
		s.fail(w, err)
		return
	}
	if tr == nil {
		s.reply(w, map[string]any{})
		return
	}
	s.reply(w, map[string]any{"db": i, "test_run": tr.ID, "result": res})
}
