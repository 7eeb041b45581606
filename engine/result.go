package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/jsonw"
	"github.com/ensemble-run/ensemble/internal/resolver"
	"github.com/ensemble-run/ensemble/state"
)

// Result is the result object of docs/cli.md#the-result.
type Result struct {
	Ensemble            string         `json:"ensemble"`
	Input               string         `json:"input"`
	CompletionReason    string         `json:"completion_reason"`
	TurnCount           int            `json:"turn_count"`
	AgentExecutionCount map[string]int `json:"agent_execution_count"`
	FinalState          map[string]any `json:"final_state"`
	// Output is what the ensemble returns to its callers when its file
	// names an agent in output: (docs/cli.md#the-result): that agent's
	// output, the value under its state key in FinalState. Absent (nil)
	// when the file has no output:, and when that agent has no output (it
	// never ran, or only failed or was skipped: SetOutput).
	Output              any             `json:"output,omitempty"`
	ConversationHistory []*state.Record `json:"conversation_history"`
	Errors              []RunError      `json:"errors"`
	Warnings            []state.Warning `json:"warnings"`
	Usage               state.Usage     `json:"usage"`
	// UsageByAgent is each agent's spend (its fan-out instances' included),
	// for the agents that made model requests; absent when none did.
	UsageByAgent map[string]*state.Usage `json:"usage_by_agent,omitempty"`
	// HeldBack are the agents a completed run held back: ready again, but
	// at their limit of executions; absent when none was.
	HeldBack        []HeldBack `json:"held_back,omitempty"`
	DurationSeconds float64    `json:"duration_seconds"`
	// PendingInput are the questions an awaiting_input run waits for
	// (docs/semantics.md#ask-agents-that-wait); absent otherwise.
	PendingInput []PendingInput `json:"pending_input,omitempty"`
	// Parent is the run a fork was started from, and the turn
	// (docs/semantics.md#forks); absent for a run that is no fork.
	Parent *state.Parent `json:"parent,omitempty"`
	// Expectations are the run's expectations as its completion checked
	// them (docs/semantics.md#expectations); absent when it checked none.
	Expectations []Expectation `json:"expectations,omitempty"`
}

// HeldBack is an agent that was ready again when its run completed, but
// had run as often as its limit lets it: a loop that was meant to go round
// again, most likely (conversation.max_turns defaults to 1).
type HeldBack struct {
	AgentName  string `json:"agent_name"`
	Executions int    `json:"executions"`
	// Skips are its rounds skipped by its when: guard, which count
	// towards the limit as executions do.
	Skips int `json:"skips,omitempty"`
	// Limit names the limit that held it: conversation.max_turns, or
	// conversation_limits.max_agent_executions.
	Limit string `json:"limit"`
}

// RunError is one entry of the result's errors: a failed execution, or an
// execution of a turn that was interrupted.
type RunError = state.RunError

// Exit codes (docs/semantics.md#end-of-a-run-and-exit-codes).
const (
	ExitOK       = 0
	ExitFailed   = 1
	ExitUsage    = 2
	ExitMaxTurns = 3
	ExitTimeout  = 4
	ExitBudget   = 6
	ExitStrict   = 7 // run --strict and a read of a missing key (StrictWarning)
	// ExitExpectation: a completed run's expectation is false
	// (expectation_failed), and no execution failed.
	ExitExpectation = 8
	ExitCancelled   = 130
)

// ExitCode is the process exit code for this result (docs/semantics.md#end-of-a-run-and-exit-codes).
func (r *Result) ExitCode() int {
	switch r.CompletionReason {
	case MaxTotalTurns:
		return ExitMaxTurns
	case Timeout:
		return ExitTimeout
	case Cancelled:
		return ExitCancelled
	case AwaitingInput:
		return ExitAwaitingInput
	case BudgetExceeded:
		return ExitBudget
	case StrictWarning:
		return ExitStrict
	}
	for _, e := range r.Errors {
		if !e.Handled {
			return ExitFailed // before ExitExpectation: the likelier cause
		}
	}
	if r.CompletionReason == ExpectationFailed {
		return ExitExpectation
	}
	return ExitOK
}

