package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/state"
)

// Recorder keeps, from a run's event stream, what the Markdown report needs
// and the result does not hold: the tool calls and when the run started.
// Streamed text is not kept (the outputs hold the final text).
type Recorder struct{ log *events.Log }

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{log: events.NewLog(func(e events.Event) bool {
		switch e.Type {
		case events.RunStarted, events.ToolCallStarted, events.ToolCallCompleted:
			return true
		}
		return false
	})}
}

// Sink is the recorder's receiving end.
func (r *Recorder) Sink() events.Sink { return r.log.Sink() }

// Events returns the events kept.
func (r *Recorder) Events() []events.Event { return r.log.Events() }

// MarkdownOptions add context to a report.
type MarkdownOptions struct {
	// Ensemble, when set, adds the description and the agents' kinds, and
	// lists agents that never ran.
	Ensemble *ensemble.Ensemble
	// Events are the run's events (a Recorder's): tool calls and the start
	// time. Others are ignored.
	Events []events.Event
	// Resume is the command that continues the run ("" when unknown): a
	// run that waits for input says to answer with it.
	Resume string
}

// Markdown writes a readable transcript of a run: a header (ensemble, input,
// completion reason, turns, duration, usage), then each turn with its agents'
// inputs (collapsed), outputs, tool calls, errors, usage and timing, then
// what was interrupted, the warnings, a summary table per agent and the
// final state.
func Markdown(w io.Writer, res *engine.Result, opts MarkdownOptions) error {
	bw := bufio.NewWriter(w)
	m := &markdown{w: bw, res: res, opts: opts, calls: toolCalls(opts.Events)}
	m.header()
	m.turns()
	m.interrupted()
	m.pending()
	m.warnings()
	m.expectations()
	m.summary()
	m.finalState()
	return bw.Flush()
}

type markdown struct {
	w     *bufio.Writer
	res   *engine.Result
	opts  MarkdownOptions
	calls map[execKey][]*toolCall
	// prefix and turn are set while a child ensemble's records are
	// written (nested.go): the path of their agents and the parent's turn.
	prefix string
	turn   int
}

