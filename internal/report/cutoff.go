package report

import (
	"fmt"
	"io"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
)

// stopMaxTokens is the stop reason of a reply cut off at its model
// profile's max_tokens (the LLM kind's StopMaxTokens).
const stopMaxTokens = "max_tokens"

// cutOff reports whether rec's reply was cut off at max_tokens.
func cutOff(rec *state.Record) bool {
	return rec.StopReason != nil && *rec.StopReason == stopMaxTokens
}

// cutOffs marks, in the summary, each execution whose reply was cut off at
// max_tokens: its output (if any) is only the start of what the model
// meant to say.
func cutOffs(w io.Writer, res *engine.Result, width int) {
	for _, rec := range res.ConversationHistory {
		if !cutOff(rec) {
			continue
		}
		what := "its output is the text so far"
		if rec.Error != nil {
			what = "it failed"
		}
		paragraph(w, "", "  ", fmt.Sprintf("cut off: turn %d, %s: the reply stopped at the model profile's max_tokens, and %s",
			rec.TurnNumber, rec.AgentName, what), width)
	}
}
