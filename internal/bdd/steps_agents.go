package bdd

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/state"
)

// The Then steps about agents: how often and in what order they ran, their
// outputs and inputs, the final state, and expressions over the result.

// order is the agents of the history, one per execution.
// order is the agents of the history's executions, in order: skipped
// agents did not run (docs/semantics.md#guards-that-skip).
func order(res *engine.Result) []string {
	names := make([]string, 0, len(res.ConversationHistory))
	for _, r := range res.ConversationHistory {
		if !r.Skipped {
			names = append(names, r.AgentName)
		}
	}
	return names
}

func (s *Scenario) executions(name string) (int, error) {
	if _, err := s.agent(name); err != nil {
		return 0, err
	}
	res, err := s.ranResult()
	if err != nil {
		return 0, err
	}
	if n, ok := s.instanceRuns(name); ok {
		return n, nil
	}
	if isPath(name) {
		return len(agentpath.PathRecords(res.ConversationHistory, name)), nil
	}
	return res.AgentExecutionCount[name], nil
}

func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return strconv.Itoa(n) + " times"
}

func (s *Scenario) thenRanTimes(name string, want int) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("agent %q ran %s, want %s (agents ran in order %s)", name, times(got), times(want), quote(strings.Join(order(s.result), ", ")))
	}
	return nil
}

// thenPassMetric is the step of pass^k and pass@k in a run: a no-op, as
// the metric is of all the scenario's runs, which the run with repeats
// checks once they ended (checkMetrics).
func (s *Scenario) thenPassMetric(int, string) error { return nil }

func (s *Scenario) thenRanAtLeast(name string, want int) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got < want {
		return fmt.Errorf("agent %q ran %s, want at least %s", name, times(got), times(want))
	}
	return nil
}

func (s *Scenario) thenRanAtMost(name string, want int) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got > want {
		return fmt.Errorf("agent %q ran %s, want at most %s", name, times(got), times(want))
	}
	return nil
}

func (s *Scenario) thenDidNotRun(name string) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got != 0 {
		return fmt.Errorf("agent %q ran %s, want it not to run (agents ran in order %s)", name, times(got), quote(strings.Join(order(s.result), ", ")))
	}
	return nil
}

func (s *Scenario) thenRanBefore(first, second string) error {
	for _, n := range []string{first, second} {
		if _, err := s.executions(n); err != nil {
			return err
		}
	}
	names := order(s.result)
	i, j := slices.Index(names, first), slices.Index(names, second)
	switch {
	case i < 0:
		return fmt.Errorf("agent %q did not run (agents ran in order %s)", first, quote(strings.Join(names, ", ")))
	case j < 0:
		return fmt.Errorf("agent %q did not run (agents ran in order %s)", second, quote(strings.Join(names, ", ")))
	case i > j:
		return fmt.Errorf("agent %q first ran after agent %q: agents ran in order %s", first, second, quote(strings.Join(names, ", ")))
	}
	return nil
}

func (s *Scenario) thenOrder(list string) error {
	want := splitList(list)
	for _, n := range want {
		if _, err := s.agent(n); err != nil {
			return err
		}
	}
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	got := order(res)
	if !slices.Equal(got, want) {
		return fmt.Errorf("agents ran in order %s, want %s", quote(strings.Join(got, ", ")), quote(strings.Join(want, ", ")))
	}
	return nil
}

var historyColumns = []string{"turn", "agent", "execution", "status", "error", "output"}

