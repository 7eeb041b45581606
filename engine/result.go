package engine

import (
	"time"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// Result is the result object of docs/cli.md#the-result.
type Result struct {
	Ensemble            string          `json:"ensemble"`
	Input               string          `json:"input"`
	CompletionReason    string          `json:"completion_reason"`
	TurnCount           int             `json:"turn_count"`
	AgentExecutionCount map[string]int  `json:"agent_execution_count"`
	FinalState          map[string]any  `json:"final_state"`
	ConversationHistory []*state.Record `json:"conversation_history"`
	Errors              []RunError      `json:"errors"`
	Warnings            []state.Warning `json:"warnings"`
	Usage               state.Usage     `json:"usage"`
	DurationSeconds     float64         `json:"duration_seconds"`
}

// RunError is one entry of the result's errors: a failed execution, or an
// execution of a turn that was interrupted.
type RunError struct {
	TurnNumber int    `json:"turn_number"`
	AgentName  string `json:"agent_name"`
	Message    string `json:"message"`
}

// Exit codes (docs/semantics.md#end-of-a-run-and-exit-codes).
const (
	ExitOK        = 0
	ExitFailed    = 1
	ExitUsage     = 2
	ExitMaxTurns  = 3
	ExitTimeout   = 4
	ExitCancelled = 130
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
	}
	if len(r.Errors) > 0 {
		return ExitFailed
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
		AgentExecutionCount: st.AgentExecutionCount,
		FinalState:          st.AccumulatedContext,
		ConversationHistory: st.History,
		Errors:              []RunError{},
		Warnings:            st.Warnings,
		DurationSeconds:     time.Since(r.started).Seconds(),
	}
	if res.ConversationHistory == nil {
		res.ConversationHistory = []*state.Record{}
	}
	if res.Warnings == nil {
		res.Warnings = []state.Warning{}
	}
	for _, rec := range st.History {
		res.Usage.Add(rec.Usage)
		if rec.Error != nil {
			res.Errors = append(res.Errors, RunError{TurnNumber: rec.TurnNumber, AgentName: rec.AgentName, Message: *rec.Error})
		}
	}
	res.Errors = append(res.Errors, r.interrupted...)
	res.Usage.Add(&r.interruptedUsage)
	r.opts.Events.Emit(events.Event{Type: events.RunCompleted, Turn: st.TurnCount, Message: reason, Result: res})
	return res
}
