package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ensemble-run/ensemble/engine"
)

// StderrTails is what --verbose adds to the text summary: the stderr
// tail each execution kept, indented under it, in the order they ran.
func StderrTails(w io.Writer, res *engine.Result) {
	w = TerminalWriter(w)
	header := false
	for _, rec := range res.ConversationHistory {
		if rec.Stderr == "" {
			continue
		}
		if !header {
			fmt.Fprintln(w, "stderr:")
			header = true
		}
		fmt.Fprintf(w, "  turn %d, %s (execution %d):\n", rec.TurnNumber, rec.AgentName, rec.Execution)
		for line := range strings.Lines(rec.Stderr) {
			fmt.Fprintf(w, "    %s\n", strings.TrimRight(line, "\r\n"))
		}
	}
}
