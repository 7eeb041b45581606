package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/temporalengine"
)

// TestContinueAsNew plays runs that continue as new every turn or two: the
// result is the one run's.
func TestContinueAsNew(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	for _, tc := range []struct {
		name string
		per  int
	}{{"runaway-loop", 2}, {"iterative-analysis", 1}, {"writer-reviewer", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			in := example(t, tc.name)
			local := runLocal(t, in)
			in.TurnsPerRun = tc.per
			sameResult(t, local, runTemporal(t, c, queue, in))
		})
	}
}

// TestReplay replays the recorded history of a run with
// worker.WorkflowReplayer: the workflow is deterministic.
func TestReplay(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	for _, name := range []string{"map-reduce", "routing", "writer-reviewer"} {
		t.Run(name, func(t *testing.T) {
			in := example(t, name)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			run, err := temporalengine.Start(ctx, c, queue, "replay-"+name, in)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := temporalengine.Wait(ctx, c, run, nil); err != nil {
				t.Fatal(err)
			}
			hist := history(ctx, t, c, run.GetID())
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions((&temporalengine.Workflows{Env: &temporalengine.Env{}}).Run, workflow.RegisterOptions{Name: temporalengine.WorkflowName})
			if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
				t.Fatalf("replay: %v", err)
			}
		})
	}
}

func history(ctx context.Context, t *testing.T, c client.Client, id string) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return h
}

