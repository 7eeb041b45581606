package ask

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
)

// timeout: and on_timeout: load into the spec; every mistake is an error
// naming the file, the line and the agent.
func TestTimeoutLoads(t *testing.T) {
	t.Parallel()
	load := func(fields string) (*ensemble.Ensemble, error) {
		y := "name: x\nagents:\n  - name: approver\n    ask: \"ok?\"\n" + fields
		return ensemble.LoadBytes("x.yaml", []byte(y), ensemble.LoadOptions{Kinds: []ensemble.Kind{Kind{}}})
	}
	good := []struct {
		fields  string
		timeout time.Duration
		on      OnTimeout
	}{
		{"    timeout: 24h\n", 24 * time.Hour, OnTimeout{Fail: true}},
		{"    timeout: 90\n", 90 * time.Second, OnTimeout{Fail: true}},
		{"    timeout: 1h30m\n    on_timeout: fail\n", 90 * time.Minute, OnTimeout{Fail: true}},
		{"    timeout: 24h\n    on_timeout: {answer: \"no\"}\n", 24 * time.Hour, OnTimeout{Answer: "no"}},
		{"    timeout: 24h\n    on_timeout: {answer: {approved: false}}\n", 24 * time.Hour, OnTimeout{Answer: `{"approved":false}`}},
		{"    timeout: 24h\n    on_timeout: {answer: 3}\n", 24 * time.Hour, OnTimeout{Answer: "3"}},
		{"    timeout: 24h\n    on_timeout: {answer: \"\"}\n", 24 * time.Hour, OnTimeout{Answer: ""}},
	}
	for _, c := range good {
		e, err := load(c.fields)
		if err != nil {
			t.Errorf("%q: %v", c.fields, err)
			continue
		}
		s := SpecOf(e.Agent("approver"))
		if s.Timeout != c.timeout || s.OnTimeout == nil || *s.OnTimeout != c.on || (Kind{}).AnswerTimeout(e.Agent("approver")) != c.timeout {
			t.Errorf("%q: timeout %v, on_timeout %+v", c.fields, s.Timeout, s.OnTimeout)
		}
	}
	if e, err := load(""); err != nil || SpecOf(e.Agent("approver")).OnTimeout != nil || SpecOf(e.Agent("approver")).Timeout != 0 {
		t.Errorf("no timeout: %v", err)
	}
	bad := []struct{ fields, want string }{
		{"    timeout: 1d\n", `x.yaml:5:14: agent "approver": timeout must be a positive duration such as 24h, 90m or 30s (or a number of seconds), got "1d"`},
		{"    timeout: soon\n", `timeout must be a positive duration`},
		{"    timeout: 0\n", `timeout must be a positive duration`},
		{"    timeout: -1h\n", `timeout must be a positive duration`},
		{"    timeout: .nan\n", `timeout must be a positive duration`},
		{"    timeout: [1h]\n", `timeout must be a string`},
		{"    timeout:\n", `timeout must not be empty`},
		{"    on_timeout: fail\n", `x.yaml:5:17: agent "approver": on_timeout needs timeout: how long the question waits`},
		{"    timeout: 1h\n    on_timeout: skip\n", `x.yaml:6:17: agent "approver": on_timeout must be fail or {answer: VALUE}, got "skip"`},
		{"    timeout: 1h\n    on_timeout: {answer: null}\n", `x.yaml:6:26: on_timeout of agent "approver": answer must not be empty`},
		{"    timeout: 1h\n    on_timeout: {}\n", `answer is required`},
		{"    timeout: 1h\n    on_timeout: {answer: .inf}\n", `on_timeout of agent "approver": answer holds .inf or .nan`},
		{"    timeout: 1h\n    on_timeout: {anwser: yes}\n", `unknown key "anwser"`},
		{"    timeout: 1h\n    on_timeout: [fail]\n", `on_timeout must be a string`},
	}
	for _, c := range bad {
		if _, err := load(c.fields); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %q", c.fields, err, c.want)
		}
	}
}

