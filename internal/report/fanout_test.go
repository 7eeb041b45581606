package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// A fan-out's instances are shown as instances of their agent, and counted
// in its row of the summaries, not as executions of their own.
func TestFanOutInReports(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom").Error()
	zero, one := 0, 1
	res := &engine.Result{Ensemble: "fan", CompletionReason: engine.Completed, TurnCount: 1,
		AgentExecutionCount: map[string]int{"sum": 1},
		ConversationHistory: []*state.Record{
			{TurnNumber: 1, AgentName: "sum[0]", Instance: &zero, Of: "sum", Execution: 1, OutputData: "a", Usage: &state.Usage{Requests: 1, InputTokens: 10, OutputTokens: 2}},
			{TurnNumber: 1, AgentName: "sum[1]", Instance: &one, Of: "sum", Execution: 1, Error: &boom},
			{TurnNumber: 1, AgentName: "sum", Execution: 1, OutputData: []any{"a", nil}, ExecutionTime: 1.5},
		},
		Errors: []engine.RunError{{TurnNumber: 1, AgentName: "sum[1]", Message: boom}},
		Usage:  state.Usage{Requests: 1, InputTokens: 10, OutputTokens: 2},
	}
	var md bytes.Buffer
	if err := Markdown(&md, res, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| executions | 1 (0 failed) |", "| fan-out instances | 2 (1 failed) |",
		"### ✗ `sum[1]` #1\n\ninstance 1 of `sum`", "| `sum` | - | 1 (2 instances) | 0 (1 failed instance) | 1.50s | 1.50s | 0 | 1 | 10 | 2 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
	// The text summary gives the instances columns of their own, so that
	// the runs of every agent stay aligned.
	res.ConversationHistory = append([]*state.Record{{TurnNumber: 1, AgentName: "split", Execution: 1, OutputData: "x", ExecutionTime: 0.25}}, res.ConversationHistory...)
	res.Usage = state.Usage{}
	res.ConversationHistory[1].Usage = nil
	var txt bytes.Buffer
	Summary(&txt, res, SummaryOptions{})
	want := `
  agent  runs  failed  instances  failed instances    time
  split     1       -          -                 -   0.25s
  sum       1       -          2                 1   1.50s
`
	if !strings.Contains(txt.String(), want[1:]) {
		t.Errorf("summary:\n%s\nwant the table\n%s", txt.String(), want[1:])
	}
	// Without a failed instance there is no column for them.
	res.ConversationHistory[2].Error = nil
	txt.Reset()
	Summary(&txt, res, SummaryOptions{})
	want = `
  agent  runs  failed  instances    time
  split     1       -          -   0.25s
  sum       1       -          2   1.50s
`
	if !strings.Contains(txt.String(), want[1:]) {
		t.Errorf("summary:\n%s\nwant the table\n%s", txt.String(), want[1:])
	}
}

// On the status line, a fan-out agent stands for its instances once they
// start: each with its time, and done when it returned.
func TestFanOutProgress(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	c := &clock{}
	p := NewProgress(&out, ProgressOptions{Live: true, Now: c.Now, Width: func() int { return 200 }})
	feed(p, c,
		timed{0, events.Event{Type: events.TurnStarted, Turn: 2, Agents: []string{"sum", "other"}}},
		timed{10, events.Event{Type: events.AgentStarted, Turn: 2, Agent: "sum[0]", Execution: 1}},
		timed{10, events.Event{Type: events.AgentStarted, Turn: 2, Agent: "sum[1]", Execution: 1}},
		timed{20, events.Event{Type: events.AgentFinished, Turn: 2, Agent: "sum[0]", Execution: 1}},
	)
	c.now = at(100)
	p.Tick()
	if got, want := lastStatus(out.String()), "⠋ turn 2 0.1s · sum[1] 0.1s · 1 done · 1 waiting"; got != want {
		t.Fatalf("status %q\nwant   %q", got, want)
	}
}