// TestAskAgentAnsweredBySignal runs the approval example with no responses:
// its approver waits, the state query says so, and a signal answers it.
func TestAskAgentAnsweredBySignal(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	in := example(t, "approval")
	in.Responses = ""
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	run, err := temporalengine.Start(ctx, c, queue, "approval", in)
	if err != nil {
		t.Fatal(err)
	}
	// Wait, on events, until the run asks.
	asked := make(chan struct{})
	var once sync.Once
	var out *temporalengine.RunOutput
	done := make(chan error, 1)
	go func() {
		var err error
		out, err = temporalengine.Wait(ctx, c, run, func(ev eventsEvent) {
			if ev.Type == "input_requested" && ev.Agent == "approver" {
				once.Do(func() { close(asked) })
			}
		})
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("the run ended without asking: %v", err)
	}
	sf, err := temporalengine.QueryState(ctx, c, run.GetID())
	if err != nil {
		t.Fatal(err)
	}
	if sf.CompletionReason != engine.AwaitingInput {
		t.Errorf("state query: completion_reason %q, want %q", sf.CompletionReason, engine.AwaitingInput)
	}
	if err := temporalengine.SendAnswer(ctx, c, run.GetID(), "approver", `{"approved": true}`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var res engine.Result
	if err := json.Unmarshal(out.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.CompletionReason != engine.Completed || res.AgentExecutionCount["publisher"] != 1 || res.AgentExecutionCount["approver"] != 1 {
		t.Errorf("got %s with executions %v, want completed with approver and publisher once each", res.CompletionReason, res.AgentExecutionCount)
	}
	if got := fmt.Sprint(res.FinalState["approver"]); got != "map[approved:true]" {
		t.Errorf("approver's output %s, want the answer", got)
	}
}

// fake answers every agent with its name and execution, except that the
// first execution of "second" on a worker marked victim blocks until the
// worker stops.
type fake struct {
	victim  bool
	started chan struct{}
	once    sync.Once
}

func (f *fake) Run(ctx context.Context, req *agent.Request) *agent.Result {
	if f.victim && req.Agent.Name == "second" {
		f.once.Do(func() { close(f.started) })
		<-ctx.Done()
		return &agent.Result{Err: ctx.Err()}
	}
	return &agent.Result{Output: map[string]any{"agent": req.Agent.Name, "execution": float64(req.Execution), "deps": req.Dependencies}}
}

func threeInput(t *testing.T) temporalengine.RunInput {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "three.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := temporalengine.NewInput(p, "")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestWorkerLoss stops the worker that runs an execution while it runs: the
// execution is given to the other worker, and the run ends with the result
// of a run that lost nothing.
func TestWorkerLoss(t *testing.T) {
	ts, c, queue := server(t)
	in := threeInput(t)
	victim := &fake{victim: true, started: make(chan struct{})}
	w1 := startWorker(ts, queue, &temporalengine.Env{Runner: victim})
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	run, err := temporalengine.Start(ctx, c, queue, "loss", in)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-victim.started:
	case <-ctx.Done():
		t.Fatal("the execution never started on the first worker")
	}
	startWorker(ts, queue, &temporalengine.Env{Runner: &fake{}})
	w1.Stop()
	out, err := temporalengine.Wait(ctx, c, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	local, err := temporalengine.RunLocal(context.Background(), &temporalengine.Env{Runner: &fake{}}, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, local, out)
	var res engine.Result
	if err := json.Unmarshal(out.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.CompletionReason != engine.Completed || res.TurnCount != 3 || len(res.ConversationHistory) != 3 {
		t.Errorf("got %s after %d turns and %d records, want completed after 3 turns and 3 records (no turn twice)",
			res.CompletionReason, res.TurnCount, len(res.ConversationHistory))
	}
}

// BenchmarkRuns starts 200 runs of a 3-agent ensemble (injected responses)
// on the in-process server with two workers, and waits for all of them
// (docs/performance.md#temporal). Local is the same 200 runs through the
// local engine, one after another.
func BenchmarkRuns(b *testing.B) {
	const runs = 200
	p, _ := filepath.Abs(filepath.Join("testdata", "three.yaml"))
	in, err := temporalengine.NewInput(p, "")
	if err != nil {
		b.Fatal(err)
	}
	in.Responses, _ = filepath.Abs(filepath.Join("testdata", "three.responses.yaml"))
	b.Run("temporal", func(b *testing.B) {
		ts := temporaltestServer(b)
		c := ts.GetDefaultClient()
		queue := "bench"
		for range 2 {
			ts.NewWorker(queue, func(r worker.Registry) { temporalengine.Register(r, &temporalengine.Env{}) })
		}
		ctx := context.Background()
		b.ResetTimer()
		for i := range b.N {
			var wg sync.WaitGroup
			errs := make(chan error, runs)
			for j := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					run, err := temporalengine.Start(ctx, c, queue, fmt.Sprintf("bench-%d-%d", i, j), in)
					if err == nil {
						_, err = temporalengine.Wait(ctx, c, run, nil)
					}
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs), "ns/run")
	})
	b.Run("local", func(b *testing.B) {
		env := &temporalengine.Env{}
		for range b.N {
			for range runs {
				if _, err := temporalengine.RunLocal(context.Background(), env, in, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs), "ns/run")
	})
}

// TestLargePayloadsByReference sends every payload over 256 bytes through
// files: the run ends as a local one.
func TestLargePayloadsByReference(t *testing.T) {
	dir := t.TempDir()
	blobs := &temporalengine.Blobs{Dir: dir, Limit: 256}
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(client.Options{DataConverter: blobs.DataConverter()}))
	c, queue := ts.GetDefaultClient(), "blobs"
	startWorker(ts, queue, &temporalengine.Env{})
	in := example(t, "iterative-analysis")
	sameResult(t, runLocal(t, in), runTemporal(t, c, queue, in))
	if files, _ := os.ReadDir(dir); len(files) == 0 {
		t.Error("no payload went by reference")
	}
}

// blocker's "second" runs until it is cancelled.
type blocker struct{}

func (blocker) Run(ctx context.Context, req *agent.Request) *agent.Result {
	if req.Agent.Name == "second" {
		<-ctx.Done()
		return &agent.Result{Err: ctx.Err()}
	}
	return &agent.Result{Output: req.Agent.Name}
}

// TestRunTimeout: a run whose execution outlasts the run's timeout ends
// timeout, its turn not committed, as locally.
func TestRunTimeout(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{Runner: blocker{}})
	in := threeInput(t)
	in.Timeout = 2 * time.Second
	local, err := temporalengine.RunLocal(context.Background(), &temporalengine.Env{Runner: blocker{}}, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	remote := runTemporal(t, c, queue, in)
	sameResult(t, local, remote)
	var res engine.Result
	if err := json.Unmarshal(remote.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.CompletionReason != engine.Timeout || res.TurnCount != 1 {
		t.Errorf("got %s after %d turns, want timeout after 1", res.CompletionReason, res.TurnCount)
	}
}

// TestFanOutMaxParallel: a fan-out's instances run at most max_parallel at
// once on Temporal too. Each instance holds a lock directory while it runs
// and fails if another holds it, so with max_parallel 1 under a parallel
// limit of 4, any overlap fails the run.
func TestFanOutMaxParallel(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	dir := t.TempDir()
	for name, body := range map[string]string{
		"ensemble.yaml": `name: fan-limit
conversation_limits: {parallel_agent_limit: 4}
agents:
  - name: split
    script: split.sh
  - name: work
    script: work.sh
    fan_out: {over: "context.split.items", max_parallel: 1}
    dependencies: [split]
`,
		"split.sh": "#!/bin/sh\ncat >/dev/null\necho '{\"items\": [1, 2, 3, 4, 5]}'\n",
		"work.sh":  "#!/bin/sh\ncat >/dev/null\nmkdir lock || { echo 'another instance is running' >&2; exit 1; }\nsleep 0.3\nrmdir lock\necho '{\"done\": true}'\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in, err := temporalengine.NewInput(filepath.Join(dir, "ensemble.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	local, remote := runLocal(t, in), runTemporal(t, c, queue, in)
	sameResult(t, local, remote)
	var res engine.Result
	if err := json.Unmarshal(remote.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 0 || res.AgentExecutionCount["work"] != 1 {
		t.Fatalf("errors %+v, executions %v", res.Errors, res.AgentExecutionCount)
	}
}
