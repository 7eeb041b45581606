package bdd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// A test run saved in a state database (`test --state FILE`,
// docs/testing.md#test-runs-in-the-state-database): every scenario run's
// ensemble run is saved as a durable run is, as run TEST.N of the
// database, and its outcome (the scenario, its row and repeat, whether it
// passed, the step that failed and why) as a result of the test run TEST,
// which the inspector lists.

// maxMessage caps the message of a failed step a result keeps.
const maxMessage = 16 << 10

// testStore is the test run being saved: the database (one connection:
// every use holds its lock, store.DB.Hold, the runs' saves too) and the
// test run's row.
type testStore struct {
	db   *store.DB
	path string
	tr   *store.TestRunInfo
	n    atomic.Int64 // the runs numbered so far
	err  error        // the first result that could not be saved
	// byFile are the planned scenarios by feature file, and seen how many
	// of each file's have started: a run without repeats finds a
	// scenario's plan by its place among its file's (godog runs them in
	// file order).
	byFile map[string][]*planned
	seen   map[string]int
}

// openTestStore starts the test run of the feature files in the state
// database at path (a new file, an empty one, or a database).
func openTestStore(path string, files []string, pl *plan, lookup func(string) (string, bool)) (*testStore, error) {
	if !durable.SavesInDatabase(path) {
		return nil, usagef("--state %s is not a state database: name a new file, or a database that run --state or test --state wrote", path)
	}
	sync, err := durable.SyncFrom(lookup)
	if err != nil {
		return nil, usagef("%v", err)
	}
	db, err := store.Open(path, true, sync)
	if err != nil {
		return nil, usagef("--state: %v", err)
	}
	tr, err := db.CreateTestRun(store.NewID(), files)
	if err != nil {
		db.Close()
		return nil, usagef("--state: %v", err)
	}
	ts := &testStore{db: db, path: path, tr: tr, byFile: map[string][]*planned{}, seen: map[string]int{}}
	for _, p := range pl.scenarios {
		ts.byFile[p.file] = append(ts.byFile[p.file], p)
	}
	return ts, nil
}

// finish records how the test run ended, says where it is, and closes the
// database; a result that could not be saved makes the run fail.
func (ts *testStore) finish(ctx context.Context, code int, stderr io.Writer) (int, error) {
	status := store.TestPassed
	switch {
	case ctx != nil && ctx.Err() != nil:
		status = "interrupted"
	case code == ExitUsage:
		status = "error"
	case code != ExitPassed:
		status = store.TestFailed
	}
	ts.db.Hold()
	defer ts.db.Release()
	err := ts.err
	if ferr := ts.db.FinishTestRun(ts.tr, status); err == nil {
		err = ferr
	}
	if cerr := ts.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return max(code, ExitFailed), fmt.Errorf("test --state: %w", err)
	}
	fmt.Fprintf(stderr, "saved test run %s (%d scenario runs) in %s: ui %s shows it\n", ts.tr.ID, ts.tr.Results, ts.path, ts.path)
	return code, nil
}

// newRun prepares the saving of a new run of scenario s: its saver and id.
func (ts *testStore) newRun(s *Scenario) (session.RunOptions, error) {
	refs, err := durable.Refs{Profiles: s.profileFiles()}.Resolve()
	if err != nil {
		return session.RunOptions{}, err
	}
	id := ts.tr.ID + "." + strconv.FormatInt(ts.n.Add(1), 10)
	d, err := durable.CreateIn(ts.db, id, refs)
	if err != nil {
		return session.RunOptions{}, err
	}
	return session.RunOptions{Save: d, RunID: id}, nil
}

// continueRun prepares the saving of the run id as it goes on (an answer
// resumes it).
func (ts *testStore) continueRun(s *Scenario, id string) (session.RunOptions, error) {
	refs, err := durable.Refs{Profiles: s.profileFiles()}.Resolve()
	if err != nil {
		return session.RunOptions{}, err
	}
	ts.db.Hold()
	info, err := ts.db.Run(id)
	ts.db.Release()
	if err != nil {
		return session.RunOptions{}, err
	}
	d, _, err := durable.ContinueIn(ts.db, info, refs)
	if err != nil {
		return session.RunOptions{}, err
	}
	return session.RunOptions{Save: d, RunID: id}, nil
}

