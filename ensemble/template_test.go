package ensemble_test

import (
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// An agent's input and an LLM agent's prompt are templates, compiled at
// load: their names are checked against the state keys, the agents and the
// output schemas, each problem at its place in the file.
func TestTemplateDecoding(t *testing.T) {
	t.Parallel()
	ok := `name: s
models:
  m: {provider: ollama, model: x}
agents:
  - {name: facts, ask: q}
  - name: writer
    model_profile: m
    prompt: "You write for {{ context.facts }}."
    input: "Write the {{ input }} for {{ context.facts.region }}."
    dependencies: [facts]
  - name: each
    model_profile: m
    input: "{{ item }}"
    fan_out: {over: "context.facts.items"}
    dependencies: [facts]
  - name: plain
    model_profile: m
    prompt: "No placeholder."
`
	e, err := LoadBytes("s.yaml", []byte(ok), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	w := e.Agent("writer")
	if w.Input == nil || w.Input.Field != "input" || len(w.Templates) != 2 || w.Templates[0].Field != "prompt" {
		t.Fatalf("templates of writer: %+v", w.Templates)
	}
	if each := e.Agent("each"); each.Input == nil || !opaque.Get(each.Input.Program).Whole() {
		t.Fatalf("input of each: %+v", each.Input)
	}
	if p := e.Agent("plain"); len(p.Templates) != 0 {
		t.Fatalf("a prompt without {{ is a template: %+v", p.Templates)
	}

	bad := `name: s
models:
  m: {provider: ollama, model: x}
agents:
  - name: facts
    ask: q
  - name: writer
    model_profile: m
    output_schema: {type: object, properties: {text: {type: string}}}
    prompt: "You write for {{ context.factz }}."
    input: "Write {{ input + }} now"
  - name: critic
    model_profile: m
    input: |
      Review this:
      {{ context.writer.txt }} ({{ executions.writr }} drafts)
  - name: one
    model_profile: m
    input: "{{ item }}"
  - name: two
    model_profile: m
    input: "{{ input"
`
	_, err = LoadBytes("s.yaml", []byte(bad), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "s.yaml",
		`10:39: agent "writer": prompt names context.factz, but no agent has the state key "factz"; did you mean "facts"? (column 26 of the template)`,
		`11:29: agent "writer": input does not compile: unexpected token EOF (column 17 of the template)`,
		`16:25: agent "critic": input reads context.writer.txt, but the output_schema of agent "writer" has no property "txt"; did you mean "text"? (line 2, column 19 of the template)`,
		`16:47: agent "critic": input names executions.writr, but no agent is named "writr"; did you mean "writer"? (line 2, column 41 of the template)`,
		`19:16: agent "one": input does not compile: item is only known to an agent with a fan_out`,
		`22:13: agent "two": input does not compile: {{ is not closed by }} (column 1 of the template)`,
	)
}
