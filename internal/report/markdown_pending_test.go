package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
)

func TestMarkdownListsPendingInput(t *testing.T) {
	t.Parallel()
	res := &engine.Result{Ensemble: "approval", CompletionReason: engine.AwaitingInput, AgentExecutionCount: map[string]int{},
		PendingInput: []engine.PendingInput{{Agent: "approver", Question: "Publish?", Turn: 2}}}
	var b bytes.Buffer
	if err := Markdown(&b, res, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**awaiting\\_input** (exit code 5)", "## Waiting for input", "- `approver` (its answer goes into turn 2): Publish?"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	var s bytes.Buffer
	Summary(&s, res, SummaryOptions{})
	if !strings.Contains(s.String(), "awaiting_input") || !strings.Contains(s.String(), "--answer AGENT=TEXT") {
		t.Errorf("summary:\n%s", s.String())
	}
}

func TestProgressSaysWhoWaits(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := NewProgress(&out, ProgressOptions{})
	p.Event(events.Event{Type: events.TurnStarted, Turn: 2, Agents: []string{"approver"}})
	p.Event(events.Event{Type: events.InputRequested, Turn: 2, Agent: "approver", Question: "Publish\nthis?"})
	if want := "turn 2: approver\n  ? approver waits for an answer: Publish this?\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}