// record saves the outcome of run n of scenario p (nil: a scenario the
// plan does not know, named name).
func (ts *testStore) record(p *planned, name string, n int, res *runResult, status string) {
	r := &store.TestResult{Run: res.runID, Scenario: name, Repeat: n, Status: status, Duration: res.duration.Seconds()}
	if p != nil {
		r.Feature, r.Scenario, r.Line = p.path, p.name, int(p.line)
		if strings.HasPrefix(p.path, "../") {
			r.Feature = p.file // outside the working folder: as found
		}
		if strings.Contains(p.keyword, "Outline") || strings.Contains(p.keyword, "Template") {
			r.Example = p.row + 1
		}
	}
	if status != store.TestPassed {
		r.Step, r.Message = res.failStep, res.failMsg
		if len(r.Message) > maxMessage {
			r.Message = strings.ToValidUTF8(r.Message[:maxMessage], "") + "…"
		}
	}
	ts.db.Hold()
	defer ts.db.Release()
	err := ts.db.SaveTestResult(ts.tr, r)
	if err == nil {
		err = ts.db.SaveVerdicts(ts.tr, verdictsOf(res.checks))
	}
	if err != nil && ts.err == nil {
		ts.err = err
	}
}

// find is the plan of the scenario godog starts, by its place among its
// file's; nil when they do not agree.
func (ts *testStore) find(pk *godog.Scenario) *planned {
	i := ts.seen[pk.Uri]
	ts.seen[pk.Uri]++
	if list := ts.byFile[pk.Uri]; i < len(list) && strings.HasPrefix(list[i].name, pk.Name) {
		return list[i]
	}
	return nil
}

// track records the outcome of a scenario of a run without repeats, which
// godog runs one at a time.
func (ts *testStore) track(sc *godog.ScenarioContext, s *Scenario) {
	res := &runResult{}
	var (
		p     *planned
		start time.Time
	)
	sc.Before(func(ctx context.Context, pk *godog.Scenario) (context.Context, error) {
		p, start = ts.find(pk), time.Now()
		return ctx, nil
	})
	sc.StepContext().After(func(ctx context.Context, st *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
		noteStep(res, p, st, status, err)
		return ctx, nil
	})
	sc.After(func(ctx context.Context, pk *godog.Scenario, err error) (context.Context, error) {
		res.duration, res.runID, res.checks = time.Since(start), s.savedID, s.checks
		status := store.TestPassed
		if err != nil || res.failure != "" {
			status = store.TestFailed
			if res.failMsg == "" && err != nil {
				res.failMsg = err.Error()
			}
		}
		if ctx.Err() != nil {
			// Ctrl-C: stopped, or skipped, before its end; as a repeat the
			// test run stopped, it does not count.
			status = store.TestCancelled
		}
		ts.record(p, pk.Name, 1, res, status)
		return ctx, nil
	})
}

// noteStep adds the outcome of step st of scenario p (nil: unknown) to
// res, and the first that did not pass as its failure.
func noteStep(res *runResult, p *planned, st *godog.Step, status godog.StepResultStatus, err error) {
	out := stepOutcome{status: status.String()}
	text, named := st.Text, st.Text
	if i := len(res.steps); p != nil && i < len(p.steps) && p.steps[i].keyword != "" {
		text = p.steps[i].keyword + text
		named = fmt.Sprintf("%s (%s:%d)", text, p.file, p.steps[i].line)
	}
	failed := status != godog.StepPassed && status != godog.StepSkipped
	if status == godog.StepUndefined || errors.Is(err, godog.ErrUndefined) {
		err = undefinedStep(st.Text)
	}
	switch {
	case failed && err != nil:
		out.err = err.Error()
		if res.failure == "" {
			res.failure = fmt.Sprintf("Step %s: %v", named, err)
			res.failStep, res.failMsg = text, err.Error()
		}
	case failed && res.failure == "":
		res.failure = fmt.Sprintf("Step %s: %s", named, status)
		res.failStep, res.failMsg = text, status.String()
	}
	res.steps = append(res.steps, out)
}

// resultStatus is the status of a result: whether the run counted, and
// passed.
func resultStatus(counted, passed bool) string {
	switch {
	case !counted:
		return store.TestCancelled
	case passed:
		return store.TestPassed
	}
	return store.TestFailed
}

// saveOptions are the run options that save the scenario's next run: none
// when the test run is not saved. resume: the run goes on (an answer).
func (s *Scenario) saveOptions(resume bool) (session.RunOptions, error) {
	ts := s.opts.saved
	if ts == nil {
		return session.RunOptions{}, nil
	}
	if resume && s.savedID != "" {
		return ts.continueRun(s, s.savedID)
	}
	ro, err := ts.newRun(s)
	if err == nil {
		s.savedID = ro.RunID
	}
	return ro, err
}
