package bdd

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds/llm"
	"github.com/ensemble-run/ensemble/state"
)

// Steps about what a run did on its way to its result, listed in
// stepDefs: the tools its LLM agents called (the tool_calls of their
// records, docs/llm.md#tools), the model requests it made, what they cost
// and how long an agent took.

// callRecords are the records whose tool calls count as the agent's: its
// executions (steps_agents.go's records), and for a fan-out agent its instances'
// (their records carry the calls).
func (s *Scenario) callRecords(name string) ([]*state.Record, error) {
	recs, err := s.records(name)
	if err != nil {
		return nil, err
	}
	if a := s.ens.Agent(name); a != nil && a.FanOut != nil {
		recs = nil
		for _, r := range s.result.ConversationHistory {
			if (r.AgentName == name || r.Of == name) && !r.Skipped {
				recs = append(recs, r)
			}
		}
	}
	return recs, nil
}

// toolCalls are the tool calls of the agent's executions, in the order of
// the history and, within an execution, of the model's requests.
func (s *Scenario) toolCalls(name string) (calls []llm.ToolCallRecord, runs int, err error) {
	recs, err := s.callRecords(name)
	if err != nil {
		return nil, 0, err
	}
	for _, r := range recs {
		var c []llm.ToolCallRecord
		if _, err := r.Details.Decode(llm.ToolCallsDetail, &c); err != nil {
			return nil, 0, fmt.Errorf("agent %q: the tool calls of its execution %d cannot be read: %v", name, r.Execution, err)
		}
		calls = append(calls, c...)
	}
	return calls, len(recs), nil
}

// checkTool checks that tool names a tool the agent has: a tool of its
// tools:, or a tool of an MCP server it names whole (SERVER.*). A typo would
// otherwise pass every "did not call" step.
func (s *Scenario) checkTool(name, tool string) error {
	a, err := s.agent(name)
	if err != nil {
		return err
	}
	if strings.TrimSpace(tool) == "" {
		return errors.New("the tool name is empty: write SERVER.TOOL for a tool of an MCP server, or the name of a tool of the file")
	}
	tools := agent.Tools(a)
	if slices.Contains(tools, tool) {
		return nil
	}
	if srv, _, ok := ensemble.SplitMCPTool(tool); ok && slices.Contains(tools, srv+".*") {
		return nil
	}
	if len(tools) == 0 {
		return fmt.Errorf("agent %q has no tools, so it cannot call %q", name, tool)
	}
	return fmt.Errorf("agent %q has no tool %q (its tools: %s)%s", name, tool, strings.Join(tools, ", "), ensemble.Suggest(tool, tools))
}

// callsText says the calls made, in order, failed ones marked.
func callsText(name string, calls []llm.ToolCallRecord, runs int) string {
	if runs == 0 {
		return fmt.Sprintf("agent %q did not run", name)
	}
	if len(calls) == 0 {
		return fmt.Sprintf("agent %q called no tool in its %s", name, executionsText(runs))
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Tool
		if c.Failed {
			names[i] += " (failed)"
		}
	}
	return fmt.Sprintf("agent %q called, in order: %s", name, quote(strings.Join(names, ", ")))
}

func executionsText(n int) string {
	if n == 1 {
		return "1 execution"
	}
	return strconv.Itoa(n) + " executions"
}

func (s *Scenario) thenCalledTool(name, tool string) error {
	if err := s.checkTool(name, tool); err != nil {
		return err
	}
	calls, runs, err := s.toolCalls(name)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(calls, func(c llm.ToolCallRecord) bool { return c.Tool == tool }) {
		return nil
	}
	return fmt.Errorf("%s, want a call of %q", callsText(name, calls, runs), tool)
}

