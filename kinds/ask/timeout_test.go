package ask

import (
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
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
