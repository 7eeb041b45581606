package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
)

// An execution that failed on its own in a turn the run's timeout then
// cut short is reported with its own error, not as stopped by the timeout
// (docs/semantics.md#end-of-a-run-and-exit-codes).
func TestInterruptedTurnKeepsAnExecutionsOwnFailure(t *testing.T) {
	t.Parallel()
	e := build(agent("own", 1), agent("slow", 1))
	runner := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		if req.Agent.Name == "own" {
			return &agentpkg.Result{Err: errors.New("timeout: agent timeout of 1s")}
		}
		<-ctx.Done()
		return &agentpkg.Result{Err: ctx.Err()}
	})
	res := engine.New(e, "", engine.Options{Runner: runner, Timeout: 200 * time.Millisecond}).Run(context.Background())
	if res.CompletionReason != engine.Timeout {
		t.Fatalf("reason %q", res.CompletionReason)
	}
	want := map[string]string{
		"own":  "failed: timeout: agent timeout of 1s (then the run reached its timeout before its turn ended)",
		"slow": "stopped before it finished: the run reached its timeout",
	}
	if len(res.Errors) != 2 {
		t.Fatalf("errors %+v", res.Errors)
	}
	for _, got := range res.Errors {
		if got.Message != want[got.AgentName] {
			t.Errorf("%s: %q, want %q", got.AgentName, got.Message, want[got.AgentName])
		}
	}
}
