package ensemble_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	format "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds"
	nested "github.com/ensemble-run/ensemble/kinds/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// fake plays script and llm agents by path (Request.Name): each call gets
// the next of its outputs; a function is called instead. It counts calls.
type fake struct {
	mu    sync.Mutex
	plays map[string][]any
	calls map[string]int
}

func newFake(plays map[string][]any) *fake { return &fake{plays: plays, calls: map[string]int{}} }

func (f *fake) Run(ctx context.Context, req *agent.Request) *agent.Result {
	f.mu.Lock()
	name := req.Name()
	n := f.calls[name]
	f.calls[name]++
	list := f.plays[name]
	f.mu.Unlock()
	res := &agent.Result{InputData: map[string]any{"input": req.Input}}
	if len(list) == 0 {
		res.Output = name
		return res
	}
	v := list[min(n, len(list)-1)]
	if fn, ok := v.(func(context.Context, *agent.Request) *agent.Result); ok {
		return fn(ctx, req)
	}
	res.Output = v
	if req.Agent.Kind.String() == "llm" {
		res.Usage = &state.Usage{Requests: 1, InputTokens: 10, OutputTokens: 2}
	}
	return res
}

func (f *fake) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// run loads path and runs it with f for scripts and models, and with
// responses injected when given; it returns the result and the events.
func run(t *testing.T, ctx context.Context, path, input string, f *fake, resp *responses.Responses) (*engine.Result, []events.Event) {
	t.Helper()
	e, err := load(t, path)
	if err != nil {
		t.Fatal(err)
	}
	var log events.Log
	return engine.New(e, input, engine.Options{Runner: runner(f, resp), Events: log.Sink()}).Run(ctx), log.Events()
}

func runner(f *fake, resp *responses.Responses) agent.Runner {
	reg := kinds.Builtin()
	d := reg.Runner(&agent.Host{}, map[string]agent.Runner{"script": f, "llm": f})
	if resp != nil {
		return responses.Injected(resp, d)
	}
	return d
}

func failures(res *engine.Result) string {
	var b strings.Builder
	for _, e := range res.Errors {
		b.WriteString(e.AgentName + ": " + e.Message + "\n")
	}
	return b.String()
}

// TestChildRuns: the child runs from a fresh state with the parent's input
// and fresh dependency outputs; its output agent's output is the agent's;
// its usage rolls up, its events carry paths, its history is in the record.
func TestChildRuns(t *testing.T) {
	t.Parallel()
	f := newFake(map[string][]any{"draft": {"a draft"}, "review_round/critic": {"looks fine"}, "review_round/verdict": {map[string]any{"ok": true}}})
	res, evs := run(t, context.Background(), "testdata/parent.yaml", "write a poem", f, nil)
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("%s %s", res.CompletionReason, failures(res))
	}
	if got := res.FinalState["review_round"]; got.(map[string]any)["ok"] != true {
		t.Errorf("output %v", got)
	}
	rec := res.ConversationHistory[1]
	if rec.AgentName != "review_round" || rec.Child() == nil || rec.Child().CompletionReason != "completed" || rec.Child().TurnCount != 2 || len(rec.Child().ConversationHistory) != 2 {
		t.Fatalf("record %+v child %+v", rec, rec.Child())
	}
	if in := rec.Child().ConversationHistory[0].InputData.(map[string]any)["input"]; in != "Input:\nwrite a poem\n\nOutput of draft:\na draft" {
		t.Errorf("child input %q", in)
	}
	if res.Usage.Requests != 1 || rec.Usage == nil || rec.Usage.InputTokens != 10 {
		t.Errorf("usage %+v, record %+v", res.Usage, rec.Usage)
	}
	var paths []string
	for _, ev := range evs {
		if ev.Type == events.AgentCompleted {
			paths = append(paths, ev.Agent)
		}
		if ev.Type == events.RunStarted && ev.Turn != 0 {
			t.Errorf("a child's run_started reached the parent's stream")
		}
	}
	if got := strings.Join(paths, " "); got != "draft review_round/critic review_round/verdict review_round" {
		t.Errorf("completed events %s", got)
	}
}

