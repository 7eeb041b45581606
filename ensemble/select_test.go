package ensemble_test

import (
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

func TestOnDecoding(t *testing.T) {
	t.Parallel()
	src := `name: s
agents:
  - {name: fetch, ask: q}
  - name: fallback
    ask: q
    dependencies: [{agent_name: fetch, on: failure}]
  - name: use
    ask: q
    dependencies: [{agent_name: fetch, on: success}]
`
	e, err := LoadBytes("s.yaml", []byte(src), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Agent("fallback").Dependencies[0].OnFailure || e.Agent("use").Dependencies[0].OnFailure {
		t.Fatal("on: not decoded")
	}
	_, err = LoadBytes("s.yaml", []byte(strings.Replace(src, "on: failure", "on: error", 1)), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "s.yaml", `6:44: dependency "fetch" of agent "fallback": on must be success, failure or always, got "error"`)
}

func TestSelectDecoding(t *testing.T) {
	t.Parallel()
	ok := `name: s
agents:
  - {name: classifier, ask: q}
  - name: writer
    ask: q
    dependencies: [{agent_name: classifier, select: "output.topics"}]
`
	e, err := LoadBytes("s.yaml", []byte(ok), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Agent("writer").Dependencies[0]; d.Select != "output.topics" || opaque.Get(d.SelectProgram) == nil {
		t.Fatalf("select not decoded: %+v", d)
	}
	bad := `name: s
agents:
  - {name: classifier, ask: q}
  - name: writer
    ask: q
    dependencies:
      - {agent_name: classifier, select: "output.("}
      - {agent_name: other, select: "context.clasifier.x"}
      - {agent_name: third, select: " "}
  - {name: other, ask: q}
  - {name: third, ask: q}
`
	_, err = LoadBytes("s.yaml", []byte(bad), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "s.yaml",
		`7:42: dependency "classifier" of agent "writer": select does not compile: expected name (column 8 of the select)`,
		`8:37: dependency "other" of agent "writer": select names context.clasifier, but no agent has the state key "clasifier"; did you mean "classifier"? (column 9 of the select)`,
		`9:37: dependency "third" of agent "writer": select must not be empty`)
}