func (s *Scenario) thenHistory(table *godog.Table) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if table == nil || len(table.Rows) == 0 {
		return errors.New("this step needs a table below it: a header row (turn, agent, execution, status, error, output) and one row per execution")
	}
	var cols []string
	for _, c := range table.Rows[0].Cells {
		name := strings.ToLower(strings.TrimSpace(c.Value))
		if !slices.Contains(historyColumns, name) {
			return fmt.Errorf("unknown history column %q: use %s%s", c.Value, strings.Join(historyColumns, ", "), ensemble.Suggest(name, historyColumns))
		}
		cols = append(cols, name)
	}
	cell := func(r *state.Record, col string) string {
		switch col {
		case "turn":
			return strconv.Itoa(r.TurnNumber)
		case "agent":
			return r.AgentName
		case "execution":
			return strconv.Itoa(r.Execution)
		case "status":
			if r.Skipped {
				return "skipped"
			}
			if r.Error != nil {
				return "failed"
			}
			return "ok"
		case "error":
			if r.Error != nil {
				return *r.Error
			}
			return ""
		case "output":
			if r.Error != nil {
				return ""
			}
			return text(r.OutputData)
		}
		return ""
	}
	actual := func() string {
		var b strings.Builder
		b.WriteString("the actual history:\n  | " + strings.Join(cols, " | ") + " |")
		for _, r := range res.ConversationHistory {
			vals := make([]string, len(cols))
			for i, c := range cols {
				vals[i] = tableCell(cut(cell(r, c), 60))
			}
			b.WriteString("\n  | " + strings.Join(vals, " | ") + " |")
		}
		return b.String()
	}
	want := table.Rows[1:]
	if len(want) != len(res.ConversationHistory) {
		return fmt.Errorf("the history has %s, want %d\n%s", report.Count(len(res.ConversationHistory), "execution"), len(want), actual())
	}
	for i, row := range want {
		r := res.ConversationHistory[i]
		for j, c := range row.Cells {
			if j >= len(cols) {
				break
			}
			w, g := strings.TrimSpace(c.Value), cell(r, cols[j])
			switch cols[j] {
			case "error", "output":
				if !strings.Contains(g, w) {
					return fmt.Errorf("history row %d: %s is %s, want it to contain %s\n%s", i+1, cols[j], quote(cut(g, 300)), quote(w), actual())
				}
			default:
				if w != "" && g != w {
					return fmt.Errorf("history row %d: %s is %s, want %s\n%s", i+1, cols[j], quote(g), quote(w), actual())
				}
			}
		}
	}
	return nil
}

// tableCell escapes a value for a Gherkin table cell.
func tableCell(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "|", `\|`).Replace(v)
}

// records are the agent's executions.
func (s *Scenario) records(name string) ([]*state.Record, error) {
	if _, err := s.executions(name); err != nil {
		return nil, err
	}
	if isPath(name) {
		return agentpath.PathRecords(s.result.ConversationHistory, name), nil
	}
	var out []*state.Record
	for _, r := range s.result.ConversationHistory {
		if r.AgentName == name && !r.Skipped {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *Scenario) thenSkipped(name string) error {
	if _, err := s.executions(name); err != nil {
		return err
	}
	for _, r := range s.result.ConversationHistory {
		if r.AgentName == name && r.Skipped {
			return nil
		}
	}
	return fmt.Errorf("agent %q was never skipped (agents ran in order %s)", name, quote(strings.Join(order(s.result), ", ")))
}

func (s *Scenario) thenFailedWith(name, sub string) error {
	sub = unq(sub)
	if _, err := s.executions(name); err != nil {
		return err
	}
	var msgs []string
	for _, e := range s.errorsOf(name) {
		if e.AgentName != name {
			continue
		}
		if strings.Contains(e.Message, sub) {
			return nil
		}
		msgs = append(msgs, fmt.Sprintf("turn %d: %s", e.TurnNumber, cut(e.Message, 400)))
	}
	if len(msgs) == 0 {
		n := s.result.AgentExecutionCount[name]
		if n == 0 {
			return fmt.Errorf("agent %q did not run, want it to fail with an error containing %s", name, quote(sub))
		}
		return fmt.Errorf("agent %q ran %s and never failed, want an error containing %s", name, times(n), quote(sub))
	}
	return fmt.Errorf("agent %q failed, but no error contains %s; its errors:\n  %s", name, quote(sub), strings.Join(msgs, "\n  "))
}

func (s *Scenario) thenDidNotFail(name string) error {
	if _, err := s.executions(name); err != nil {
		return err
	}
	for _, e := range s.errorsOf(name) {
		if e.AgentName == name {
			return fmt.Errorf("agent %q failed in turn %d: %s", name, e.TurnNumber, cut(e.Message, 400))
		}
	}
	return nil
}

// thenTookLessThan checks the execution_time of each of the agent's
// executions.
func (s *Scenario) thenTookLessThan(name string, secs float64) error {
	recs, err := s.records(name)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("agent %q did not run, want it to take less than %s", name, secondsText(secs))
	}
	for _, r := range recs {
		if r.ExecutionTime >= secs {
			return fmt.Errorf("agent %q took %.3f seconds in its execution %d (turn %d), want less than %s", name, r.ExecutionTime, r.Execution, r.TurnNumber, secondsText(secs))
		}
	}
	return nil
}

// secondsText says a number of seconds as the step gave it.
func secondsText(v float64) string {
	if v == 1 {
		return "1 second"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " seconds"
}

// latestOutput is the agent's latest successful output.
func (s *Scenario) latestOutput(name string) (any, error) {
	recs, err := s.records(name)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Error == nil {
			return recs[i].OutputData, nil
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("agent %q did not run, so it has no output (agents ran in order %s)", name, quote(strings.Join(order(s.result), ", ")))
	}
	return nil, fmt.Errorf("agent %q produced no output: its %s failed, the last with: %s", name, times(len(recs)), cut(*recs[len(recs)-1].Error, 400))
}

func (s *Scenario) thenOutputContains(name, sub string) error {
	sub = unq(sub)
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if !strings.Contains(text(out), sub) {
		return fmt.Errorf("output of agent %q is %s, want it to contain %s", name, show(out), quote(sub))
	}
	return nil
}

func (s *Scenario) thenOutputNotContains(name, sub string) error {
	sub = unq(sub)
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if strings.Contains(text(out), sub) {
		return fmt.Errorf("output of agent %q is %s, want it not to contain %s", name, show(out), quote(sub))
	}
	return nil
}

func (s *Scenario) thenOutputIs(name, want string) error {
	want = unq(want)
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if text(out) != want {
		return fmt.Errorf("output of agent %q is %s, want %s", name, show(out), quote(want))
	}
	return nil
}

func (s *Scenario) thenOutputIsDoc(name string, ds *godog.DocString) error {
	want, isText, err := docValue(ds, true)
	if err != nil {
		return err
	}
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if isText {
		if strings.TrimSpace(text(out)) != strings.TrimSpace(want.(string)) {
			return fmt.Errorf("output of agent %q is %s, want %s", name, show(out), show(want))
		}
		return nil
	}
	if !equalValues(out, want) {
		return fmt.Errorf("output of agent %q is %s, want %s", name, show(out), show(want))
	}
	return nil
}

func (s *Scenario) thenInputContains(name, sub string) error {
	sub = unq(sub)
	recs, err := s.records(name)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("agent %q did not run, so it was given nothing", name)
	}
	in := state.ResolveInput(s.result.ConversationHistory, recs[len(recs)-1].InputData)
	if !strings.Contains(text(in), sub) {
		return fmt.Errorf("input of agent %q (execution %d) is %s, want it to contain %s", name, recs[len(recs)-1].Execution, show(in), quote(sub))
	}
	return nil
}

func (s *Scenario) thenFinalStateIs(key string, ds *godog.DocString) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	want, _, err := docValue(ds, false)
	if err != nil {
		return err
	}
	got, ok := res.FinalState[key]
	if !ok {
		return fmt.Errorf("final state has no %q (its keys: %s), want %s", key, strings.Join(slices.Sorted(maps.Keys(res.FinalState)), ", "), show(want))
	}
	if !equalValues(got, want) {
		return fmt.Errorf("final state of %q is %s, want %s", key, show(got), show(want))
	}
	return nil
}

