package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ensemble-run/ensemble/temporalengine"
)

// bareWorkflow is what a hand-written Temporal workflow of the ensemble
// testdata/three.yaml would do: its three script agents in a row, each
// the engine's own execution activity (the same scripts, run the same
// way), each given the output of the one before; no turn loop, state,
// events, queries nor deadline timer.
func bareWorkflow(ctx workflow.Context, in temporalengine.RunInput) (map[string]any, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	deps := map[string]any{}
	for i, name := range []string{"first", "second", "third"} {
		ex := temporalengine.ExecInput{Path: in.Path, SHA256: in.SHA256, Agent: name, Input: in.Input,
			Turn: i + 1, Execution: 1, Dependencies: deps}
		var out temporalengine.ExecOutput
		if err := workflow.ExecuteActivity(actx, temporalengine.ActivityName, ex).Get(ctx, &out); err != nil {
			return nil, err
		}
		if out.Error != "" {
			return nil, errors.New(out.Error)
		}
		deps = map[string]any{name: out.Output}
	}
	return deps, nil
}

// BenchmarkEngineVsBareWorkflow runs testdata/three.yaml (three script
// agents in a row, run for real) on the Temporal engine and through
// bareWorkflow, on one in-process server whose two workers register
// both: in each iteration a batch of runs of each (the one that goes first
// alternating), one at a time (latency) or 50 at once (throughput). It
// reports each one's time per run and their ratio, engine/bare, and the
// ratio of their median runs' times
// (docs/performance.md#against-a-bare-temporal-workflow: the target is 1.5
// at most).
func BenchmarkEngineVsBareWorkflow(b *testing.B) {
	p, _ := filepath.Abs(filepath.Join("testdata", "three.yaml"))
	in, err := temporalengine.NewInput(p, "go")
	if err != nil {
		b.Fatal(err)
	}
	ts := temporaltestServer(b)
	c := ts.GetDefaultClient()
	const queue = "bench-bare"
	for range 2 {
		ts.NewWorker(queue, func(r worker.Registry) {
			temporalengine.Register(r, &temporalengine.Env{})
			r.RegisterWorkflowWithOptions(bareWorkflow, workflow.RegisterOptions{Name: "bench.bare"})
		})
	}
	for _, x := range []struct {
		name         string
		runs, atOnce int
	}{{"one-at-a-time", 20, 1}, {"50-at-once", 50, 50}} {
		b.Run(x.name, func(b *testing.B) {
			var engRuns, bareRuns []time.Duration
			batch := func(tag, workflowName string, runs *[]time.Duration) time.Duration {
				start := time.Now()
				each, err := runBatch(c, queue, tag, workflowName, in, x.runs, x.atOnce)
				if err != nil {
					b.Fatal(err)
				}
				if runs != nil {
					*runs = append(*runs, each...)
				}
				return time.Since(start)
			}
			batch(x.name+"-warm", temporalengine.WorkflowName, nil) // the file loaded, the sessions made
			batch(x.name+"-warm", "bench.bare", nil)
			var eng, bare time.Duration
			b.ResetTimer()
			for i := range b.N {
				tag := fmt.Sprintf("%s-%d", x.name, i)
				if i%2 == 0 {
					eng += batch(tag, temporalengine.WorkflowName, &engRuns)
					bare += batch(tag, "bench.bare", &bareRuns)
				} else {
					bare += batch(tag, "bench.bare", &bareRuns)
					eng += batch(tag, temporalengine.WorkflowName, &engRuns)
				}
			}
			n := float64(b.N * x.runs)
			b.ReportMetric(float64(eng.Nanoseconds())/n, "ns/engine-run")
			b.ReportMetric(float64(bare.Nanoseconds())/n, "ns/bare-run")
			b.ReportMetric(float64(eng)/float64(bare), "engine/bare")
			// The median run: a hiccup of the test server on a loaded
			// machine (a run that waits seconds for a workflow task) falls
			// on either side at random, and weighs on the mean alone.
			b.ReportMetric(float64(median(engRuns))/float64(median(bareRuns)), "p50-engine/bare")
		})
	}
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// runBatch runs n workflows of workflowName with in, atOnce at a time,
// waits for them all and returns the time each took.
func runBatch(c client.Client, queue, tag, workflowName string, in temporalengine.RunInput, n, atOnce int) ([]time.Duration, error) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	took := make([]time.Duration, n)
	slots := make(chan struct{}, atOnce)
	for j := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			opts := client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%s-%d", workflowName, tag, j), TaskQueue: queue}
			start := time.Now()
			run, err := c.ExecuteWorkflow(ctx, opts, workflowName, in)
			if err == nil {
				err = run.Get(ctx, nil)
			}
			took[j] = time.Since(start)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return took, errors.Join(all...)
}
