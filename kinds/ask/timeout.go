package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/runners"
)

// An ask agent's timeout: and on_timeout: (docs/semantics.md#answers-that-time-out):
// how long a question waits for a person, and what it becomes when nobody
// answered by then: an answer given in the file, or a failed execution
// (fail, the default).

// OnTimeout is what a question nobody answered in time becomes.
type OnTimeout struct {
	// Fail fails the execution (ask_timeout); else Answer is its output.
	Fail bool
	// Answer is the answer's text, as an answer given to resume: a string
	// as it is, any other value as JSON.
	Answer string
}

// AnswerTimeout is a's timeout: (0: it waits as long as it takes).
func (Kind) AnswerTimeout(a *ensemble.Agent) time.Duration { return SpecOf(a).Timeout }

// decodeTimeout decodes timeout: and on_timeout: into s.
func decodeTimeout(f *ensemble.Fields, s *Spec) {
	if f.Has("timeout") {
		s.TimeoutText = f.String("timeout")
		s.Timeout = parseTimeout(s.TimeoutText)
		if s.Timeout <= 0 && s.TimeoutText != "" {
			f.Bad("timeout", "must be a positive duration such as 24h, 90m or 30s (or a number of seconds), got %q", s.TimeoutText)
		}
		f.Require("timeout", s.TimeoutText == "")
	}
	if !f.Has("on_timeout") {
		if s.Timeout > 0 {
			s.OnTimeout = &OnTimeout{Fail: true}
		}
		return
	}
	if !f.Has("timeout") {
		f.Bad("on_timeout", "needs timeout: how long the question waits for an answer (timeout: 24h)")
	}
	if !f.IsMapping("on_timeout") {
		if v := f.String("on_timeout"); v != "fail" {
			f.Bad("on_timeout", "must be fail or {answer: VALUE}, got %q", v)
		}
		s.OnTimeout = &OnTimeout{Fail: true}
		return
	}
	m := f.Mapping("on_timeout", "answer")
	if m == nil {
		return
	}
	v := m.Value("answer")
	m.Require("answer", v == nil)
	s.OnTimeout = &OnTimeout{Answer: answerText(v)}
}

// parseTimeout reads a duration (24h, 90m, 1h30m) or a number of seconds;
// 0 when it is neither.
func parseTimeout(s string) time.Duration {
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		if !(x > 0) || x > float64(1<<62)/float64(time.Second) {
			return 0
		}
		return time.Duration(x * float64(time.Second))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

// answerText is the text of the answer v, as an answers file gives it
// (answers.ParseFile): a string as it is, any other value as its JSON.
// An ask agent's answer is text or JSON (it declares no schema beyond
// that), so any value but null is one; one JSON cannot carry (.inf) was
// reported by Fields.Value.
func answerText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TimeoutError fails the execution of an ask agent whose question nobody
// answered by its deadline, with on_timeout: fail (the default).
type TimeoutError struct {
	Agent    string
	Deadline time.Time
	Timeout  string // as the file writes it
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("ask_timeout: agent %q had no answer by %s (timeout: %s)", e.Agent, e.Deadline.UTC().Format(time.RFC3339), e.Timeout)
}

// timedOut is the execution of req, whose question nobody answered by at:
// its on_timeout's answer as its output (answered_on_timeout: true in its
// input data), or a *TimeoutError. Either way it emits input_timed_out.
func timedOut(req *agent.Request, res *agent.Result, in map[string]any, at time.Time) *agent.Result {
	s := SpecOf(req.Agent)
	deadline := at.UTC().Format(time.RFC3339)
	in["deadline"] = deadline
	ev := events.Event{Type: events.InputTimedOut, Execution: req.Execution, Message: deadline}
	if s.OnTimeout == nil || s.OnTimeout.Fail {
		res.Err = &TimeoutError{Agent: req.Name(), Deadline: at, Timeout: s.TimeoutText}
		ev.Error = res.Err.Error()
	} else {
		in["answered_on_timeout"] = true
		res.Output, res.Err = runners.ParseOutput(s.OnTimeout.Answer)
		ev.Output = res.Output
	}
	req.Events.Emit(ev)
	return res
}

// answerWait bounds the wait for an answer at a terminal by the
// question's deadline: the saved one (dl, when has), else now plus the
// timeout; at is zero when the agent has no timeout.
func answerWait(ctx context.Context, s *Spec, dl agent.Deadline, has bool) (_ context.Context, at time.Time, cancel context.CancelFunc) {
	if s.Timeout <= 0 {
		return ctx, time.Time{}, func() {}
	}
	at = time.Now().Add(s.Timeout)
	if has {
		at = dl.At
	}
	ctx, cancel = context.WithDeadline(ctx, at)
	return ctx, at, cancel
}

// waitNote is the line a terminal prompt shows about its deadline.
func waitNote(s *Spec, at time.Time) string {
	then := "the question fails"
	if s.OnTimeout != nil && !s.OnTimeout.Fail {
		then = fmt.Sprintf("the answer is %q", s.OnTimeout.Answer)
	}
	return fmt.Sprintf("(waits until %s; with no answer by then %s)\n", at.Local().Format("2006-01-02 15:04:05 MST"), then)
}