func (m *markdown) p(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

type execKey struct {
	turn      int
	agent     string
	execution int
}

type toolCall struct {
	started   events.Event
	completed *events.Event
}

// toolCalls groups the tool-call events by execution, in the order the calls
// were issued.
func toolCalls(evs []events.Event) map[execKey][]*toolCall {
	out := map[execKey][]*toolCall{}
	byID := map[execKey]map[string]*toolCall{}
	for _, e := range evs {
		k := execKey{e.Turn, e.Agent, e.Execution}
		switch e.Type {
		case events.ToolCallStarted:
			c := &toolCall{started: e}
			out[k] = append(out[k], c)
			if byID[k] == nil {
				byID[k] = map[string]*toolCall{}
			}
			byID[k][e.ToolID] = c
		case events.ToolCallCompleted:
			c := byID[k][e.ToolID]
			if c == nil { // its start was not seen
				c = &toolCall{started: e}
				out[k] = append(out[k], c)
			}
			c.completed = &e
		}
	}
	return out
}

func (m *markdown) header() {
	res := m.res
	m.p("# Run report: %s\n\n", inline(res.Ensemble))
	if e := m.opts.Ensemble; e != nil && e.Description != "" {
		m.p("%s\n\n", inline(e.Description))
	}
	failed, execs := 0, 0
	var inst AgentStats // fan-out instances, which are not executions
	for _, r := range res.ConversationHistory {
		if r.Of != "" {
			inst.addInstance(r)
			continue
		}
		if r.Skipped {
			continue
		}
		execs++
		if r.Error != nil {
			failed++
		}
	}
	input := res.Input
	long := strings.Contains(strings.TrimSpace(input), "\n") || len([]rune(input)) > 120
	m.p("| | |\n|---|---|\n")
	m.p("| completion | **%s** (exit code %d) |\n", inline(res.CompletionReason), res.ExitCode())
	switch {
	case input == "":
		m.p("| input | _none_ |\n")
	case long:
		m.p("| input | below |\n")
	default:
		m.p("| input | %s |\n", inline(input))
	}
	if t := m.started(); !t.IsZero() {
		m.p("| started | %s |\n", t.UTC().Format(time.RFC3339))
	}
	if ev, ok := m.runStarted(); ok && ev.Turn > 0 {
		note := ""
		if m.mayCallTools() {
			earlier := "turn 1"
			if ev.Turn > 1 {
				earlier = fmt.Sprintf("turns 1–%d", ev.Turn)
			}
			note = fmt.Sprintf(" (the tool calls of %s are not in this report)", earlier)
		}
		m.p("| resumed | after turn %d, at %s%s |\n", ev.Turn, ev.Time.UTC().Format(time.RFC3339), note)
	}
	m.p("| duration | %s |\n", Seconds(res.DurationSeconds))
	m.p("| turns | %d |\n", res.TurnCount)
	m.p("| executions | %d (%d failed) |\n", execs, failed)
	if inst.Instances > 0 {
		m.p("| fan-out instances | %d (%d failed) |\n", inst.Instances, inst.InstanceFailures)
	}
	m.p("| usage | %s |\n", usageText(res.Usage))
	m.p("| errors | %d |\n", len(res.Errors))
	m.p("| warnings | %d |\n\n", len(res.Warnings))
	if long {
		m.p("**Input**\n\n%s\n", fence("text", input))
	}
}

// runStarted is the run_started event, if the events hold it.
func (m *markdown) runStarted() (events.Event, bool) {
	for _, e := range m.opts.Events {
		if e.Type == events.RunStarted {
			return e, true
		}
	}
	return events.Event{}, false
}

// mayCallTools reports whether an agent may call tools (true when the
// ensemble is not known).
func (m *markdown) mayCallTools() bool {
	e := m.opts.Ensemble
	if e == nil {
		return true
	}
	for _, a := range e.Agents {
		if len(agent.Tools(a)) > 0 {
			return true
		}
	}
	return false
}

// started is when the run started: its run_started event, else (or when
// the run was resumed: that event is when this invocation started) its
// first execution.
func (m *markdown) started() time.Time {
	ev, ok := m.runStarted()
	if ok && ev.Turn == 0 {
		return ev.Time
	}
	if len(m.res.ConversationHistory) > 0 {
		return m.res.ConversationHistory[0].Timestamp
	}
	return ev.Time
}

func (m *markdown) kind(agent string) string {
	if e := m.opts.Ensemble; e != nil {
		if a := agentpath.AgentAt(e, agent); a != nil && a.Kind != nil {
			return a.Kind.String()
		}
	}
	return ""
}

// skipReason says why a skipped record's agent did not run, from its
// input_data (docs/semantics.md#guards-that-skip).
func skipReason(rec *state.Record) string {
	in, _ := rec.InputData.(map[string]any)
	if w, ok := in["when"].(string); ok {
		return "its guard was false: when " + w
	}
	if deps, ok := in["dependencies"].([]any); ok {
		names := make([]string, 0, len(deps))
		for _, d := range deps {
			names = append(names, fmt.Sprint(d))
		}
		return "its dependencies were skipped: " + strings.Join(names, ", ")
	}
	return "not run"
}

func (m *markdown) turns() {
	turn := 0
	for _, rec := range m.res.ConversationHistory {
		if rec.TurnNumber != turn {
			turn = rec.TurnNumber
			m.p("## Turn %d\n\n", turn)
		}
		m.execution(rec)
	}
}

func (m *markdown) execution(rec *state.Record) {
	if rec.Skipped {
		m.p("### – %s skipped\n\n%s\n\n", code(m.prefix+rec.AgentName), inline(skipReason(rec)))
		return
	}
	mark := "✓"
	if rec.Error != nil {
		mark = "✗"
	}
	m.p("### %s %s #%d\n\n", mark, code(m.prefix+rec.AgentName), rec.Execution)
	facts := []string{}
	if k := m.kind(m.prefix + cmp.Or(rec.Of, rec.AgentName)); k != "" {
		facts = append(facts, k)
	}
	if f := instanceFacts(rec); f != "" {
		facts = append(facts, f)
	}
	facts = append(facts, Seconds(rec.ExecutionTime))
	if !rec.Timestamp.IsZero() {
		facts = append(facts, "started "+rec.Timestamp.UTC().Format("15:04:05.000"))
	}
	if rec.StopReason != nil {
		stop := "stop reason " + code(*rec.StopReason)
		if cutOff(rec) {
			stop += " (**the reply was cut off**)"
		}
		facts = append(facts, stop)
	}
	if rec.Usage != nil {
		facts = append(facts, usageText(*rec.Usage))
	}
	m.p("%s\n\n", strings.Join(facts, " · "))
	m.details("Input", "json", indentJSON(rec.InputData))
	for i, c := range m.calls[execKey{cmp.Or(m.turn, rec.TurnNumber), m.prefix + rec.AgentName, rec.Execution}] {
		m.toolCall(i+1, c)
	}
	m.child(rec)
	if rec.Error != nil {
		m.p("**Error**\n\n%s\n", fence("text", *rec.Error))
	}
	if rec.Error == nil || rec.OutputData != nil {
		m.p("**Output**\n\n")
		m.value(rec.OutputData)
	}
}

func (m *markdown) toolCall(n int, c *toolCall) {
	s := c.started
	args := strings.TrimSpace(s.Arguments)
	var v any
	long, lang := args, "text"
	if json.Unmarshal([]byte(args), &v) == nil {
		args, long, lang = jsonvalue.Compact(v), indentJSON(v), "json"
	}
	status := "did not finish"
	if c.completed != nil {
		status = Seconds(c.completed.Duration)
		if c.completed.Error != "" {
			status += " · failed"
		}
	}
	m.p("**Tool call %d: %s** · %s\n\n", n, code(s.Tool), status)
	if len([]rune(args)) <= 100 && !strings.Contains(args, "\n") {
		m.p("Arguments: %s\n\n", code(args))
	} else {
		m.details("Arguments", lang, long)
	}
	if c.completed == nil {
		return
	}
	if c.completed.Error != "" {
		m.details("Error", "text", c.completed.Error)
		return
	}
	out, ok := c.completed.Output.(string)
	if !ok {
		out = jsonvalue.Compact(c.completed.Output)
	}
	lang = "text"
	if json.Unmarshal([]byte(out), &v) == nil {
		out, lang = indentJSON(v), "json"
	}
	m.details("Result", lang, out)
}

// value writes an output: JSON in a json block, text in a text block.
func (m *markdown) value(v any) {
	if s, ok := v.(string); ok {
		m.p("%s\n", fence("text", s))
		return
	}
	m.p("%s\n", fence("json", indentJSON(v)))
}

// details writes a collapsed block.
func (m *markdown) details(summary, lang, body string) {
	m.p("<details>\n<summary>%s</summary>\n\n%s\n</details>\n\n", summaryText(summary), fence(lang, body))
}

// interrupted lists the result's errors that are not failed executions of
// the history: executions of a turn that was cut short, a state that could
// not be saved.
func (m *markdown) interrupted() {
	recorded := map[engine.RunError]bool{}
	for _, r := range m.res.ConversationHistory {
		if r.Error != nil {
			recorded[engine.RunError{TurnNumber: r.TurnNumber, AgentName: r.AgentName, Message: *r.Error}] = true
		}
	}
	var rest []engine.RunError
	for _, e := range m.res.Errors {
		if !recorded[e] {
			rest = append(rest, e)
		}
	}
	if len(rest) == 0 {
		return
	}
	m.p("## Interrupted\n\nNot committed to the state: a resumed run plays these again.\n\n")
	for _, e := range rest {
		who := "the run"
		if e.AgentName != "" {
			who = code(e.AgentName)
		}
		m.p("- turn %d, %s: %s\n", e.TurnNumber, who, inline(e.Message))
	}
	m.p("\n")
}

// pending lists what a run that ended awaiting_input waits for
// (docs/semantics.md#ask-agents-that-wait).
func (m *markdown) pending() {
	if len(m.res.PendingInput) == 0 {
		return
	}
	if m.opts.Resume != "" {
		m.p("## Waiting for input\n\nAnswer with %s.\n\n", code(m.opts.Resume+" --answer AGENT=TEXT"))
	} else {
		m.p("## Waiting for input\n\nAnswer with `resume STATE --answer AGENT=TEXT`.\n\n")
	}
	for _, p := range m.res.PendingInput {
		m.p("- %s (its answer goes into turn %d): %s\n", code(p.Agent), p.Turn, inline(p.Question))
	}
	m.p("\n")
}

func (m *markdown) warnings() {
	if len(m.res.Warnings) == 0 {
		return
	}
	m.p("## Warnings\n\n")
	for _, w := range m.res.Warnings {
		m.p("- turn %d, %s: %s\n", w.TurnNumber, code(w.AgentName), inline(w.Message))
	}
	m.p("\n")
}

func (m *markdown) summary() {
	var names []string
	if e := m.opts.Ensemble; e != nil {
		for _, a := range e.Agents {
			names = append(names, a.Name)
		}
	}
	stats := Stats(m.res, names)
	if len(stats) == 0 {
		return
	}
	calls := map[string]int{} // of the recorded executions only, as runs
	for _, r := range m.res.ConversationHistory {
		calls[cmp.Or(r.Of, r.AgentName)] += len(m.calls[execKey{r.TurnNumber, r.AgentName, r.Execution}])
	}
	m.p("## Summary\n\n")
	m.p("| agent | kind | runs | failed | time | avg | tool calls | requests | input tokens | output tokens |\n")
	m.p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var total AgentStats
	for _, s := range stats {
		avg := "-"
		if s.Runs > 0 {
			avg = Seconds(s.Seconds / float64(s.Runs))
		}
		kind := m.kind(s.Name)
		if kind == "" {
			kind = "-"
		}
		m.p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", code(s.Name), kind, runsCell(s), failedCell(s, func(n int) string { return fmt.Sprint(n) }),
			timeCell(s), avg, thousands(calls[s.Name]), thousands(s.Usage.Requests), thousands(s.Usage.InputTokens), thousands(s.Usage.OutputTokens))
		total.Runs += s.Runs
		total.Failures += s.Failures
		total.Seconds += s.Seconds
		total.Usage.Add(&s.Usage)
		total.ToolCalls += calls[s.Name]
	}
	m.p("| **total** | | %d | %d | %s | | %s | %s | %s | %s |\n\n", total.Runs, total.Failures, Seconds(total.Seconds),
		thousands(total.ToolCalls), thousands(total.Usage.Requests), thousands(total.Usage.InputTokens), thousands(total.Usage.OutputTokens))
	if total.Usage.Cost > 0 {
		var parts []string
		for _, s := range stats {
			if s.Usage.Cost > 0 {
				parts = append(parts, code(s.Name)+" "+costCell(s.Usage.Cost))
			}
		}
		m.p("Cost: %s; total %s.\n\n", strings.Join(parts, ", "), costCell(total.Usage.Cost))
	}
}

