package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
)

// chatty emits n text deltas per execution, then answers.
func chatty(n int) agentpkg.Runner {
	return agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		for i := range n {
			req.Events.Emit(events.Event{Type: events.TextDelta, Execution: req.Execution, Message: fmt.Sprint(i)})
		}
		return &agentpkg.Result{Output: req.Agent.Name}
	})
}

func TestEventsYieldsTheWholeStreamEndingWithTheResult(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1, "a"), agent("c", 1, "a"))
	var mu sync.Mutex
	var pushed []events.Event
	sink := func(ev events.Event) { mu.Lock(); pushed = append(pushed, ev); mu.Unlock() }
	r := engine.New(e, "in", engine.Options{Runner: chatty(3), Events: sink})
	var pulled []events.Event
	for ev := range r.Events(context.Background()) {
		if ev.Time.IsZero() {
			t.Fatalf("%s has no timestamp", ev.Type)
		}
		pulled = append(pulled, ev)
	}
	last := pulled[len(pulled)-1]
	res, ok := last.Result.(*engine.Result)
	if last.Type != events.RunCompleted || !ok || res.CompletionReason != engine.Completed || last.Message != engine.Completed {
		t.Fatalf("last event %+v", last)
	}
	counts := map[events.Type]int{}
	for _, ev := range pulled {
		counts[ev.Type]++
	}
	// Agents of one turn run concurrently, so the two consumers may see
	// their events interleaved differently; each agent's own sequence, and
	// the run's, must be the same.
	if got, want := perAgent(pulled), perAgent(pushed); !reflect.DeepEqual(got, want) {
		t.Fatalf("the pulled stream differs from the pushed one:\n%v\n%v", got, want)
	}
	if counts[events.AgentCompleted] != len(res.ConversationHistory) || counts[events.TurnStarted] != res.TurnCount ||
		counts[events.TextDelta] != 9 || counts[events.AgentFinished] != 3 || counts[events.RunStarted] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

func TestEventsSlowReaderLosesNothing(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1), agent("b", 1))
	r := engine.New(e, "", engine.Options{Runner: chatty(3 * events.DefaultBuffer)})
	next := map[string]int{}
	n := 0
	for ev := range r.Events(context.Background()) {
		if ev.Type != events.TextDelta {
			continue
		}
		if n++; n%500 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		if ev.Message != fmt.Sprint(next[ev.Agent]) {
			t.Fatalf("%s: delta %s, want %d", ev.Agent, ev.Message, next[ev.Agent])
		}
		next[ev.Agent]++
	}
	if n != 6*events.DefaultBuffer {
		t.Fatalf("got %d deltas", n)
	}
}

func TestEventsLeavingTheLoopCancelsTheRun(t *testing.T) {
	t.Parallel()
	e := build(agent("fast", 1), agent("slow", 1, "fast"))
	var reason string
	sink := func(ev events.Event) {
		if ev.Type == events.RunCompleted {
			reason = ev.Message
		}
	}
	r := engine.New(e, "", engine.Options{Runner: blocking(nil), Events: sink})
	for ev := range r.Events(context.Background()) {
		if ev.Type == events.AgentStarted && ev.Agent == "slow" {
			break
		}
	}
	// The loop returns only once the run has ended.
	if reason != engine.Cancelled {
		t.Fatalf("reason %q", reason)
	}
}

func TestEventsAStuckReaderDoesNotHoldTheRunBeyondItsTimeout(t *testing.T) {
	t.Parallel()
	e := build(agent("a", 1))
	ended := make(chan string, 1)
	sink := func(ev events.Event) {
		if ev.Type == events.RunCompleted {
			ended <- ev.Message
		}
	}
	// The agent fills the buffer many times over, then works until the run's
	// timeout: the run must end by that timeout whatever the reader does
	// (an agent that finished first would make the run complete instead).
	chattyThenBusy := agentpkg.RunnerFunc(func(ctx context.Context, req *agentpkg.Request) *agentpkg.Result {
		res := chatty(10*events.DefaultBuffer).Run(ctx, req)
		<-ctx.Done()
		res.Err = ctx.Err()
		return res
	})
	r := engine.New(e, "", engine.Options{Runner: chattyThenBusy, Events: sink, Timeout: 100 * time.Millisecond})
	var last events.Event
	first := true
	for ev := range r.Events(context.Background()) {
		if first {
			first = false
			select { // the reader is stuck; the run still ends
			case reason := <-ended:
				if reason != engine.Timeout {
					t.Errorf("reason %q", reason)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a stuck reader held the run up")
			}
		}
		last = ev
	}
	if last.Type != events.RunCompleted {
		t.Fatalf("the stream did not end with run_completed: %v", last.Type)
	}
}

// perAgent splits a stream into each agent's sequence of event types ("" for
// the run's own events).
func perAgent(evs []events.Event) map[string][]events.Type {
	m := map[string][]events.Type{}
	for _, ev := range evs {
		m[ev.Agent] = append(m[ev.Agent], ev.Type)
	}
	return m
}
