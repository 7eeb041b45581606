package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/internal/answers"
)

// answerFlags are the flags of resume that answer questions
// (docs/semantics.md#ask-agents-that-wait; package answers).
type answerFlags struct {
	answer  []string // --answer AGENT=TEXT
	answers string   // --answers FILE
}

func (a *answerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&a.answer, "answer", nil, "answer an agent the run waits for, `AGENT=TEXT` (repeatable; JSON text is read as JSON)")
	fl.StringVar(&a.answers, "answers", "", "answers from a YAML `FILE` mapping agents to answers")
}

// parse returns the answers by agent; nil when none was given.
func (a *answerFlags) parse() (map[string]string, error) {
	out := map[string]string{}
	if a.answers != "" {
		switch err := answers.ReadFile(a.answers, out); {
		case errors.Is(err, answers.ErrNoAnswer):
			return nil, usageErr("--answers %v", err)
		case err != nil:
			return nil, usageErr("--answers: %v", err)
		}
	}
	if err := answers.Parse(out, a.answer); err != nil {
		return nil, usageErr("%v", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
