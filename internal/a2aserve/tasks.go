package a2aserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/serve"
)

// A task is a run: what its status and artifacts say is read from the run
// as its last saved turn has it (runView), and written into the task by
// the events of the execution that follows the run, or by the task store
// when no execution does (reconcile, taskstore.go).

// answerSchema is the JSON Schema of an ask agent's answer: text (JSON
// text gives a value, as resume --answer takes it), which a data part
// may give as a value too.
func answerSchema() map[string]any { return map[string]any{"type": "string"} }

// runView is what a run says of its task.
type runView struct {
	state     a2a.TaskState
	status    string // the run's (serve's statuses)
	res       *engine.Result
	questions []engine.PendingInput
}

// stateOf is the task state of a run's status.
func stateOf(status string, res *engine.Result) a2a.TaskState {
	switch status {
	case serve.StatusQueued, serve.StatusRunning, serve.StatusInterrupted:
		return a2a.TaskStateWorking
	case serve.StatusCancelled:
		return a2a.TaskStateCanceled
	case engine.AwaitingInput:
		return a2a.TaskStateInputRequired
	}
	if res != nil && res.ExitCode() == 0 {
		return a2a.TaskStateCompleted
	}
	return a2a.TaskStateFailed
}

// view reads run id.
func (x *adapter) view(id string) (*runView, error) {
	res, status, err := x.runs.RunResult(id)
	if err != nil {
		return nil, err
	}
	res.SetOutput(x.runs.Ensemble(res.Ensemble))
	v := &runView{status: status, res: res, state: stateOf(status, res)}
	if v.state == a2a.TaskStateInputRequired {
		v.questions = res.PendingInput
	}
	return v, nil
}

// clean is v with every secret of the served ensembles redacted, as JSON
// values go out.
func (x *adapter) clean(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal([]byte(x.runs.Redact(string(b))), &out) != nil {
		return nil
	}
	return out
}

// questionMessage is the status message of a task that waits: each
// question as text, and as a data part {agent, question, schema, turn}.
func (x *adapter) questionMessage(info a2a.TaskInfoProvider, qs []engine.PendingInput) *a2a.Message {
	var parts []*a2a.Part
	for _, q := range qs {
		parts = append(parts, a2a.NewTextPart(x.runs.Redact(q.Question)))
	}
	for _, q := range qs {
		parts = append(parts, a2a.NewDataPart(map[string]any{"agent": q.Agent, "question": x.runs.Redact(q.Question),
			"schema": answerSchema(), "turn": q.Turn, "dependencies": x.clean(q.Dependencies)}))
	}
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, info, parts...)
}

// resultArtifact is the artifact of a run that ended: what the ensemble
// returns (the output of its output: agent; a string as text, any other
// value as data), or the run's result JSON (as data) when it has none.
func (x *adapter) resultArtifact(id string, res *engine.Result) *a2a.Artifact {
	var part *a2a.Part
	switch out := res.Output.(type) {
	case nil:
		var all any
		if b, err := json.Marshal(res); err == nil {
			json.Unmarshal(b, &all)
		}
		part = a2a.NewDataPart(x.clean(all))
	case string:
		part = a2a.NewTextPart(x.runs.Redact(out))
	default:
		part = a2a.NewDataPart(x.clean(out))
	}
	return &a2a.Artifact{ID: a2a.ArtifactID("result"), Name: "result", Parts: a2a.ContentParts{part},
		Metadata: map[string]any{"run_id": id, "completion_reason": res.CompletionReason}}
}

// failure is the status message of a run that failed: its errors.
func (x *adapter) failure(info a2a.TaskInfoProvider, v *runView) *a2a.Message {
	var lines []string
	for _, e := range v.res.Errors {
		lines = append(lines, fmt.Sprintf("%s: %s", e.AgentName, e.Message))
	}
	text := fmt.Sprintf("the run ended %s", v.res.CompletionReason)
	if len(lines) > 0 {
		text += ": " + strings.Join(lines, "; ")
	}
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.NewTextPart(x.runs.Redact(text)))
}

// status is the task status v says.
func (x *adapter) status(info a2a.TaskInfoProvider, v *runView) a2a.TaskStatus {
	now := time.Now().UTC()
	st := a2a.TaskStatus{State: v.state, Timestamp: &now}
	switch v.state {
	case a2a.TaskStateInputRequired:
		st.Message = x.questionMessage(info, v.questions)
	case a2a.TaskStateFailed:
		st.Message = x.failure(info, v)
	}
	return st
}

// turnAsked is the turn the questions of a task that waits were asked at
// (their answers' turn), 0 when its status names none.
func turnAsked(t *a2a.Task) int {
	if t.Status.Message == nil {
		return 0
	}
	for _, p := range t.Status.Message.Parts {
		if m, ok := p.Data().(map[string]any); ok {
			if n, ok := m["turn"].(float64); ok {
				return int(n)
			}
			if n, ok := m["turn"].(int); ok {
				return n
			}
		}
	}
	return 0
}

// asError turns a refusal of the run machinery into the A2A error that
// fits, its message redacted.
func (x *adapter) asError(err error) error {
	var e *serve.Error
	if !errors.As(err, &e) {
		return a2a.NewError(a2a.ErrInternalError, x.runs.Redact(err.Error()))
	}
	base := a2a.ErrInvalidParams
	switch e.Code {
	case serve.CodeNotFound:
		base = a2a.ErrTaskNotFound
	case serve.CodeBusy, serve.CodeClosing:
		base = a2a.ErrServerError
	}
	return a2a.NewError(base, x.runs.Redact(e.Message))
}
