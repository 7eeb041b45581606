package report

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
)

// TestSummarySaysWhyARunStoppedEarly: a run that did not simply complete
// says what stopped it and what to change; an interrupted run names the
// command that continues it when there is one.
func TestSummarySaysWhyARunStoppedEarly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason, resume, want string
	}{
		{engine.Completed, "", ""},
		{engine.MaxTotalTurns, "", "pass --max-turns"},
		{engine.Timeout, "", "pass --timeout"},
		{engine.BudgetExceeded, "", "resume with --max-cost, --max-tokens or --max-requests"},
		{engine.Cancelled, "", "a run started with --state FILE can be continued with resume FILE"},
		{engine.Cancelled, "ensemble resume 'my run.json'", "the run goes on with: ensemble resume 'my run.json'"},
	} {
		var b strings.Builder
		Summary(&b, &engine.Result{Ensemble: "e", CompletionReason: tc.reason, AgentExecutionCount: map[string]int{}}, SummaryOptions{Resume: tc.resume})
		lines := strings.Split(b.String(), "\n")
		hint := strings.HasPrefix(lines[2], "  (")
		if hint != (tc.want != "") || !strings.Contains(lines[2], tc.want) {
			t.Errorf("%s %q: %q", tc.reason, tc.resume, b.String())
		}
	}
}

// TestSummaryHeadlineCounts: counts agree with their number, and a run
// that completed with failed executions says so, and which.
// instances makes records of fan-out instances of recs (named agent[i]).
func instances(recs []*state.Record) []*state.Record {
	for _, r := range recs {
		agent, i, _ := strings.Cut(strings.TrimSuffix(r.AgentName, "]"), "[")
		n, _ := strconv.Atoi(i)
		r.Of, r.Instance = agent, &n
	}
	return recs
}