func (s *Scenario) thenDidNotCallTool(name, tool string) error {
	if err := s.checkTool(name, tool); err != nil {
		return err
	}
	calls, runs, err := s.toolCalls(name)
	if err != nil {
		return err
	}
	n := 0
	for _, c := range calls {
		if c.Tool == tool {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("agent %q called %q %s, want no call of it (%s)", name, tool, times(n), callsText(name, calls, runs))
	}
	return nil
}

// thenCalledInOrder checks that the calls listed were made in that order:
// each after the one before it, other calls allowed between them.
func (s *Scenario) thenCalledInOrder(name, list string) error {
	want := splitList(unq(list))
	if len(want) == 0 {
		return errors.New(`the list of tools is empty: write them comma-separated, like "search.query, files.read"`)
	}
	for _, t := range want {
		if err := s.checkTool(name, t); err != nil {
			return err
		}
	}
	calls, runs, err := s.toolCalls(name)
	if err != nil {
		return err
	}
	i := 0
	for _, c := range calls {
		if i < len(want) && c.Tool == want[i] {
			i++
		}
	}
	if i == len(want) {
		return nil
	}
	missing := fmt.Sprintf("no call of %q", want[i])
	if i > 0 {
		missing += fmt.Sprintf(" after its call of %q", want[i-1])
	}
	return fmt.Errorf("%s, want calls of %s in that order (%s)", callsText(name, calls, runs), quote(strings.Join(want, ", ")), missing)
}

func (s *Scenario) thenRequestsAtMost(n int) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if got := res.Usage.Requests; got > n {
		return fmt.Errorf("the run made %s, want at most %d%s", requestsText(got), n, s.spendByAgent(func(u *state.Usage) string { return requestsText(u.Requests) }))
	}
	return nil
}

func requestsText(n int) string {
	if n == 1 {
		return "1 model request"
	}
	return strconv.Itoa(n) + " model requests"
}

// spendByAgent says each agent's part of the run's spend.
func (s *Scenario) spendByAgent(say func(*state.Usage) string) string {
	if len(s.result.UsageByAgent) == 0 {
		return ""
	}
	var parts []string
	for _, name := range sortedKeys(s.result.UsageByAgent) {
		parts = append(parts, name+": "+say(s.result.UsageByAgent[name]))
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *Scenario) thenCostAtMost(max string) error {
	want, err := strconv.ParseFloat(max, 64)
	if err != nil || want < 0 {
		return fmt.Errorf("the cost %s is not a number at least 0 (write it like 0.05, in the unit of the profiles' pricing)", quote(max))
	}
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if !priced(s.ens, map[*ensemble.Ensemble]bool{}) {
		return fmt.Errorf("the run's cost cannot be checked: no model profile has pricing, so every request costs 0; give the profiles pricing: {input_per_million, output_per_million}")
	}
	if got := res.Usage.Cost; got > want {
		return fmt.Errorf("the run cost %s over %s, want at most %s%s", costText(got), requestsText(res.Usage.Requests), max,
			s.spendByAgent(func(u *state.Usage) string { return costText(u.Cost) }))
	}
	return nil
}

func costText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// priced reports whether a model profile of e or of a child ensemble has
// pricing: without one, every request costs 0 (docs/semantics.md#budgets).
func priced(e *ensemble.Ensemble, seen map[*ensemble.Ensemble]bool) bool {
	if e == nil || seen[e] {
		return false
	}
	seen[e] = true
	for _, m := range e.Models {
		if m != nil && m.Pricing != nil {
			return true
		}
	}
	for _, a := range e.Agents {
		for _, c := range agent.Children(a) {
			if priced(c, seen) {
				return true
			}
		}
	}
	return false
}

// thenTookAtMost checks the agent's time over all its executions: the sum
// of their execution_time.
func (s *Scenario) thenTookAtMost(name, d string) error {
	want, err := time.ParseDuration(d)
	if err != nil || want < 0 {
		return fmt.Errorf("the duration %s is not a Go duration (write it like 500ms, 30s or 2m)", quote(d))
	}
	recs, err := s.records(name)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("agent %q did not run, want it to take at most %s", name, want)
	}
	var total float64
	each := make([]string, len(recs))
	for i, r := range recs {
		total += r.ExecutionTime
		each[i] = secondsDuration(r.ExecutionTime).String()
	}
	if secondsDuration(total) > want {
		return fmt.Errorf("agent %q took %s over its %s (%s), want at most %s", name, secondsDuration(total), executionsText(len(recs)), strings.Join(each, ", "), want)
	}
	return nil
}

// secondsDuration is a number of seconds as a duration, to the millisecond.
func secondsDuration(v float64) time.Duration {
	return (time.Duration(v * float64(time.Second))).Round(time.Millisecond)
}
