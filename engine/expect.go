package engine

import (
	"context"
	"fmt"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/state"
)

// ExpectationFailed is the completion reason of a run that completed with
// an expectation that does not hold (docs/semantics.md#expectations).
const ExpectationFailed = "expectation_failed"

// Expectation is one of the result's expectations: how a completed run's
// expectation was checked.
type Expectation = state.Expectation

// expect checks the run's expectations (Options.Expect) over the final
// state of res, a completed run's result: it fills res.Expectations and,
// when one does not hold, makes res end expectation_failed. It emits
// expectations_checked.
func (r *Run) expect(res *Result) {
	if len(r.opts.Expect) == 0 {
		return
	}
	final := &conditions.Final{
		Env:      conditions.Env{Context: res.FinalState, TurnCount: res.TurnCount, Executions: res.AgentExecutionCount, Input: res.Input},
		HeldBack: make([]string, 0, len(res.HeldBack)),
		Errors:   make([]any, 0, len(res.Errors)),
	}
	for _, h := range res.HeldBack {
		final.HeldBack = append(final.HeldBack, h.AgentName)
	}
	for _, e := range res.Errors {
		final.Errors = append(final.Errors, map[string]any{"turn_number": e.TurnNumber, "agent_name": e.AgentName, "message": e.Message, "handled": e.Handled})
	}
	held := true
	for _, x := range r.opts.Expect {
		p := opaque.Get(x.Program)
		if p.UsesHistory && final.History == nil {
			final.History = r.st.HistoryValues()
		}
		ok, err := p.EvalContext(context.Background(), final)
		got := Expectation{Expression: x.Source, Where: x.Where, Held: ok && err == nil, Values: []state.ExpectationValue{}}
		if err != nil {
			got.Error = r.opts.Secrets.String(err.Error())
		}
		for _, rd := range p.Reads(final) {
			got.Values = append(got.Values, expectationValue(rd))
		}
		held = held && got.Held
		res.Expectations = append(res.Expectations, got)
	}
	r.expectations = res.Expectations
	msg := "held"
	if !held {
		msg = "failed"
		res.CompletionReason = ExpectationFailed
	}
	r.opts.Events.Emit(events.Event{Type: events.ExpectationsChecked, Turn: res.TurnCount, Message: msg, Expectations: res.Expectations})
}

// expectationValue is a value read as the result keeps it: cut past
// state.MaxExpectationValue bytes of JSON.
func expectationValue(rd conditions.Read) state.ExpectationValue {
	v := state.ExpectationValue{Path: rd.Path, Value: rd.Value, Missing: rd.Missing}
	if rd.Missing {
		return v
	}
	if s := jsonvalue.Compact(rd.Value); len(s) > state.MaxExpectationValue {
		if str, ok := rd.Value.(string); ok {
			s = str
		}
		// A string is cut as it is, which may be shorter than its JSON.
		cut := min(state.MaxExpectationValue, len(s))
		for cut > 0 && cut < len(s) && (s[cut]&0xC0) == 0x80 { // not inside a character
			cut--
		}
		v.Value, v.Cut = fmt.Sprint(s[:cut], "…"), true
	}
	return v
}