// finish builds the result and emits run_completed.
func (r *Run) finish(reason string) *Result {
	st := r.st
	res := &Result{
		Ensemble:            r.ens.Name,
		Input:               st.Input,
		CompletionReason:    reason,
		TurnCount:           st.TurnCount,
		AgentExecutionCount: st.ExecutionCounts(),
		FinalState:          st.Context(),
		ConversationHistory: st.History(),
		Errors:              []RunError{},
		Warnings:            st.Warnings(),
		DurationSeconds:     r.now().Sub(r.started).Seconds(),
	}
	if res.ConversationHistory == nil {
		res.ConversationHistory = []*state.Record{}
	}
	if res.Warnings == nil {
		res.Warnings = []state.Warning{}
	}
	var handled map[state.ExecutionRef]bool
	for _, rec := range st.History() {
		for _, h := range rec.Handles {
			if handled == nil {
				handled = map[state.ExecutionRef]bool{}
			}
			handled[h] = true
		}
	}
	for _, rec := range st.History() {
		res.Usage.Add(rec.Usage)
		if rec.Error != nil {
			// A fan-out instance's failure is handled with its agent's
			// execution, which it failed (on_error: fail).
			who := rec.AgentName
			if rec.Of != "" {
				who = rec.Of
			}
			res.Errors = append(res.Errors, RunError{TurnNumber: rec.TurnNumber, AgentName: rec.AgentName, Message: *rec.Error,
				Handled: handled[state.ExecutionRef{AgentName: who, Execution: rec.Execution}]})
		}
	}
	res.Errors = append(res.Errors, r.interrupted...)
	res.Usage.Add(&r.interruptedUsage)
	if reason == AwaitingInput {
		res.PendingInput = r.pendingInput
		if res.PendingInput == nil { // a saved run's (suspend.go)
			res.PendingInput = r.PendingInput()
		}
	}
	res.SetOutput(r.ens)
	res.UsageByAgent = r.usageByAgent()
	if reason == Completed || reason == ExpectationFailed {
		res.HeldBack = HeldBackIn(r.ens, r.st)
	}
	if reason == Completed && len(r.opts.Expect) > 0 {
		r.expect(res) // may make it expectation_failed
	} else {
		res.Expectations = r.expectations // a saved run's (SavedResult)
	}
	r.endTrace(res)
	r.opts.Events.Emit(events.Event{Type: events.RunCompleted, Turn: st.TurnCount, Message: res.CompletionReason, Result: res})
	return res
}

// WriteJSON writes r as one indented JSON document, the same bytes as a
// json.Encoder with SetIndent("", "  ") would write, but record by record:
// the history is never encoded whole in memory, so printing a long run costs
// the size of its largest record, not a copy of the whole result
// (docs/performance.md). Lists that are nil are written as [] (a result
// always has its lists).
//
// A *bufio.Writer is written through as it is (and flushed), so that a
// program printing many results reuses one buffer.
func (r *Result) WriteJSON(w io.Writer) error { return r.writeJSON(w, false) }

// WriteCompactJSON writes r as WriteJSON does, compact: the bytes of
// json.Marshal, without a newline at the end (a batch's result line).
func (r *Result) WriteCompactJSON(w io.Writer) error { return r.writeJSON(w, true) }

// WritesAsMarshal reports whether WriteCompactJSON writes r as json.Marshal
// does: when none of its lists is nil, which json.Marshal writes as null
// and WriteCompactJSON as [] (a run's result never has one nil).
func (r *Result) WritesAsMarshal() bool {
	return r != nil && r.ConversationHistory != nil && r.Errors != nil && r.Warnings != nil
}