func TestSummaryHeadlineCounts(t *testing.T) {
	t.Parallel()
	failed := func(agents ...string) []*state.Record {
		var recs []*state.Record
		msg := "boom"
		for i, a := range agents {
			recs = append(recs, &state.Record{TurnNumber: i + 1, AgentName: a, Error: &msg})
		}
		return recs
	}
	for _, tc := range []struct {
		turns   int
		history []*state.Record
		want    string
	}{
		{1, nil, "e: completed after 1 turn in 0.00s"},
		{2, nil, "e: completed after 2 turns in 0.00s"},
		{2, failed("fetch"), "e: completed with 1 failed execution after 2 turns in 0.00s: fetch (turn 1)"},
		{5, failed("a", "b", "c", "d", "e"), "e: completed with 5 failed executions after 5 turns in 0.00s: a (turn 1), b (turn 2), c (turn 3) and 2 more"},
		// A fan-out's instances are not executions of their own.
		{2, instances(failed("sum[1]")), "e: completed with 1 failed instance after 2 turns in 0.00s: sum[1] (turn 1)"},
		{2, append(instances(failed("sum[0]", "sum[1]")), failed("x", "sum")[1]), "e: completed with 1 failed execution and 2 failed instances after 2 turns in 0.00s: sum[0] (turn 1), sum[1] (turn 2), sum (turn 2)"},
	} {
		var b strings.Builder
		Summary(&b, &engine.Result{Ensemble: "e", CompletionReason: engine.Completed, TurnCount: tc.turns, ConversationHistory: tc.history}, SummaryOptions{})
		if got := strings.Split(b.String(), "\n")[1]; got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// TestSummaryFitsTheTerminal: at any width the table's cells are whole
// words or cut with "…", never broken inside a word by the terminal.
func TestSummaryFitsTheTerminal(t *testing.T) {
	t.Parallel()
	msg := "the model refused"
	res := &engine.Result{
		Ensemble:         "research-pipeline",
		CompletionReason: engine.Completed,
		TurnCount:        4,
		ConversationHistory: []*state.Record{
			{TurnNumber: 1, AgentName: "collect_sources_from_the_web", ExecutionTime: 1.5},
			{TurnNumber: 2, AgentName: "summarizer", ExecutionTime: 12.25, Usage: &state.Usage{Requests: 3, InputTokens: 125000, OutputTokens: 4200}},
			{TurnNumber: 3, AgentName: "summarizer", ExecutionTime: 3, Error: &msg, Usage: &state.Usage{Requests: 1, InputTokens: 900}},
			{TurnNumber: 4, AgentName: "publish", ExecutionTime: 0.02},
		},
		FinalState: map[string]any{
			"summarizer":                   "A long summary of everything that was found, in plain words, which goes on and on for a while.",
			"collect_sources_from_the_web": []any{"https://example.com/a", "https://example.com/b"},
		},
		Usage: state.Usage{Requests: 4, InputTokens: 125900, OutputTokens: 4200},
	}
	for _, width := range []int{50, 100} {
		var b strings.Builder
		Summary(&b, res, SummaryOptions{Agents: []string{"collect_sources_from_the_web", "summarizer", "publish", "never_ran"}, Width: width})
		got := b.String()
		for _, line := range strings.Split(got, "\n") {
			if len([]rune(line)) > width {
				t.Errorf("width %d: line of %d runes: %q", width, len([]rune(line)), line)
			}
		}
		golden(t, fmt.Sprintf("summary-%d.golden", width), got)
	}
}

// A failure an on: failure edge handled says so, in the headline and in
// its error line.
func TestSummaryHandledFailure(t *testing.T) {
	t.Parallel()
	msg := "503"
	res := &engine.Result{Ensemble: "e", CompletionReason: engine.Completed, TurnCount: 2,
		ConversationHistory: []*state.Record{{TurnNumber: 1, AgentName: "fetch", Error: &msg}, {TurnNumber: 2, AgentName: "cache"}},
		Errors:              []engine.RunError{{TurnNumber: 1, AgentName: "fetch", Message: msg, Handled: true}}}
	var b strings.Builder
	Summary(&b, res, SummaryOptions{})
	for _, want := range []string{"completed with 1 failed execution (1 handled) after 2 turns", "handled error: turn 1, fetch: 503"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

// TestSpendPerAgent: with pricing, the summary has a cost column and the
// report a cost line, per agent and in total, counting the spend of a turn
// that was cut short (usage_by_agent) as well as the records'.
func TestSpendPerAgent(t *testing.T) {
	t.Parallel()
	stop := "end_turn"
	res := &engine.Result{Ensemble: "e", CompletionReason: engine.BudgetExceeded, TurnCount: 1,
		AgentExecutionCount: map[string]int{"writer": 1},
		ConversationHistory: []*state.Record{{TurnNumber: 1, AgentName: "writer", Execution: 1, StopReason: &stop,
			Usage: &state.Usage{Requests: 2, InputTokens: 100, OutputTokens: 50, Cost: 0.25}}},
		Usage: state.Usage{Requests: 3, InputTokens: 150, OutputTokens: 60, Cost: 0.375},
		UsageByAgent: map[string]*state.Usage{
			"writer": {Requests: 2, InputTokens: 100, OutputTokens: 50, Cost: 0.25},
			"editor": {Requests: 1, InputTokens: 50, OutputTokens: 10, Cost: 0.125},
		},
	}
	var b strings.Builder
	Summary(&b, res, SummaryOptions{Agents: []string{"writer", "editor"}})
	for _, want := range []string{"cost", "0.25", "0.125", "usage: 3 requests, 150 input tokens, 60 output tokens, cost 0.375"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("summary lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Markdown(&b, res, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Cost: `writer` 0.25, `editor` 0.125; total 0.375.") {
		t.Fatalf("report:\n%s", b.String())
	}
}

// -q prints the final state as the run's result: whole values, however
// long; the summary without -q previews them on one line.
func TestQuietFinalStateIsWhole(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 60) + "end"
	res := &engine.Result{Ensemble: "e", CompletionReason: engine.Completed, AgentExecutionCount: map[string]int{},
		FinalState: map[string]any{"essay": long, "poem": "line one\nline two", "data": map[string]any{"n": 1, "text": long}}}
	var quiet, full strings.Builder
	Summary(&quiet, res, SummaryOptions{Quiet: true})
	Summary(&full, res, SummaryOptions{})
	want := "final state:\n  data: {\"n\":1,\"text\":\"" + long + "\"}\n  essay: " + long + "\n  poem: line one\n    line two\n"
	if quiet.String() != want {
		t.Errorf("-q:\n%s\nwant\n%s", quiet.String(), want)
	}
	if strings.Contains(full.String(), "end\n") || !strings.Contains(full.String(), "…") {
		t.Errorf("without -q the values are previews:\n%s", full.String())
	}
}

// TestSummaryOutput: the summary shows the ensemble's output on a line of
// its own (cut, or whole with -q), and says so when the file names an
// output agent that has none.
func TestSummaryOutput(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 40)
	for _, tc := range []struct {
		name   string
		output any
		agent  string
		quiet  bool
		want   string // a line of the summary; "" = no output line
	}{
		{"none named", nil, "", false, ""},
		{"object", map[string]any{"verdict": "ok"}, "judge", false, `output: {"verdict":"ok"}`},
		{"string", "approved", "judge", false, "output: approved"},
		{"cut", long, "judge", false, "output: " + Preview(long, 100)},
		{"whole with -q", long, "judge", true, "output: " + long},
		{"missing", nil, "judge", false, `output: none ("judge", the ensemble's output agent, has no output)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			res := &engine.Result{Ensemble: "e", CompletionReason: engine.Completed, AgentExecutionCount: map[string]int{},
				FinalState: map[string]any{"judge": tc.output}, Output: tc.output}
			Summary(&b, res, SummaryOptions{Output: tc.agent, Quiet: tc.quiet})
			var got []string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(l, "output:") {
					got = append(got, l)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("an output line without an output agent: %q", got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("output lines %q, want %q\n%s", got, tc.want, b.String())
			}
		})
	}
}
