package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	askkind "github.com/ensemble-run/ensemble/kinds/ask"
	llmkind "github.com/ensemble-run/ensemble/kinds/llm"
	scriptkind "github.com/ensemble-run/ensemble/kinds/script"
	"github.com/ensemble-run/ensemble/state"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

// sample is a run with everything a report shows: an LLM agent with tool
// calls and usage, a failed script, a human, an agent that never ran, a
// warning, an interrupted turn, and text that would break naive Markdown.
func sample() (*engine.Result, MarkdownOptions) {
	e := &ensemble.Ensemble{Name: "review-loop", Description: "Draft, check, ask | repeat <fast>.", Agents: []*ensemble.Agent{
		{Name: "writer", Kind: llmkind.Kind{}, Spec: &llmkind.Spec{Tools: []string{"lookup", "broken", "search"}}},
		{Name: "checker", Kind: scriptkind.Kind{}},
		{Name: "human", Kind: askkind.Kind{}},
		{Name: "publisher", Kind: scriptkind.Kind{}},
	}}
	e.Index()
	res := &engine.Result{
		Ensemble:            "review-loop",
		Input:               "Write about Q3.\nKeep it `short`.",
		CompletionReason:    engine.Timeout,
		TurnCount:           2,
		AgentExecutionCount: map[string]int{"writer": 2, "checker": 1, "human": 1},
		FinalState: map[string]any{
			"writer": "Here is code:\n```go\nfmt.Println(1)\n```",
			"human":  map[string]any{"ok": true},
		},
		ConversationHistory: []*state.Record{
			{TurnNumber: 1, AgentName: "writer", Execution: 1, Timestamp: at(10), ExecutionTime: 0.89,
				InputData:  []any{map[string]any{"role": "user", "content": "Write about Q3."}},
				OutputData: "EMEA grew 12% | APAC *shrank*", StopReason: ptr("end_turn"),
				Usage: &state.Usage{Requests: 2, InputTokens: 1500, OutputTokens: 120}},
			{TurnNumber: 1, AgentName: "checker", Execution: 1, Timestamp: at(20), ExecutionTime: 0.48,
				InputData: map[string]any{"agent": "checker", "turn": 1}, Error: ptr("exit status 2:\nbad draft")},
			{TurnNumber: 2, AgentName: "human", Execution: 1, Timestamp: at(3000), ExecutionTime: 2,
				InputData: map[string]any{"agent": "human"}, OutputData: map[string]any{"ok": true}},
			{TurnNumber: 2, AgentName: "writer", Execution: 2, Timestamp: at(3000), ExecutionTime: 1.25,
				InputData:  []any{map[string]any{"role": "user", "content": "human: {\"ok\":true}"}},
				OutputData: "Here is code:\n```go\nfmt.Println(1)\n```", StopReason: ptr("end_turn"),
				Usage: &state.Usage{Requests: 1, InputTokens: 1800, OutputTokens: 60}},
		},
		Errors: []engine.RunError{
			{TurnNumber: 1, AgentName: "checker", Message: "exit status 2:\nbad draft"},
			{TurnNumber: 3, AgentName: "checker", Message: "stopped before it finished: the run reached its timeout"},
		},
		Warnings: []state.Warning{{TurnNumber: 2, AgentName: "publisher", Dependency: "checker",
			Message: "condition of publisher ← checker (context.checker.ok) failed, counted as false: <nil> has no field ok"}},
		Usage:           state.Usage{Requests: 3, InputTokens: 3300, OutputTokens: 180},
		DurationSeconds: 64.5,
	}
	evs := []events.Event{
		{Type: events.RunStarted, Time: t0},
		{Type: events.ToolCallStarted, Turn: 1, Agent: "writer", Execution: 1, Tool: "lookup", ToolID: "c1", Arguments: `{"region": "EMEA"}`},
		{Type: events.ToolCallStarted, Turn: 1, Agent: "writer", Execution: 1, Tool: "broken", ToolID: "c2", Arguments: `not json`},
		{Type: events.ToolCallCompleted, Turn: 1, Agent: "writer", Execution: 1, Tool: "broken", ToolID: "c2", Error: "arguments are not valid JSON", Duration: 0},
		{Type: events.ToolCallCompleted, Turn: 1, Agent: "writer", Execution: 1, Tool: "lookup", ToolID: "c1", Output: `{"sales": 12}`, Duration: 0.1},
		{Type: events.ToolCallStarted, Turn: 2, Agent: "writer", Execution: 2, Tool: "search", ToolID: "c3",
			Arguments: `{"query": "` + strings.Repeat("long ", 30) + `"}`},
		{Type: events.ToolCallCompleted, Turn: 2, Agent: "writer", Execution: 2, Tool: "search", ToolID: "c3", Output: "plain text result", Duration: 0.3},
		{Type: events.ToolCallStarted, Turn: 3, Agent: "writer", Execution: 3, Tool: "lookup", ToolID: "c4", Arguments: `{}`},
	}
	return res, MarkdownOptions{Ensemble: e, Events: evs}
}

