package responses

import (
	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// The kinds' own packages import this one, so its tests stand in for
// them with kinds that answer what the injected runner asks. An LLM
// agent's Spec is "json" for output_format: json; a script agent's is its
// parameters.
type (
	testKind   struct{ name, key string }
	scriptKind struct{ testKind }
	llmKind    struct{ testKind }
	askKind    struct{ testKind }
)

func (k testKind) String() string                         { return k.name }
func (k testKind) Key() string                            { return k.key }
func (testKind) Fields() []string                         { return nil }
func (testKind) Decode(*ensemble.Fields, *ensemble.Agent) {}

func (scriptKind) String() string { return "script" }
func (scriptKind) InputData(req *agent.Request) map[string]any {
	m := scriptexec.BaseInputData(req)
	params, _ := req.Agent.Spec.(map[string]any)
	if params == nil {
		params = map[string]any{}
	}
	m["parameters"] = params
	return m
}
func (llmKind) String() string                   { return "llm" }
func (llmKind) Guarded() bool                    { return true }
func (llmKind) JSONReply(a *ensemble.Agent) bool { return a.Spec == "json" }
func (askKind) String() string                   { return "ask" }
