package inspector

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ensemble-run/ensemble/store"
)

// Judge review (docs/ui.md#judge-review): the verdicts of the judge steps
// of a test run, and a person's label of each: accepted (the judge was
// right) or overridden (it was wrong), stored in the database for `test
// calibrate`. The label is a write: it goes through the same guard as the
// answers and forks (the token, which a cross-site page cannot send, and a
// Host header that names this server).

// VerdictsView is the judge verdicts of a test run, with how many a person
// labelled.
type VerdictsView struct {
	Verdicts   []*VerdictRow `json:"verdicts"`
	Labelled   int           `json:"labelled"`
	Unlabelled int           `json:"unlabelled"`
}

// VerdictRow is a verdict with the scenario run it judged.
type VerdictRow struct {
	*store.Verdict
	Scenario string `json:"scenario"`
	Repeat   int    `json:"repeat"`
	Run      string `json:"run,omitempty"`
	Status   string `json:"status"` // the scenario run's
}

// labelBody is the body of POST /api/tests/verdict: a label (pass or
// fail), or accept, the judge's own verdict as the label.
type labelBody struct {
	Label  string `json:"label"`
	Accept bool   `json:"accept"`
}

func (s *Server) judgeRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/tests/verdicts", s.apiVerdicts)
	mux.HandleFunc("POST /api/tests/verdict", s.apiLabelVerdict)
}

// apiVerdicts is GET /api/tests/verdicts?db=N&id=TEST: the judge verdicts
// of the test run, by result and step.
func (s *Server) apiVerdicts(w http.ResponseWriter, r *http.Request) {
	_, d, id, err := s.dbAndID(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var vs []*store.Verdict
	var results []*store.TestResult
	err = held(d, func(db *store.DB) error {
		tr, err := db.TestRun(id)
		if err == nil {
			vs, err = db.Verdicts(tr)
		}
		if err == nil && len(vs) > 0 {
			results, err = db.TestResults(tr)
		}
		return err
	})
	if errors.Is(err, store.ErrNoTestRun) {
		err = &httpError{http.StatusNotFound, "no test run " + id + " in " + d.path}
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	view := &VerdictsView{Verdicts: make([]*VerdictRow, 0, len(vs))}
	for _, v := range vs {
		row := &VerdictRow{Verdict: v}
		if v.Result < len(results) {
			r := results[v.Result]
			row.Scenario, row.Repeat, row.Run, row.Status = r.Scenario, r.Repeat, r.Run, r.Status
		}
		view.Verdicts = append(view.Verdicts, row)
		if v.Label != "" {
			view.Labelled++
		} else {
			view.Unlabelled++
		}
	}
	s.reply(w, view)
}

// apiLabelVerdict is POST /api/tests/verdict?db=N&id=VERDICT with
// {"label": "pass"} or {"label": "fail"} (an override, or the judge's own
// verdict), or {"accept": true}: the verdict labelled, replacing the label
// it had.
func (s *Server) apiLabelVerdict(w http.ResponseWriter, r *http.Request) {
	_, d, id, err := s.dbAndID(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var body labelBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, `the body: {"label": "pass"}, {"label": "fail"} or {"accept": true}: `+err.Error())
		return
	}
	if body.Accept == (body.Label != "") || !body.Accept && body.Label != store.LabelPass && body.Label != store.LabelFail {
		writeError(w, http.StatusBadRequest, `the body: {"label": "pass"}, {"label": "fail"} or {"accept": true}, one of them`)
		return
	}
	var v *store.Verdict
	err = held(d, func(db *store.DB) error {
		label := body.Label
		if body.Accept {
			judged, err := db.Verdict(id)
			if err != nil {
				return err
			}
			label = store.LabelFail
			if judged.Passed {
				label = store.LabelPass
			}
		}
		var err error
		v, err = db.LabelVerdict(id, label)
		return err
	})
	if errors.Is(err, store.ErrNoVerdict) {
		err = &httpError{http.StatusNotFound, "no judge verdict " + id + " in " + d.path}
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, map[string]any{"verdict": v})
}
