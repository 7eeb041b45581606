package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
)

// reviewYAML is a judge and a fix loop that runs out of its max_turns
// while the check still fails, with the verdict expected.
const reviewYAML = `
name: review
agents:
  - name: judge
    script: x.sh
  - name: fix
    script: x.sh
    dependencies: [judge, {agent_name: check, requires_all: false, condition: "context.check.ok == false"}]
    conversation: {max_turns: 2}
  - name: check
    script: x.sh
    dependencies: [fix]
    conversation: {max_turns: 5}
expect:
  - "context.judge.verdict == 'APPROVE'"
`

// The expectations of a completed run are its verdict: a false one ends it
// expectation_failed, exit 8, with each expectation, whether it held and
// what it read in the result, the event before run_completed, and what a
// saved run keeps (Stopped, SavedResult).
func TestExpectationsEndACompletedRun(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, reviewYAML)
	heldBack, err := ensemble.CompileExpectation("len(held_back) == 0", "--expect")
	if err != nil {
		t.Fatal(err)
	}
	broken, err := ensemble.CompileExpectation("context.judge.verdict > 1", "--expect")
	if err != nil {
		t.Fatal(err)
	}
	runner := func(verdict string, failJudge bool) scripted {
		return scripted{
			"judge": func(*agentpkg.Request) (any, error) {
				if failJudge {
					return nil, errors.New("judge crashed")
				}
				return map[string]any{"verdict": verdict}, nil
			},
			"fix":   func(*agentpkg.Request) (any, error) { return "patched", nil },
			"check": func(*agentpkg.Request) (any, error) { return map[string]any{"ok": false}, nil },
		}
	}
	tests := []struct {
		name    string
		verdict string
		fail    bool
		extra   []*ensemble.Expectation
		reason  string
		code    int
		held    []bool
		values  string // of the expectations, as JSON
		errs    []string
	}{
		{"approved", "APPROVE", false, nil, engine.Completed, 0, []bool{true}, `[[{"path":"context.judge.verdict","value":"APPROVE"}]]`, []string{""}},
		{"rejected", "REJECT", false, nil, engine.ExpectationFailed, engine.ExitExpectation, []bool{false}, `[[{"path":"context.judge.verdict","value":"REJECT"}]]`, []string{""}},
		{"a loop that ran out", "APPROVE", false, []*ensemble.Expectation{heldBack}, engine.ExpectationFailed, 8, []bool{true, false},
			`[[{"path":"context.judge.verdict","value":"APPROVE"}],[{"path":"held_back","value":["fix"]}]]`, []string{"", ""}},
		{"an expectation that errs", "APPROVE", false, []*ensemble.Expectation{broken}, engine.ExpectationFailed, 8, []bool{true, false},
			`[[{"path":"context.judge.verdict","value":"APPROVE"}],[{"path":"context.judge.verdict","value":"APPROVE"}]]`, []string{"", "invalid operation"}},
		// A failed execution wins the exit code: 1, the likelier cause.
		{"a judge that failed", "", true, nil, engine.ExpectationFailed, engine.ExitFailed, []bool{false}, `[[{"path":"context.judge.verdict","value":null,"missing":true}]]`, []string{"cannot fetch verdict from nil"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log := events.NewLog(nil)
			expect := append(append([]*ensemble.Expectation{}, e.Expect...), tc.extra...)
			r := engine.New(e, "", engine.Options{Runner: runner(tc.verdict, tc.fail), Expect: expect, Events: log.Sink()})
			res := r.Run(context.Background())
			if res.CompletionReason != tc.reason || res.ExitCode() != tc.code {
				t.Fatalf("reason %s, exit %d; want %s, %d", res.CompletionReason, res.ExitCode(), tc.reason, tc.code)
			}
			if len(res.Expectations) != len(tc.held) {
				t.Fatalf("expectations %+v", res.Expectations)
			}
			var values []any
			for i, x := range res.Expectations {
				if x.Held != tc.held[i] || x.Expression != expect[i].Source || x.Where != expect[i].Where {
					t.Errorf("expectation %d: %+v", i, x)
				}
				if tc.errs[i] == "" && x.Error != "" || !strings.Contains(x.Error, tc.errs[i]) {
					t.Errorf("expectation %d: error %q, want %q", i, x.Error, tc.errs[i])
				}
				values = append(values, x.Values)
			}
			if got, _ := json.Marshal(values); string(got) != tc.values {
				t.Errorf("values %s\nwant %s", got, tc.values)
			}
			evs := log.Events()
			last, checked := evs[len(evs)-1], evs[len(evs)-2]
			if last.Type != events.RunCompleted || last.Message != tc.reason || checked.Type != events.ExpectationsChecked ||
				checked.Message != map[bool]string{true: "held", false: "failed"}[tc.reason == engine.Completed] {
				t.Errorf("last events %s %q, %s %q", checked.Type, checked.Message, last.Type, last.Message)
			}
			// The saved run keeps them with its reason; its result shows
			// them again without checking anything.
			f := r.File(res.CompletionReason)
			f.Stopped = r.Stopped()
			if f.Stopped == nil || len(f.Stopped.Expectations) != len(tc.held) {
				t.Fatalf("stopped %+v", f.Stopped)
			}
			_, saved := engine.SavedResult(e, f)
			if saved.CompletionReason != tc.reason || fmt.Sprint(saved.Expectations) != fmt.Sprint(res.Expectations) || len(saved.HeldBack) != len(res.HeldBack) {
				t.Errorf("saved result: %s %+v, held back %+v", saved.CompletionReason, saved.Expectations, saved.HeldBack)
			}
			var b strings.Builder
			if err := res.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), `"expectations": [`) {
				t.Errorf("the JSON result has no expectations:\n%s", b.String())
			}
		})
	}
}