// A question whose saved deadline passed applies on_timeout, once; an
// answer given wins over it; a deadline not passed leaves it waiting.
func TestTimeoutApplies(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 8, 9, 0, 0, 0, time.UTC)
	answer := &OnTimeout{Answer: `{"approved": false}`}
	cases := []struct {
		name     string
		on       *OnTimeout
		given    map[string]string
		deadline agent.Deadline
		output   any
		err      string // "" for none; "waits" for agent.ErrAwaitingInput
		event    bool
	}{
		{"answer", answer, nil, agent.Deadline{At: at, Passed: true}, map[string]any{"approved": false}, "", true},
		{"fail", &OnTimeout{Fail: true}, nil, agent.Deadline{At: at, Passed: true},
			nil, `ask_timeout: agent "approver" had no answer by 2026-12-08T09:00:00Z (timeout: 24h)`, true},
		{"an answer given wins", answer, map[string]string{"approver": "yes"}, agent.Deadline{At: at, Passed: true}, "yes", "", false},
		{"not passed: waits", answer, nil, agent.Deadline{At: at}, nil, "waits", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := &ensemble.Agent{Name: "approver", Kind: Kind{}, Spec: &Spec{Question: "ok?", Mode: ModeSuspend, Timeout: 24 * time.Hour, TimeoutText: "24h", OnTimeout: c.on}}
			e := testEnsemble(t, a)
			var evs []events.Event
			answers := agent.NewAnswers(c.given).WithDeadlines(map[string]agent.Deadline{"approver": c.deadline})
			r := &Runner{Suspend: true}
			req := &agent.Request{Ensemble: e, Agent: a, Turn: 1, Execution: 1, Services: agent.Services{Answers: answers},
				Events: func(ev events.Event) { evs = append(evs, ev) }}
			res := r.Run(context.Background(), req)
			switch {
			case c.err == "waits" && !errors.Is(res.Err, agent.ErrAwaitingInput),
				c.err != "waits" && c.err != "" && (res.Err == nil || res.Err.Error() != c.err),
				c.err == "" && res.Err != nil:
				t.Fatalf("err %v, want %q", res.Err, c.err)
			}
			if c.err == "" && !reflect.DeepEqual(res.Output, c.output) {
				t.Errorf("output %#v", res.Output)
			}
			if got := len(evs) == 1 && evs[0].Type == events.InputTimedOut && evs[0].Message == "2026-12-08T09:00:00Z"; got != c.event {
				t.Errorf("events %+v", evs)
			}
			in := res.InputData.(map[string]any)
			if (in["answered_on_timeout"] == true) != (c.event && c.err == "") {
				t.Errorf("input data %v", in)
			}
			// Taken once: the agent's next execution waits.
			req.Execution = 2
			if res := r.Run(context.Background(), req); !errors.Is(res.Err, agent.ErrAwaitingInput) {
				t.Errorf("the next execution: %v", res.Err)
			}
		})
	}
}

// At a terminal nobody answers: the prompt says until when it waits, then
// the question fails (on_timeout: fail).
func TestTimeoutAtTheTerminal(t *testing.T) {
	t.Parallel()
	a := &ensemble.Agent{Name: "approver", Kind: Kind{}, Spec: &Spec{Question: "ok?", Timeout: 20 * time.Millisecond, TimeoutText: "20ms", OnTimeout: &OnTimeout{Fail: true}}}
	e := testEnsemble(t, a)
	in, w := io.Pipe()
	defer w.Close()
	var out syncBuffer
	r := &Runner{In: in, Out: &out, Interactive: true}
	res := r.Run(context.Background(), &agent.Request{Ensemble: e, Agent: a, Turn: 1, Execution: 1})
	var te *TimeoutError
	if !errors.As(res.Err, &te) || te.Agent != "approver" || te.Timeout != "20ms" {
		t.Fatalf("err %v", res.Err)
	}
	if !strings.Contains(out.String(), "with no answer by then the question fails)\n"+askPrompt) {
		t.Errorf("prompt:\n%s", out.String())
	}
}