// TestInjectedByPath: responses address child agents by path, taken in
// order across the child's executions.
func TestInjectedByPath(t *testing.T) {
	t.Parallel()
	resp := responses.NewResponses()
	resp.Add("build_loop/coder", "one")
	resp.Add("build_loop/coder", "two")
	resp.Add("build_loop/check", map[string]any{"tests_pass": false, "next_input": "fix it"})
	resp.Add("build_loop/check", map[string]any{"tests_pass": true})
	e, err := load(t, "testdata/loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Validate(e); err != nil {
		t.Fatal(err)
	}
	bad := responses.NewResponses()
	bad.Add("build_loop/nobody", "x")
	if err := bad.Validate(e); err == nil || !strings.Contains(err.Error(), `unknown agent "build_loop/nobody"`) {
		t.Errorf("validate: %v", err)
	}
	res, _ := run(t, context.Background(), "testdata/loop.yaml", "build it", newFake(nil), resp)
	if len(res.Errors) != 0 {
		t.Fatal(failures(res))
	}
	rec := res.ConversationHistory[0]
	if iterationsOf(rec) != 2 || rec.Child().ConversationHistory[0].OutputData != "two" {
		t.Errorf("iterations %d, child %+v", iterationsOf(rec), rec.Child().ConversationHistory[0])
	}
	if in := rec.Child().ConversationHistory[0].InputData.(map[string]any)["input"]; in != "fix it" {
		t.Errorf("carried input %v", in)
	}
}