func TestMarkdownReport(t *testing.T) {
	res, opts := sample()
	var b bytes.Buffer
	if err := Markdown(&b, res, opts); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md.golden", b.String())
}

func TestMarkdownReportWithoutContext(t *testing.T) {
	res, _ := sample()
	var b bytes.Buffer
	if err := Markdown(&b, res, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"# Run report: review-loop", "| started | 2026-01-01T12:00:00Z |", "| `checker` | - | 1 | 1 |"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(s, "publisher` |") {
		t.Error("an agent that never ran is listed without the ensemble")
	}
}

func TestRecorderKeepsToolCallsOnly(t *testing.T) {
	r := NewRecorder()
	for _, ty := range events.Types {
		r.Sink().Emit(events.Event{Type: ty})
	}
	if n := len(r.Events()); n != 3 {
		t.Fatalf("kept %d events", n)
	}
}

func TestMarkdownEscapes(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fence("text", "a\n```\nb"), "````text\na\n```\nb\n````\n"},
		{fence("json", "{}\n"), "```json\n{}\n```\n"},
		{code("a`b"), "``a`b``"},
		{code("`x`"), "`` `x` ``"},
		{code(""), "` `"},
		{code("two\nlines"), "`two lines`"},
		{inline("a|b *c* <d> [e](f) #1 & _g_"), `a\|b \*c\* &lt;d&gt; \[e\](f) \#1 &amp; \_g\_`},
		{summaryText("<b>x</b>"), "&lt;b&gt;x&lt;/b&gt;"},
		{Seconds(0.004), "0.00s"},
		{Seconds(59.994), "59.99s"},
		{Seconds(125), "2m05s"},
		{Seconds(3725), "1h02m"},
		{thousands(1234567), "1,234,567"},
		{thousands(-1000), "-1,000"},
		{thousands(999), "999"},
		{Truncate("héllo", 3), "hé…"},
		{Preview(map[string]any{"a": "<&>"}, 20), `{"a":"<&>"}`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// A resumed run's events start after the turns it resumed from: the report
// says so, and dates the run from its first execution, not from the resume.
func TestMarkdownReportOfAResumedRun(t *testing.T) {
	res, opts := sample()
	opts.Events = append([]events.Event{{Type: events.RunStarted, Turn: 1, Time: at(3_600_000)}}, opts.Events[1:]...)
	res.ConversationHistory[0].Timestamp = at(-60_000)
	var b bytes.Buffer
	if err := Markdown(&b, res, opts); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{
		"| started | 2026-01-01T11:59:00Z |",
		"| resumed | after turn 1, at 2026-01-01T13:00:00Z (the tool calls of turn 1 are not in this report) |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	// Without tools, there are no tool calls to miss.
	opts.Ensemble.Agents[0].Spec = &llmkind.Spec{}
	b.Reset()
	if err := Markdown(&b, res, opts); err != nil {
		t.Fatal(err)
	}
	if want := "| resumed | after turn 1, at 2026-01-01T13:00:00Z |\n"; !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q", want)
	}
	// A run that was not resumed has no such row.
	res, opts = sample()
	b.Reset()
	if err := Markdown(&b, res, opts); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "| resumed |") {
		t.Error("a new run is reported as resumed")
	}
}