func (m *markdown) finalState() {
	keys := make([]string, 0, len(m.res.FinalState))
	for k := range m.res.FinalState {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	m.p("## Final state\n\n")
	for _, k := range keys {
		if s, ok := m.res.FinalState[k].(string); ok {
			m.details(k, "text", s)
		} else {
			m.details(k, "json", indentJSON(m.res.FinalState[k]))
		}
	}
}

// expectations lists the expectations a completed run checked
// (docs/semantics.md#expectations): each, whether it held, and the values
// it read.
func (m *markdown) expectations() {
	if len(m.res.Expectations) == 0 {
		return
	}
	m.p("## Expectations\n\n")
	for _, x := range m.res.Expectations {
		mark := "held"
		if !x.Held {
			mark = "**failed**"
		}
		m.p("- %s %s (%s)", mark, code(x.Expression), x.Where)
		if x.Error != "" {
			m.p(": %s", inline(x.Error))
		}
		var read []string
		for _, v := range x.Values {
			if v.Missing {
				read = append(read, code(v.Path)+" is missing")
				continue
			}
			read = append(read, code(v.Path)+" = "+code(Truncate(oneLine(jsonvalue.Compact(v.Value)), 200)))
		}
		if len(read) > 0 {
			m.p("; read %s", strings.Join(read, ", "))
		}
		m.p("\n")
	}
	m.p("\n")
}