// A run that does not complete does not check its expectations: it ends
// with its own reason, and its result has none.
func TestExpectationsWaitForCompletion(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, reviewYAML)
	log := events.NewLog(nil)
	res := engine.New(e, "", engine.Options{Runner: scripted{}, Expect: e.Expect, MaxTurns: 2, Events: log.Sink()}).Run(context.Background())
	if res.CompletionReason != engine.MaxTotalTurns || res.Expectations != nil || res.ExitCode() != engine.ExitMaxTurns {
		t.Fatalf("%s %+v", res.CompletionReason, res.Expectations)
	}
	for _, ev := range log.Events() {
		if ev.Type == events.ExpectationsChecked {
			t.Fatalf("event %+v", ev)
		}
	}
	// Without Options.Expect (a child ensemble's run), nothing is checked.
	res = engine.New(e, "", engine.Options{Runner: scripted{}}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.Expectations != nil {
		t.Fatalf("%s %+v", res.CompletionReason, res.Expectations)
	}
}

// A long value an expectation read is cut in its result, whole in the
// final state.
func TestExpectationValuesAreCut(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, reviewYAML)
	for _, verdict := range []string{strings.Repeat("é", 3000), strings.Repeat(`"`, 900)} {
		r := engine.New(e, "", engine.Options{Expect: e.Expect, Runner: scripted{
			"judge": func(*agentpkg.Request) (any, error) { return map[string]any{"verdict": verdict}, nil },
		}})
		res := r.Run(context.Background())
		if res.CompletionReason != engine.ExpectationFailed || len(res.Expectations) != 1 || len(res.Expectations[0].Values) != 1 {
			t.Fatalf("%s %+v", res.CompletionReason, res.Expectations)
		}
		v := res.Expectations[0].Values[0]
		s, _ := v.Value.(string)
		if !v.Cut || !strings.HasSuffix(s, "…") || len(s) > 1003 || !strings.HasPrefix(verdict, strings.TrimSuffix(s, "…")) {
			t.Errorf("value %d bytes, cut %t: %.40q", len(s), v.Cut, s)
		}
	}
}
