package inspector

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// DivergenceSide is one of the two runs a divergence compares: its test
// result, and its records of the first turn that differs (none when the
// run did not reach that turn).
type DivergenceSide struct {
	Run              string            `json:"run"`
	Result           *store.TestResult `json:"result"`
	Turns            int               `json:"turns"`
	CompletionReason string            `json:"completion_reason"`
	Records          []*state.Record   `json:"records"`
}

// Divergence is where a failing run of a scenario departs from a passing
// run of the same scenario in the same test run: the first turn whose
// executions differ (by agent, input, output or error), 0 when none does.
type Divergence struct {
	DB       int             `json:"db"`
	TestRun  string          `json:"test_run"`
	Turn     int             `json:"turn"`
	Note     string          `json:"note"`
	Failing  *DivergenceSide `json:"failing"`
	Passing  *DivergenceSide `json:"passing"`
	Compared int             `json:"compared"` // how many passing runs were compared, the one departing last shown
	// Others are the other passing runs of the scenario, to compare with
	// instead (with=RUN).
	Others []string `json:"others,omitempty"`
}

// maxCompared is how many passing runs a divergence compares at most when
// none is named.
const maxCompared = 20

// divergencePage is how many turns of each run a divergence reads at a time.
const divergencePage = 100

// apiDivergence is GET /api/tests/divergence?db=N&id=RUN[&with=RUN]: where
// run id (a scenario's run) departs from the passing run with, or from the
// passing run of the same scenario that follows it longest.
func (s *Server) apiDivergence(w http.ResponseWriter, r *http.Request) {
	i, d, err := s.dbOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	id, with := r.URL.Query().Get("id"), r.URL.Query().Get("with")
	var dv *Divergence
	err = held(d, func(db *store.DB) (err error) { dv, err = divergence(db, id, with); return })
	if err != nil {
		s.fail(w, err)
		return
	}
	dv.DB = i
	s.reply(w, dv)
}

// divergence compares run id with run with, or with the passing runs of
// its scenario; db is held.
func divergence(db *store.DB, id, with string) (*Divergence, error) {
	tr, res, err := db.TestResultOf(id)
	if err != nil {
		return nil, err
	}
	if tr == nil {
		return nil, &httpError{http.StatusNotFound, "run " + id + " is not the run of a scenario of a test run (test --state saves those)"}
	}
	results, err := db.TestResults(tr)
	if err != nil {
		return nil, err
	}
	var cands []*store.TestResult
	for _, o := range results {
		if keyOf(o) == keyOf(res) && o.Status == store.TestPassed && o.Run != "" && o.Run != id {
			cands = append(cands, o)
		}
	}
	if len(cands) == 0 {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("no passing run of the scenario %q in test run %s to compare run %s with", res.Scenario, tr.ID, id)}
	}
	dv := &Divergence{TestRun: tr.ID}
	if with != "" {
		i := slices.IndexFunc(cands, func(c *store.TestResult) bool { return c.Run == with })
		if i < 0 {
			return nil, &httpError{http.StatusNotFound, fmt.Sprintf("run %s is not a passing run of the scenario %q in test run %s", with, res.Scenario, tr.ID)}
		}
		cands = []*store.TestResult{cands[i]}
	}
	a, err := db.Run(id)
	if err != nil {
		return nil, err
	}
	var best *divergedAt
	var bestRes *store.TestResult
	for _, c := range cands[:min(len(cands), maxCompared)] {
		b, err := db.Run(c.Run)
		if err != nil {
			return nil, err
		}
		at, err := firstDivergence(db, a, b)
		if err != nil {
			return nil, err
		}
		dv.Compared++
		if best == nil || later(at, best) {
			best, bestRes = at, c
		}
	}
	for _, c := range cands {
		if c != bestRes {
			dv.Others = append(dv.Others, c.Run)
		}
	}
	dv.Turn = best.turn
	dv.Failing = &DivergenceSide{Run: id, Result: res, Turns: a.Turns, CompletionReason: a.CompletionReason, Records: best.fail}
	dv.Passing = &DivergenceSide{Run: bestRes.Run, Result: bestRes, Turns: best.passRun.Turns, CompletionReason: best.passRun.CompletionReason, Records: best.pass}
	dv.Note = noteOf(dv)
	return dv, nil
}

