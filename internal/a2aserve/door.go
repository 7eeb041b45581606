package a2aserve

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// door is the SDK's request handler with what a message needs before its
// execution: a new task's ensemble (the endpoint's, or the one its
// metadata names), and an answer given to the run of the task it
// continues, checked as POST /v1/runs/ID/answers checks one (the first
// answer wins, whichever door it came through; one for a question the run
// no longer waits for is refused). A refused message is an error of the
// request, and leaves its task as it was.
type door struct {
	a2asrv.RequestHandler
	x     *adapter
	tasks *taskStore
	// endpoint is the ensemble whose endpoint (/a2a/ensembles/NAME) the
	// door serves; "" for the server-wide one.
	endpoint string
}

func (d *door) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	release, err := d.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	defer release()
	return d.RequestHandler.SendMessage(ctx, req)
}

func (d *door) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		release, err := d.prepare(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		defer release()
		for ev, err := range d.RequestHandler.SendStreamingMessage(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

func noop() {}

// prepare names a new task's ensemble in the request's metadata, or
// answers the run of the task the message continues.
func (d *door) prepare(ctx context.Context, req *a2a.SendMessageRequest) (release func(), err error) {
	if req == nil || req.Message == nil {
		return noop, nil // the SDK refuses it
	}
	delete(req.Metadata, metaAfter) // only the door sets it
	if req.Message.TaskID == "" {
		name, err := d.ensembleFor(req)
		if err != nil {
			return nil, err
		}
		req.SetMeta(metaEnsemble, name)
		return noop, nil
	}
	return d.answer(req)
}

// ensembleFor is the ensemble a new task runs: the endpoint's; else the
// one the request's or the message's metadata names ("ensemble"); else
// the only one served.
func (d *door) ensembleFor(req *a2a.SendMessageRequest) (string, error) {
	if d.endpoint != "" {
		return d.endpoint, nil
	}
	name, _ := req.Metadata[metaEnsemble].(string)
	if name == "" {
		name, _ = req.Message.Metadata[metaEnsemble].(string)
	}
	var names []string
	for _, e := range d.x.runs.Ensembles() {
		names = append(names, e.Name)
	}
	switch {
	case name == "" && len(names) == 1:
		return names[0], nil
	case name == "":
		return "", a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(
			"name the ensemble to run in the message's metadata, {\"ensemble\": NAME} (one of %s), or send it to /a2a/ensembles/NAME",
			strings.Join(names, ", ")))
	case !slices.Contains(names, name):
		return "", a2a.NewError(a2a.ErrInvalidParams, d.x.runs.Redact(fmt.Sprintf("no ensemble %q is served (%s)", name, strings.Join(names, ", "))))
	}
	return name, nil
}

// answer gives the message, as the answer to the question its task
// shows, to the task's run; the run goes on, and the execution to come
// follows it from the last event before the answer.
func (d *door) answer(req *a2a.SendMessageRequest) (func(), error) {
	m := req.Message
	id := string(m.TaskID)
	st, err := d.tasks.raw(m.TaskID)
	if err != nil {
		return nil, err
	}
	t := st.Task
	if t.Status.State != a2a.TaskStateInputRequired {
		return nil, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("task %s is %s: it waits for no answer", id, t.Status.State))
	}
	agent, err := agentAnswered(t, m)
	if err != nil {
		return nil, err
	}
	release := d.x.claim(id)
	evs, first, _, _, err := d.x.runs.Events(id, 0)
	if err != nil {
		release()
		return nil, d.x.asError(err)
	}
	after := first + len(evs) - 1
	// the question's turn is the one its answer is recorded in: the run
	// is at the one before while it waits
	if err := d.x.runs.Answer(id, map[string]string{agent: messageText(m)}, max(0, turnAsked(t)-1)); err != nil {
		release()
		return nil, d.x.asError(err)
	}
	req.SetMeta(metaAfter, after)
	return release, nil
}

// agentAnswered is the agent a message answers: the one its metadata
// names ("agent"), else the one the task waits for.
func agentAnswered(t *a2a.Task, m *a2a.Message) (string, error) {
	var waiting []string
	if t.Status.Message != nil {
		for _, p := range t.Status.Message.Parts {
			if q, ok := p.Data().(map[string]any); ok {
				if a, ok := q["agent"].(string); ok {
					waiting = append(waiting, a)
				}
			}
		}
	}
	named, _ := m.Metadata["agent"].(string)
	switch {
	case named != "" && !slices.Contains(waiting, named):
		return "", a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("task %s waits for no answer of %q (it waits for %s)", t.ID, named, strings.Join(waiting, ", ")))
	case named != "":
		return named, nil
	case len(waiting) == 1:
		return waiting[0], nil
	case len(waiting) == 0:
		return "", a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("task %s names no question", t.ID))
	}
	return "", a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(
		"task %s waits for %s: name the agent answered in the message's metadata, {\"agent\": NAME}", t.ID, strings.Join(waiting, ", ")))
}

// SubscribeToTask joins the stream of the execution that follows the
// task's run; when none does (its run was answered through another door,
// or goes on after a restart), it follows the run itself: the task as it
// is read (reconciled), then the run's events as an execution would give
// them, until it ends or waits. What it streams then is not written: a
// read of the task brings it up to date.
func (d *door) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		first := true
		for ev, err := range d.RequestHandler.SubscribeToTask(ctx, req) {
			if first && err != nil && req != nil && !d.x.followed(string(req.ID)) {
				d.followRun(ctx, req.ID, yield)
				return
			}
			first = false
			if !yield(ev, err) {
				return
			}
		}
	}
}

// followRun streams task id's run where no execution does.
func (d *door) followRun(ctx context.Context, id a2a.TaskID, yield func(a2a.Event, error) bool) {
	st, err := d.tasks.Get(ctx, id)
	if err != nil {
		yield(nil, err)
		return
	}
	t := st.Task
	if !yield(t, nil) || t.Status.State != a2a.TaskStateWorking {
		return
	}
	evs, first, _, _, err := d.x.runs.Events(string(id), 0)
	if err != nil {
		yield(nil, d.x.asError(err))
		return
	}
	ec := &a2asrv.ExecutorContext{TaskID: t.ID, ContextID: t.ContextID}
	d.x.track(ctx, ec, first+len(evs)-1, yield)
}