// TestChildFails: a child that fails, times out or is stopped fails the
// execution with its completion reason.
func TestChildFails(t *testing.T) {
	t.Parallel()
	fail := func(_ context.Context, req *agent.Request) *agent.Result {
		return &agent.Result{Err: errorString("it broke")}
	}
	block := func(ctx context.Context, req *agent.Request) *agent.Result {
		<-ctx.Done()
		return &agent.Result{Err: ctx.Err()}
	}
	for _, c := range []struct {
		name, file string
		plays      map[string][]any
		want       string
	}{
		{"failure", "testdata/parent.yaml", map[string][]any{"review_round/verdict": {fail}},
			`agent "review_round": the child ensemble rounds/review.yaml completed with a failure (verdict: it broke)`},
		{"its own timeout", "testdata/timeout.yaml", map[string][]any{"slow/wait": {block}},
			`agent "slow": the child ensemble rounds/slow.yaml ended timeout`},
		{"the agent's timeout", "testdata/timeout.yaml", map[string][]any{"bounded/wait": {block}},
			`agent "bounded": the child ensemble rounds/forever.yaml ended cancelled`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, _ := run(t, context.Background(), c.file, "", newFake(c.plays), nil)
			if !strings.Contains(failures(res), c.want) {
				t.Errorf("errors:\n%s\nwant %s", failures(res), c.want)
			}
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestLoop: a loop that exhausts fails, unless on_exhausted: succeed.
func TestLoop(t *testing.T) {
	t.Parallel()
	never := map[string][]any{"build_loop/check": {map[string]any{"tests_pass": false, "next_input": "again"}}}
	f := newFake(never)
	res, _ := run(t, context.Background(), "testdata/loop.yaml", "go", f, nil)
	if want := `agent "build_loop": loop exhausted: until (output.tests_pass == true) was still false after 3 iterations`; !strings.Contains(failures(res), want) {
		t.Errorf("errors %s", failures(res))
	}
	if f.count("build_loop/coder") != 3 || iterationsOf(res.ConversationHistory[0]) != 3 {
		t.Errorf("coder ran %d times", f.count("build_loop/coder"))
	}
	res, _ = run(t, context.Background(), "testdata/loop-succeed.yaml", "go", newFake(never), nil)
	if len(res.Errors) != 0 || res.FinalState["build_loop"].(map[string]any)["tests_pass"] != false {
		t.Errorf("on_exhausted succeed: %s %v", failures(res), res.FinalState)
	}
}

// TestDispatch: the case named by on runs; no case and no default fails.
func TestDispatch(t *testing.T) {
	t.Parallel()
	res, _ := run(t, context.Background(), "testdata/dispatch.yaml", "", newFake(map[string][]any{"router": {map[string]any{"route": "feature"}}}), nil)
	if len(res.Errors) != 0 || res.FinalState["handle"].(map[string]any)["spec"] != "handle/spec" {
		t.Errorf("%s %v", failures(res), res.FinalState)
	}
	res, _ = run(t, context.Background(), "testdata/dispatch.yaml", "", newFake(map[string][]any{"router": {map[string]any{"route": "question"}}}), nil)
	if want := `agent "handle": dispatch on (context.router.route) gave "question", which is none of the cases (bug, feature), and there is no default`; !strings.Contains(failures(res), want) {
		t.Errorf("errors %s", failures(res))
	}
}

// tree writes a tree of ensemble files in dir: depth levels of width
// agents each running the next level's file, whose own parallel limit is
// 10, then width script agents "leaf"; the top file's limit is parallel.
// It returns the top file.
func tree(t *testing.T, dir string, width, depth, parallel int) string {
	t.Helper()
	for d := 0; d <= depth; d++ {
		limit := 10
		if d == 0 {
			limit = parallel
		}
		body := fmt.Sprintf("name: d%d\nconversation_limits: {parallel_agent_limit: %d, timeout_seconds: 60}\nagents:\n", d, limit)
		for i := range width {
			if d < depth {
				body += fmt.Sprintf("  - {name: a%d, ensemble: d%d.yaml}\n", i, d+1)
			} else {
				body += fmt.Sprintf("  - {name: a%d, script: noop.sh}\n", i)
			}
		}
		writeFile(t, fmt.Sprintf("%s/d%d.yaml", dir, d), body)
	}
	writeFile(t, dir+"/noop.sh", "#!/bin/sh\necho '{}'\n")
	if err := os.Chmod(dir+"/noop.sh", 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + "/d0.yaml"
}

// leaves plays the scripts of a tree, counting those running at once.
type leaves struct {
	active, most, started atomic.Int64
	// wait is how a leaf runs: it returns when the leaf may end.
	wait func(ctx context.Context, l *leaves)
}

func (l *leaves) Run(ctx context.Context, req *agent.Request) *agent.Result {
	l.started.Add(1)
	n := l.active.Add(1)
	defer l.active.Add(-1)
	for m := l.most.Load(); n > m && !l.most.CompareAndSwap(m, n); m = l.most.Load() {
	}
	l.wait(ctx, l)
	if ctx.Err() != nil {
		return &agent.Result{Err: ctx.Err()}
	}
	return &agent.Result{Output: "ok"}
}

// TestOneParallelBudgetForTheTree: a tree of children runs at most the top
// file's parallel_agent_limit agents at once (its children's own, larger
// limits do not add up), and goes on with a limit of 1: a child always
// has the slot of the agent that runs it.
func TestOneParallelBudgetForTheTree(t *testing.T) {
	t.Parallel()
	for _, parallel := range []int{1, 2} {
		t.Run(fmt.Sprint(parallel), func(t *testing.T) {
			t.Parallel()
			e, err := load(t, tree(t, t.TempDir(), 3, 3, parallel))
			if err != nil {
				t.Fatal(err)
			}
			// A leaf waits until more than the limit run at once, or a
			// moment: a tree that ran more would show it.
			l := &leaves{wait: func(ctx context.Context, l *leaves) {
				for range 20 {
					if l.active.Load() > int64(parallel) || ctx.Err() != nil {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}}
			d := kinds.Builtin().Runner(&agent.Host{}, map[string]agent.Runner{"script": l})
			res := engine.New(e, "", engine.Options{Runner: d}).Run(context.Background())
			if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
				t.Fatalf("%s: %s", res.CompletionReason, failures(res))
			}
			if l.started.Load() != 81 || l.most.Load() > int64(parallel) {
				t.Errorf("%d leaves ran, at most %d at once; the limit is %d", l.started.Load(), l.most.Load(), parallel)
			}
		})
	}
}

// TestTheDeadlineReachesTheTree: the run's timeout ends every descendant:
// the run ends timeout with no leaf still running, and no more leaves
// started than the tree's parallel budget.
func TestTheDeadlineReachesTheTree(t *testing.T) {
	t.Parallel()
	e, err := load(t, tree(t, t.TempDir(), 6, 4, 3))
	if err != nil {
		t.Fatal(err)
	}
	l := &leaves{wait: func(ctx context.Context, _ *leaves) { <-ctx.Done() }}
	d := kinds.Builtin().Runner(&agent.Host{}, map[string]agent.Runner{"script": l})
	res := engine.New(e, "", engine.Options{Runner: d, Timeout: 200 * time.Millisecond}).Run(context.Background())
	if res.CompletionReason != engine.Timeout || res.ExitCode() != engine.ExitTimeout {
		t.Fatalf("%s: %s", res.CompletionReason, failures(res))
	}
	if n := l.active.Load(); n != 0 {
		t.Errorf("%d leaves still run after the run ended", n)
	}
	if n := l.started.Load(); n > 3 {
		t.Errorf("%d leaves started; the tree's budget is 3", n)
	}
}

// TestInterruptedChildResumes: SIGINT inside a child commits nothing of the
// turn; the resumed run re-runs the child from its start.
func TestInterruptedChildResumes(t *testing.T) {
	t.Parallel()
	e, err := load(t, "testdata/parent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFake(map[string][]any{"review_round/verdict": {func(c context.Context, _ *agent.Request) *agent.Result {
		cancel() // SIGINT while the child runs
		<-c.Done()
		return &agent.Result{Err: c.Err()}
	}, "fine"}})
	r := engine.New(e, "in", engine.Options{Runner: runner(f, nil)})
	for reason := ""; reason == ""; {
		reason = r.Step(ctx)
		if reason != "" && reason != engine.Cancelled {
			t.Fatalf("reason %s", reason)
		}
	}
	st := r.State()
	if st.TurnCount != 1 || st.Executions("review_round") != 0 {
		t.Fatalf("state after the interruption: turns %d, executions %v", st.TurnCount, st.ExecutionCounts())
	}
	res := engine.Resume(e, st, engine.Options{Runner: runner(f, nil)}).Run(context.Background())
	if len(res.Errors) != 0 || res.FinalState["review_round"] != "fine" {
		t.Fatalf("%s %v", failures(res), res.FinalState)
	}
	if f.count("review_round/critic") != 2 {
		t.Errorf("the child's first agent ran %d times, want 2 (again from its start)", f.count("review_round/critic"))
	}
	if _ = format.MaxNesting; res.ConversationHistory[1].Child().TurnCount != 2 {
		t.Errorf("child %+v", res.ConversationHistory[1].Child())
	}
}

// TestReportNestsTheChild: the Markdown report writes a child's executions
// under its agent, named by path, with the child's ending.
func TestReportNestsTheChild(t *testing.T) {
	t.Parallel()
	e, err := load(t, "testdata/loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(map[string][]any{"build_loop/check": {map[string]any{"tests_pass": false}, map[string]any{"tests_pass": true}}})
	res := engine.New(e, "go", engine.Options{Runner: runner(f, nil)}).Run(context.Background())
	var b bytes.Buffer
	if err := report.Markdown(&b, res, report.MarkdownOptions{Ensemble: e}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"> **Child ensemble `build`, iteration 1 of 2**: `completed` after 2 turns",
		"> **Child ensemble `build`, iteration 2 of 2**: `completed` after 2 turns",
		"### ✓ `build_loop/check` #1\n\nscript · ",
	} {
		if strings.Count(b.String(), want) < 1 {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

// TestGrandchildPaths: a child of a child is named by its whole path, in
// injected responses and in events.
func TestGrandchildPaths(t *testing.T) {
	t.Parallel()
	resp := responses.NewResponses()
	resp.Add("outer/review_round/critic", "deep")
	e, err := load(t, "testdata/deep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Validate(e); err != nil {
		t.Fatal(err)
	}
	f := newFake(map[string][]any{"outer/review_round/verdict": {"ok"}})
	res, evs := run(t, context.Background(), "testdata/deep.yaml", "in", f, resp)
	if len(res.Errors) != 0 {
		t.Fatal(failures(res))
	}
	inner := res.ConversationHistory[0].Child().ConversationHistory[1]
	if inner.AgentName != "review_round" || inner.Child().ConversationHistory[0].OutputData != "deep" || inner.OutputData != "ok" {
		t.Errorf("inner record %+v", inner)
	}
	var paths []string
	for _, ev := range evs {
		if ev.Type == events.AgentStarted {
			paths = append(paths, ev.Agent)
		}
	}
	if got, want := strings.Join(paths, " "), "outer outer/draft outer/review_round outer/review_round/critic outer/review_round/verdict"; got != want {
		t.Errorf("started %s, want %s", got, want)
	}
}

// An ensemble agent's output_schema holds the output its child ends with.
func TestChildOutputSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		verdict any
		wantErr string
	}{
		{map[string]any{"ok": true}, ""},
		{map[string]any{"ok": "yes"}, "the output does not match output_schema: at '/ok'"},
	} {
		f := newFake(map[string][]any{"draft": {"a draft"}, "review_round/critic": {"fine"}, "review_round/verdict": {tc.verdict}})
		res, _ := run(t, context.Background(), "testdata/schema.yaml", "go", f, nil)
		got := ""
		for _, e := range res.Errors {
			got += e.Message
		}
		if tc.wantErr == "" && got != "" || tc.wantErr != "" && !strings.Contains(got, tc.wantErr) {
			t.Errorf("verdict %v: errors %q, want %q", tc.verdict, got, tc.wantErr)
		}
	}
}

// The parent's budget binds a child's model requests as they are made: a
// loop of children stops at the parent's max_requests, the run ends
// budget_exceeded, and the failure is a budget's (never retried).
func TestParentBudgetBindsTheChild(t *testing.T) {
	t.Parallel()
	var made atomic.Int32
	reserve := func(_ context.Context, req *agent.Request) *agent.Result {
		if req.Budget == nil {
			return &agent.Result{Err: errors.New("no budget reached the child's agent")}
		}
		done, err := req.Budget.Reserve()
		if err != nil {
			return &agent.Result{Err: err}
		}
		made.Add(1)
		u := &state.Usage{Requests: 1}
		done(u)
		return &agent.Result{Output: "ok", Usage: u}
	}
	// on_iteration_error: continue goes on past a failed iteration, never
	// past a spent budget.
	for _, file := range []string{"testdata/budget/parent.yaml", "testdata/budget/parent-continue.yaml"} {
		made.Store(0)
		f := newFake(map[string][]any{"rounds/ask_model": {reserve}})
		res, _ := run(t, context.Background(), file, "go", f, nil)
		if res.CompletionReason != engine.BudgetExceeded || res.ExitCode() != engine.ExitBudget || made.Load() != 3 {
			t.Fatalf("%s: completion %q exit %d after %d requests: %s", file, res.CompletionReason, res.ExitCode(), made.Load(), failures(res))
		}
	}
}

// iterationsOf is the iterations detail of a looping agent's record.
func iterationsOf(rec *state.Record) int {
	var n int
	_, _ = rec.Details.Decode(nested.IterationsDetail, &n)
	return n
}

// TestLongLoopKeepsOneIterationWhole: a loop of many iterations whose
// child outputs a large value keeps the last iteration whole and the
// earlier ones without their inputs and outputs (their executions, turns
// and endings only), so what it holds does not grow with the outputs of
// every iteration.
func TestLongLoopKeepsOneIterationWhole(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 64<<10)
	f := newFake(map[string][]any{
		"build_loop/coder": {big},
		"build_loop/check": {map[string]any{"tests_pass": false, "next_input": "again", "log": big}},
	})
	res, _ := run(t, context.Background(), "testdata/loop-long.yaml", "go", f, nil)
	if len(res.Errors) != 0 {
		t.Fatal(failures(res))
	}
	rec := res.ConversationHistory[0]
	if n := iterationsOf(rec); n != 40 {
		t.Fatalf("%d iterations", n)
	}
	last := rec.Child()
	if last == nil || len(last.ConversationHistory) != 2 || last.ConversationHistory[0].OutputData != big {
		t.Fatalf("the last iteration is not whole: %+v", last)
	}
	if len(last.Earlier) != 39 {
		t.Fatalf("%d earlier iterations", len(last.Earlier))
	}
	whole := 0
	for i, it := range last.Earlier {
		if len(it.ConversationHistory) != 2 || it.ConversationHistory[1].AgentName != "check" || it.CompletionReason != engine.Completed {
			t.Fatalf("iteration %d: %+v", i+1, it)
		}
		for _, r := range it.ConversationHistory {
			if r.OutputData != nil || r.InputData != nil {
				whole++
			}
		}
	}
	if whole != 0 {
		t.Errorf("%d records of earlier iterations keep their input or output", whole)
	}
	// What the record holds is about one iteration's outputs, not 40.
	if size := len(rec.Details.Get(state.ChildDetail)); size > 10*len(big) {
		t.Errorf("the child's record is %d bytes, for outputs of %d", size, len(big))
	}
	if res.FinalState["build_loop"].(map[string]any)["log"] != big {
		t.Error("the loop's output is not the last iteration's")
	}
}

// TestChildInputTemplate: an ensemble or dispatch agent's input template
// is the child's run input, and nothing else: text as it is, a map as
// JSON.
func TestChildInputTemplate(t *testing.T) {
	t.Parallel()
	f := newFake(map[string][]any{"draft": {map[string]any{"title": "Ode"}}})
	res, _ := run(t, context.Background(), "testdata/templated.yaml", "write a poem", f, nil)
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("%s %s", res.CompletionReason, failures(res))
	}
	got := map[string]any{}
	for _, rec := range res.ConversationHistory {
		if rec.Child() != nil {
			got[rec.AgentName] = rec.Child().ConversationHistory[0].InputData.(map[string]any)["input"]
		}
	}
	if got["review_round"] != `{"title":"Ode"}` || got["titled"] != "Review Ode" || got["routed"] != "Triage Ode" {
		t.Errorf("child inputs %v", got)
	}
}

// TestLoopContinuesPastAFailedIteration: with on_iteration_error:
// continue, a failed iteration is seen by until and carry (status, error,
// output null) and the loop goes on.
func TestLoopContinuesPastAFailedIteration(t *testing.T) {
	t.Parallel()
	fail := func(_ context.Context, req *agent.Request) *agent.Result {
		return &agent.Result{Err: errorString("it broke")}
	}
	f := newFake(map[string][]any{"build_loop/check": {fail, map[string]any{"tests_pass": true}}})
	res, _ := run(t, context.Background(), "testdata/loop-continue.yaml", "go", f, nil)
	if len(res.Errors) != 0 || res.FinalState["build_loop"].(map[string]any)["tests_pass"] != true {
		t.Fatalf("%s %v", failures(res), res.FinalState)
	}
	rec := res.ConversationHistory[0]
	if iterationsOf(rec) != 2 {
		t.Errorf("iterations %d", iterationsOf(rec))
	}
	in, _ := rec.Child().ConversationHistory[0].InputData.(map[string]any)["input"].(string)
	if !strings.HasPrefix(in, "retry after: the child ensemble rounds/build.yaml completed with a failure (check: it broke)") {
		t.Errorf("carried input %q", in)
	}
	// Failing every time: the loop is exhausted, not failed by an iteration.
	res, _ = run(t, context.Background(), "testdata/loop-continue.yaml", "go", newFake(map[string][]any{"build_loop/check": {fail}}), nil)
	if want := `loop exhausted: until (status == "ok" && output.tests_pass == true) was still false after 3 iterations`; !strings.Contains(failures(res), want) {
		t.Errorf("errors %s", failures(res))
	}
}

// TestDispatchOutput: a dispatch's output is the chosen case's agent's,
// which every case's child must have.
func TestDispatchOutput(t *testing.T) {
	t.Parallel()
	if _, err := load(t, "testdata/dispatch-output-bad.yaml"); err == nil || !strings.Contains(err.Error(), `dispatch-output-bad.yaml:10:45: cases of dispatch of agent "handle": feature output names no agent of flows/feature.yaml: "triage"`) {
		t.Errorf("a case without the output agent: %v", err)
	}
	f := newFake(map[string][]any{"router": {map[string]any{"route": "bug"}}, "handle/triage": {"a bug"}})
	res, _ := run(t, context.Background(), "testdata/dispatch-output.yaml", "", f, nil)
	if len(res.Errors) != 0 || res.FinalState["handle"] != "a bug" {
		t.Errorf("%s %v", failures(res), res.FinalState)
	}
}

// TestLoopMissingReads: until and carry that read keys the iteration's
// output lacks are warnings of the loop's agent, once each however many
// iterations read them; a strict run ends after the loop's turn.
func TestLoopMissingReads(t *testing.T) {
	t.Parallel()
	plays := map[string][]any{"build_loop/check": {map[string]any{"tests_pass": false, "next_input": "again"}}}
	res, _ := run(t, context.Background(), "testdata/loop-missing.yaml", "go", newFake(plays), nil)
	if len(res.Errors) != 0 || res.CompletionReason != engine.Completed {
		t.Fatalf("%s: %s", res.CompletionReason, failures(res))
	}
	type w struct{ path, suggestion, start string }
	var got []w
	for _, x := range res.Warnings {
		start, _, _ := strings.Cut(x.Message, " reads")
		got = append(got, w{x.Path, x.Suggestion, start})
	}
	want := []w{{"output.tests_pas", "tests_pass", "until of build_loop (output.tests_pas == true)"}, {"output.next_inpt", "next_input", "carry of build_loop"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings %+v, want %+v", got, want)
	}
	e, err := load(t, "testdata/loop-missing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res = engine.New(e, "go", engine.Options{Runner: runner(newFake(plays), nil), Strict: true}).Run(context.Background())
	if res.CompletionReason != engine.StrictWarning || res.TurnCount != 1 || res.AgentExecutionCount["after"] != 0 {
		t.Errorf("strict: %s after %d turns, %v", res.CompletionReason, res.TurnCount, res.AgentExecutionCount)
	}
}

// TestChildMissingReads: a child's reads of missing keys are warnings of
// the parent's run, by path, once however many iterations made them.
func TestChildMissingReads(t *testing.T) {
	t.Parallel()
	plays := map[string][]any{"build_loop/check": {map[string]any{"tests_pass": false}}}
	res, _ := run(t, context.Background(), "testdata/loop-child-missing.yaml", "go", newFake(plays), nil)
	if len(res.Errors) != 0 {
		t.Fatal(failures(res))
	}
	if len(res.Warnings) != 1 || res.Warnings[0].AgentName != "build_loop/after" || res.Warnings[0].Path != "context.check.tests_pas" ||
		res.Warnings[0].Suggestion != "tests_pass" {
		t.Errorf("warnings %+v", res.Warnings)
	}
}