func (r *Result) writeJSON(w io.Writer, compact bool) error {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	// The layout: a line and an indent before each field and record and
	// before the closing brace and bracket, ": " after a key; nothing
	// but ":" when compact.
	nl, nlRecord, nlEnd, colon, prefix, indent := "\n  ", "\n    ", "\n", ": ", "  ", "  "
	if compact {
		nl, nlRecord, nlEnd, colon, prefix, indent = "", "", "", ":", "", ""
	}
	var buf []byte
	first := true
	key := func(key string) {
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.WriteString(nl)
		bw.WriteString("\"" + key + "\"")
		bw.WriteString(colon)
	}
	put := func(k string, v any) error {
		var err error
		buf, err = jsonw.AppendIndent(buf[:0], v, prefix, indent, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		key(k)
		bw.Write(buf)
		return nil
	}
	history, errs, warns := r.ConversationHistory, r.Errors, r.Warnings
	if errs == nil {
		errs = []RunError{}
	}
	if warns == nil {
		warns = []state.Warning{}
	}
	bw.WriteByte('{')
	fields := []struct {
		key string
		v   any
	}{
		{"ensemble", r.Ensemble},
		{"input", r.Input},
		{"completion_reason", r.CompletionReason},
		{"turn_count", r.TurnCount},
		{"agent_execution_count", r.AgentExecutionCount},
		{"final_state", r.FinalState},
	}
	if r.Output != nil {
		fields = append(fields, struct {
			key string
			v   any
		}{"output", r.Output})
	}
	for _, f := range fields {
		if err := put(f.key, f.v); err != nil {
			return err
		}
	}
	key("conversation_history")
	if len(history) == 0 {
		bw.WriteString("[]")
	} else {
		bw.WriteByte('[')
		recPrefix := "    "
		if compact {
			recPrefix = ""
		}
		for i, rec := range history {
			var err error
			buf, err = rec.AppendIndent(buf[:0], recPrefix, indent)
			if err != nil {
				return fmt.Errorf("conversation_history[%d]: %w", i, err)
			}
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString(nlRecord)
			bw.Write(buf)
		}
		bw.WriteString(nl)
		bw.WriteByte(']')
	}
	for _, f := range []struct {
		key string
		v   any
	}{{"errors", errs}, {"warnings", warns}, {"usage", r.Usage}} {
		if err := put(f.key, f.v); err != nil {
			return err
		}
	}
	if len(r.UsageByAgent) > 0 {
		if err := put("usage_by_agent", r.UsageByAgent); err != nil {
			return err
		}
	}
	if len(r.HeldBack) > 0 {
		if err := put("held_back", r.HeldBack); err != nil {
			return err
		}
	}
	if err := put("duration_seconds", r.DurationSeconds); err != nil {
		return err
	}
	if len(r.PendingInput) > 0 {
		if err := put("pending_input", r.PendingInput); err != nil {
			return err
		}
	}
	if r.Parent != nil {
		if err := put("parent", r.Parent); err != nil {
			return err
		}
	}
	if len(r.Expectations) > 0 {
		if err := put("expectations", r.Expectations); err != nil {
			return err
		}
	}
	bw.WriteString(nlEnd)
	bw.WriteByte('}')
	if !compact {
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// SetOutput sets r.Output from r.FinalState: the output of the agent e's
// output: names (ensemble.ResultOf), or nil when e has no output: or that
// agent has no output in the final state. Run.Result sets it; a result
// read from a saved run without its ensemble (durable.Result) is given it
// here once the ensemble is loaded, as state show does.
func (r *Result) SetOutput(e *ensemble.Ensemble) {
	r.Output = nil
	if e == nil || e.Output == "" {
		return
	}
	if v, ok := e.ResultOf(r.FinalState); ok {
		r.Output = v
	}
}

// HeldBackIn are the agents of e that were ready again when the run of st
// ended, but at their limits (resolver.HeldBack): what a completed run's
// result lists.
func HeldBackIn(e *ensemble.Ensemble, st *state.State) []HeldBack {
	agents, err := resolver.HeldBack(context.Background(), e, st)
	if err != nil {
		return nil
	}
	var out []HeldBack
	for _, a := range agents {
		n := st.Executions(a.Name) + st.Skips(a.Name) // as the resolver counts
		limit := "conversation.max_turns"
		if m, ok := e.Limits.MaxAgentExecutions[a.Name]; ok && n >= m {
			limit = "conversation_limits.max_agent_executions"
		}
		out = append(out, HeldBack{AgentName: a.Name, Executions: st.Executions(a.Name), Skips: st.Skips(a.Name), Limit: limit})
	}
	return out
}