func (s *Scenario) thenFinalStateHasNo(key string) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if v, ok := res.FinalState[key]; ok {
		return fmt.Errorf("final state of %q is %s, want no such key", key, show(v))
	}
	return nil
}

// Eval evaluates a condition against the final state of the run.
func (s *Scenario) Eval(src string) (bool, error) {
	prog, err := conditions.Compile(src)
	if err != nil {
		return false, fmt.Errorf("the expression %s is invalid: %v", quote(src), err)
	}
	res, err := s.ranResult()
	if err != nil {
		return false, err
	}
	st := state.Restore(state.Contents{History: res.ConversationHistory})
	v, err := prog.Eval(&conditions.Env{
		Context:    res.FinalState,
		TurnCount:  res.TurnCount,
		Executions: res.AgentExecutionCount,
		History:    st.HistoryValues(),
		Input:      res.Input,
	})
	if err != nil {
		// The expression may put a key back together from outputs that
		// each hold a part of it: its error is redacted as the run's are.
		lookup := s.opts.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		err = secrets.OfEnsemble(s.ens, lookup).Error(err)
		return false, fmt.Errorf("the expression %s failed: %v", quote(src), err)
	}
	return v, nil
}

func (s *Scenario) thenExpr(src string, want bool) error {
	src = unq(src)
	got, err := s.Eval(src)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("the expression %s is %t, want %t (final state: %s; executions: %s; turn_count: %d)",
			quote(src), got, want, cut(jsonvalue.Compact(s.result.FinalState), 600), jsonvalue.Compact(s.result.AgentExecutionCount), s.result.TurnCount)
	}
	return nil
}

// unq reads a quoted argument: \" is a quote.
func unq(s string) string { return strings.ReplaceAll(s, `\"`, `"`) }

func (s *Scenario) thenExprTrue(src string) error { return s.thenExpr(src, true) }

func (s *Scenario) thenExprFalse(src string) error { return s.thenExpr(src, false) }
