package a2aserve

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/serve"
)

// The metadata keys the adapter sets on a request it let through
// (interceptor.go), for the execution that follows.
const (
	metaEnsemble = "ensemble"           // the ensemble a new task runs
	metaAfter    = "ensemble_event_seq" // the run's last event before an answer
)

// adapter is the SDK's agent executor over serve's Runs: a task's
// execution starts the run (a new task, whose id is the run's) or follows
// the run an answer made go on, and turns what the run does into task
// events; it never runs an ensemble itself.
type adapter struct {
	runs *serve.Runs
	// follows counts, by task, the executions of this process that follow
	// its run (from Execute until the SDK's Cleanup).
	// pending counts the claims the door made before it answered a task's
	// run, which an execution takes over (claim).
	mu      sync.Mutex
	follows map[string]int
	pending map[string]int
}

var (
	_ a2asrv.AgentExecutor         = (*adapter)(nil)
	_ a2asrv.AgentExecutionCleaner = (*adapter)(nil)
)

func (x *adapter) followed(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.follows[id] > 0
}

func (x *adapter) follow(id string, d int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.followLocked(id, d)
}

func (x *adapter) followLocked(id string, d int) {
	x.follows[id] += d
	if x.follows[id] <= 0 {
		delete(x.follows, id)
	}
}

// claim counts task id as followed before its run is answered, so that a
// read of the task meanwhile leaves it to the execution to come; release
// undoes a claim that no execution took (the SDK refused the message).
func (x *adapter) claim(id string) (release func()) {
	x.mu.Lock()
	x.followLocked(id, 1)
	x.pending[id]++
	x.mu.Unlock()
	return func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.pending[id] > 0 {
			x.pending[id]--
			x.followLocked(id, -1)
		}
		if x.pending[id] == 0 {
			delete(x.pending, id)
		}
	}
}

// take counts an execution of task id as following it: it takes over a
// claim when there is one.
func (x *adapter) take(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pending[id] > 0 {
		x.pending[id]--
		return
	}
	x.followLocked(id, 1)
}

// Execute starts the run of a new task, or follows the run that the
// message answered (the interceptor gave the answer), until it ends or
// waits for another answer.
func (x *adapter) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	id := string(ec.TaskID)
	x.take(id)
	return func(yield func(a2a.Event, error) bool) {
		after := 0
		if ec.StoredTask == nil {
			name, _ := ec.Metadata[metaEnsemble].(string)
			input := messageText(ec.Message)
			if _, _, err := x.runs.Start(ctx, name, &input, serve.StartOptions{RunID: id}); err != nil {
				yield(nil, x.asError(err))
				return
			}
			task := a2a.NewSubmittedTask(ec, ec.Message)
			task.Metadata = map[string]any{"ensemble": name, "run_id": id}
			if !yield(task, nil) {
				return
			}
		} else if n, ok := ec.Metadata[metaAfter].(int); ok {
			after = n
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		x.track(ctx, ec, after, yield)
	}
}

// Cleanup ends an execution's following of its run.
func (x *adapter) Cleanup(ctx context.Context, ec *a2asrv.ExecutorContext, _ a2a.SendMessageResult, _ error) {
	if ec.Message != nil { // not a cancellation's
		x.follow(string(ec.TaskID), -1)
	}
}

// track follows run id from event number after: a working status update
// for each turn completed, then what the run ended with (the result
// artifact and completed, failed, canceled) or input-required with its
// questions.
func (x *adapter) track(ctx context.Context, ec *a2asrv.ExecutorContext, after int, yield func(a2a.Event, error) bool) {
	id := string(ec.TaskID)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		evs, first, live, more, err := x.runs.Events(id, after)
		if err != nil {
			yield(nil, x.asError(err))
			return
		}
		for i, ev := range evs {
			after = first + i
			if turn := events.CompletedTurn(ev); turn > 0 {
				msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(fmt.Sprintf("turn %d completed", turn)))
				msg.Metadata = map[string]any{"turn": turn}
				if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, msg), nil) {
					return
				}
			}
		}
		if !live {
			v, err := x.view(id)
			if err != nil {
				yield(nil, x.asError(err))
				return
			}
			// (interrupted: a cancel being recorded, a shutdown, another
			// process holding the run; it is read again)
			if v.state != a2a.TaskStateWorking {
				x.finish(ec, v, yield)
				return
			}
		}
		select {
		case <-more:
		case <-tick.C: // a run that ends without a new event
		case <-ctx.Done():
			return
		}
	}
}

// finish yields what a run that stopped says of its task.
func (x *adapter) finish(ec *a2asrv.ExecutorContext, v *runView, yield func(a2a.Event, error) bool) {
	if v.state.Terminal() && v.state != a2a.TaskStateCanceled {
		art := a2a.NewArtifactEvent(ec)
		art.Artifact = x.resultArtifact(string(ec.TaskID), v.res)
		art.LastChunk = true
		if !yield(art, nil) {
			return
		}
	}
	ev := a2a.NewStatusUpdateEvent(ec, v.state, nil)
	ev.Status = x.status(ec, v)
	yield(ev, nil)
}

// Cancel cancels the task's run. An execution that follows the run says
// it was cancelled (the SDK takes its events as the cancellation's: one
// canceled status, not two); without one, Cancel says it.
func (x *adapter) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		followed := x.followed(string(ec.TaskID))
		if err := x.runs.Cancel(string(ec.TaskID)); err != nil {
			e := x.asError(err)
			if ae, ok := e.(*a2a.Error); ok && ae.Err == a2a.ErrInvalidParams {
				e = a2a.NewError(a2a.ErrTaskNotCancelable, ae.Message)
			}
			yield(nil, e)
			return
		}
		if !followed {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
		}
	}
}

// messageText is what a message says as a run's input or an answer: its
// text parts, joined by newlines; a data part as its JSON text (a string
// as it is).
func messageText(m *a2a.Message) string {
	var texts []string
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
		case a2a.Data:
			texts = append(texts, jsonvalue.Text(c.Value))
		}
	}
	return strings.Join(texts, "\n")
}