// divergedAt is the first turn where two runs differ (0: none does), and
// each one's records of it.
type divergedAt struct {
	turn       int
	fail, pass []*state.Record // the failing run's records of it, and the passing run's
	passRun    *store.RunInfo
}

// later reports whether x departs later than y (never departing is latest).
func later(x, y *divergedAt) bool {
	switch {
	case y.turn == 0:
		return false
	case x.turn == 0:
		return true
	}
	return x.turn > y.turn
}

// firstDivergence reads the turns of a and b, a page at a time, until the
// first that differs.
func firstDivergence(db *store.DB, a, b *store.RunInfo) (*divergedAt, error) {
	after := 0
	for {
		ta, err := db.Turns(a, after, divergencePage)
		if err != nil {
			return nil, err
		}
		tb, err := db.Turns(b, after, divergencePage)
		if err != nil {
			return nil, err
		}
		for k := range max(len(ta), len(tb)) {
			switch {
			case k >= len(ta):
				return &divergedAt{turn: tb[k].Turn, pass: tb[k].Records, passRun: b}, nil
			case k >= len(tb):
				return &divergedAt{turn: ta[k].Turn, fail: ta[k].Records, passRun: b}, nil
			case ta[k].Turn != tb[k].Turn:
				t := min(ta[k].Turn, tb[k].Turn)
				d := &divergedAt{turn: t, passRun: b}
				if ta[k].Turn == t {
					d.fail = ta[k].Records
				}
				if tb[k].Turn == t {
					d.pass = tb[k].Records
				}
				return d, nil
			case !turnsEqual(ta[k].Records, tb[k].Records):
				return &divergedAt{turn: ta[k].Turn, fail: ta[k].Records, pass: tb[k].Records, passRun: b}, nil
			}
		}
		if len(ta) < divergencePage || len(tb) < divergencePage {
			return &divergedAt{passRun: b}, nil
		}
		after = ta[len(ta)-1].Turn
	}
}

// recordsEqual reports whether two executions are the same for a
// divergence: the same agent and execution, skipped alike, the same
// input, output and error (their timing and usage aside).
func recordsEqual(a, b *state.Record) bool {
	return a.AgentName == b.AgentName && a.Execution == b.Execution && a.Skipped == b.Skipped &&
		reflect.DeepEqual(a.InputData, b.InputData) && reflect.DeepEqual(a.OutputData, b.OutputData) &&
		reflect.DeepEqual(a.Error, b.Error)
}

// turnsEqual reports whether two turns ran the same executions.
func turnsEqual(a, b []*state.Record) bool {
	return slices.EqualFunc(a, b, recordsEqual)
}

// noteOf says in a sentence where the runs part.
func noteOf(dv *Divergence) string {
	f, p := dv.Failing, dv.Passing
	switch {
	case dv.Turn == 0:
		return fmt.Sprintf("The runs executed the same turns: they differ in what the steps checked after them (%s).", failedStep(f.Result))
	case f.Records == nil:
		return fmt.Sprintf("The failing run ended (%s) before turn %d, which the passing run went on to.", f.CompletionReason, dv.Turn)
	case p.Records == nil:
		return fmt.Sprintf("The failing run went on to turn %d, after the passing run ended (%s).", dv.Turn, p.CompletionReason)
	}
	var parts []string
	if !slices.Equal(agentsOf(f.Records), agentsOf(p.Records)) {
		parts = append(parts, "ran other agents")
	} else {
		for k := range f.Records {
			a, b := f.Records[k], p.Records[k]
			if !reflect.DeepEqual(a.InputData, b.InputData) {
				parts = append(parts, fmt.Sprintf("agent %q got another input", a.AgentName))
			}
			if !reflect.DeepEqual(a.OutputData, b.OutputData) || !reflect.DeepEqual(a.Error, b.Error) || a.Skipped != b.Skipped {
				parts = append(parts, fmt.Sprintf("agent %q gave another outcome", a.AgentName))
			}
		}
	}
	return fmt.Sprintf("The runs part at turn %d: %s.", dv.Turn, strings.Join(parts, "; "))
}

func agentsOf(recs []*state.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%s#%d", r.AgentName, r.Execution)
	}
	return out
}

func failedStep(r *store.TestResult) string {
	if r.Step == "" {
		return "the failing run failed with no step named"
	}
	return "the failing run failed at " + r.Step
}
