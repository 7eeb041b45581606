package ensemble_test

import (
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// when: is compiled at load, must be boolean, and names only known state
// keys and agents (docs/semantics.md#guards-that-skip).
func TestWhenDecoding(t *testing.T) {
	t.Parallel()
	good := `
name: guards
agents:
  - name: router
    ask: which?
  - name: fix
    ask: fix?
    dependencies: [router]
    when: "context.router == 'bug' && executions.router > 0"
  - name: join
    ask: join?
    dependencies: [fix, {agent_name: router, on: always}]
`
	e, err := LoadBytes("g.yaml", []byte(good), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if a := e.Agent("fix"); opaque.Get(a.WhenProgram) == nil || a.When != "context.router == 'bug' && executions.router > 0" {
		t.Fatalf("fix: when %q %v", a.When, opaque.Get(a.WhenProgram))
	}
	if d := e.Agent("join").Dependencies[1]; !d.OnAlways || d.OnFailure {
		t.Fatalf("join←router: %+v", d)
	}

	bad := `
name: guards
agents:
  - name: router
    ask: which?
  - name: a
    ask: a?
    when: "context.ruoter == 'a'"
  - name: b
    ask: b?
    when: "context.router +"
  - name: c
    ask: c?
    when: "context.router == 1"
  - name: d
    ask: d?
    when: ""
  - name: e
    ask: e?
    when: "executions.rooter > 1"
`
	_, err = LoadBytes("s.yaml", []byte(bad), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "s.yaml",
		`8:11: agent "a": when names context.ruoter, but no agent has the state key "ruoter"; did you mean "router"? (column 9 of the when)`,
		`11:11: agent "b": when does not compile: unexpected token EOF (column 16 of the condition)`,
		`17:11: agent "d": when must not be empty`,
		`20:11: agent "e": when names executions.rooter, but no agent is named "rooter"; did you mean "router"? (column 12 of the when)`,
	)
}
