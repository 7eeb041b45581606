// Package temporal_test runs ensembles through the Temporal engine
// (package temporalengine) against a real Temporal server started in the
// test process, and checks that they end exactly as with the local engine
// (docs/temporal.md). It is a module of its own so that the main module
// never carries the server.
package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/temporalengine"
)

// waitFor is how long a test waits for a run: generous, for a busy machine.
const waitFor = 3 * time.Minute

var ids atomic.Int64

// server starts an in-process Temporal server with one worker on a task
// queue of the test's own.
func server(t *testing.T) (*temporaltest.TestServer, client.Client, string) {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	return ts, ts.GetDefaultClient(), fmt.Sprintf("q-%s-%d", t.Name(), ids.Add(1))
}

func startWorker(ts *temporaltest.TestServer, queue string, env *temporalengine.Env) worker.Worker {
	return ts.NewWorker(queue, func(r worker.Registry) { temporalengine.Register(r, env) })
}

// example is the input of a run of examples/NAME with its responses.
func example(t *testing.T, name string) temporalengine.RunInput {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	in, err := temporalengine.NewInput(filepath.Join(dir, "ensemble.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	in.Responses = filepath.Join(dir, "responses.yaml")
	return in
}

// runTemporal runs in as a workflow and returns its output.
func runTemporal(t *testing.T, c client.Client, queue string, in temporalengine.RunInput) *temporalengine.RunOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	run, err := temporalengine.Start(ctx, c, queue, fmt.Sprintf("run-%d", ids.Add(1)), in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := temporalengine.Wait(ctx, c, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runLocal(t *testing.T, in temporalengine.RunInput) *temporalengine.RunOutput {
	t.Helper()
	out, err := temporalengine.RunLocal(context.Background(), &temporalengine.Env{}, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// comparable is a result JSON less what differs between two runs of the
// same ensemble: times and durations.
func comparable(t *testing.T, result []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		t.Fatalf("result: %v\n%s", err, result)
	}
	return strip(v)
}

func strip(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k := range v {
			switch k {
			case "timestamp", "duration_seconds", "duration", "execution_time", "started_at", "ended_at":
				delete(v, k)
			default:
				v[k] = strip(v[k])
			}
		}
	case []any:
		for i := range v {
			v[i] = strip(v[i])
		}
	}
	return v
}

func sameResult(t *testing.T, local, remote *temporalengine.RunOutput) {
	t.Helper()
	if local.ExitCode != remote.ExitCode {
		t.Errorf("exit code: local %d, temporal %d", local.ExitCode, remote.ExitCode)
	}
	a, b := comparable(t, local.Result), comparable(t, remote.Result)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("results differ\nlocal:\n%s\ntemporal:\n%s", indent(a), indent(b))
	}
}

func indent(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// The examples that end on their own (approval waits for a person: see
// TestAskAgentAnsweredBySignal).
var table = []string{"hello-scripts", "iterative-analysis", "build-loop", "map-reduce", "routing", "runaway-loop", "writer-reviewer", "local-ollama", "guarded-join"}

// TestSameResultAsLocal runs every example of the table through both
// engines and compares the results, events' types and exit codes.
func TestSameResultAsLocal(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	for _, name := range table {
		t.Run(name, func(t *testing.T) {
			in := example(t, name)
			local := runLocal(t, in)
			remote := runTemporal(t, c, queue, in)
			sameResult(t, local, remote)
			if lt, rt := types(local), types(remote); !reflect.DeepEqual(lt, rt) {
				t.Errorf("events differ\nlocal:    %v\ntemporal: %v", lt, rt)
			}
		})
	}
}

func types(out *temporalengine.RunOutput) []string {
	var s []string
	for _, ev := range out.Events {
		s = append(s, string(ev.Type)+":"+ev.Agent)
	}
	slices.Sort(s) // executions of a turn run concurrently, in any order
	return s
}

type eventsEvent = events.Event

// temporaltestServer is a server for a benchmark, stopped when it ends.
func temporaltestServer(b *testing.B) *temporaltest.TestServer {
	ts := temporaltest.NewServer()
	b.Cleanup(ts.Stop)
	return ts
}
