package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

func TestTerminalSafe(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plain text, é 日本 →", "plain text, é 日本 →"},
		{"lines\nand\ttabs", "lines\nand\ttabs"},
		{"hi\x1b[31mRED", `hi\x1b[31mRED`},
		{"bell\a cr\r nul\x00 del\x7f", `bell\x07 cr\x0d nul\x00 del\x7f`},
		{"c1 \u009b31m next\u0085", `c1 \u009b31m next\u0085`},
		{"raw \x9b byte", `raw \x9b byte`},
		{"title \x1b]0;pwned\x07", `title \x1b]0;pwned\x07`},
	} {
		if got := TerminalSafe(tt.in); got != tt.want {
			t.Errorf("TerminalSafe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Nothing a model, a script or a file sends reaches the terminal as a
// control character: not in progress lines, the summary, its warnings or
// the stderr tails.
func TestTextOutputEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	const evil = "hi\x1b[31mRED\x9b"
	var out bytes.Buffer
	c := &clock{}
	p := NewProgress(&out, ProgressOptions{Stream: true, Now: c.Now})
	feed(p, c,
		timed{0, events.Event{Type: events.TurnStarted, Turn: 1, Agents: []string{"writer"}}},
		timed{10, events.Event{Type: events.AgentStarted, Turn: 1, Agent: "writer", Execution: 1}},
		timed{20, events.Event{Type: events.ToolCallStarted, Turn: 1, Agent: "writer", Tool: "t", Arguments: evil}},
		timed{30, events.Event{Type: events.ToolCallCompleted, Turn: 1, Agent: "writer", Tool: "t", Output: evil}},
		timed{40, events.Event{Type: events.TextDelta, Turn: 1, Agent: "writer", Message: evil + "\n" + evil}},
		timed{50, events.Event{Type: events.AgentCompleted, Turn: 1, Agent: "writer", Output: evil, Error: evil}},
		timed{60, events.Event{Type: events.AgentFailed, Turn: 1, Agent: "writer", Error: evil}},
		timed{70, events.Event{Type: events.Warning, Agent: "writer", Message: "did you mean `abcdefghijk\x1b[31m`"}},
		timed{80, events.Event{Type: events.RunCompleted}},
	)
	res := &engine.Result{Ensemble: "e", CompletionReason: engine.Completed, AgentExecutionCount: map[string]int{"writer": 1},
		Output:              evil,
		FinalState:          map[string]any{"writer": evil, "obj": map[string]any{"abcdefghijk\x1b[31m": 1}},
		Warnings:            []state.Warning{{TurnNumber: 1, AgentName: "writer", Expression: "context.writer.x", Message: "did you mean `abcdefghijk\x1b[31m`"}},
		Errors:              []engine.RunError{{TurnNumber: 1, AgentName: "writer", Message: evil}},
		ConversationHistory: []*state.Record{{TurnNumber: 1, AgentName: "writer", Execution: 1, OutputData: evil, Stderr: "script says " + evil + "\n"}},
	}
	Summary(&out, res, SummaryOptions{})
	Summary(&out, res, SummaryOptions{Quiet: true})
	StderrTails(&out, res)
	got := out.String()
	if i := strings.IndexFunc(got, func(r rune) bool { return r == 0x1b || r == 0x9b || r == '\uFFFD' }); i >= 0 {
		t.Fatalf("a control character reaches the terminal at %d:\n%q", i, got)
	}
	if !strings.Contains(got, `hi\x1b[31mRED\x9b`) {
		t.Errorf("the escape is not shown:\n%s", got)
	}
}
