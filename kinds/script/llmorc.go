package script

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// llmOrcDependency is one dependency as llm-orc hands it to a script: its
// result, whose response is the output as text.
type llmOrcDependency struct {
	Response         string `json:"response"`
	Status           string `json:"status"`
	ModelSubstituted bool   `json:"model_substituted"`
}

// llmOrcScriptInput is llm-orc's ScriptAgentInput, the stdin of a script
// agent that is not a fan-out instance; the field order is llm-orc's.
type llmOrcScriptInput struct {
	AgentName    string                      `json:"agent_name"`
	InputData    string                      `json:"input_data"`
	Context      map[string]any              `json:"context"`
	Dependencies map[string]llmOrcDependency `json:"dependencies"`
}

// llmOrcRootInput is the stdin llm-orc gives a script agent with no
// dependencies: the run's input as text, its parameters and an empty
// context; the field order is llm-orc's.
type llmOrcRootInput struct {
	Input      string         `json:"input"`
	Parameters map[string]any `json:"parameters"`
	Context    map[string]any `json:"context"`
}

// llmOrcInstanceInput is the stdin llm-orc builds for an instance of a
// fan-out script agent.
type llmOrcInstanceInput struct {
	AgentName   string         `json:"agent_name"`
	Input       any            `json:"input"`
	ChunkIndex  int            `json:"chunk_index"`
	TotalChunks int            `json:"total_chunks"`
	BaseInput   string         `json:"base_input"`
	Context     map[string]any `json:"context"`
}

// llmOrcInput is the stdin and the extra environment of a script agent with
// protocol: llm-orc (docs/llm-orc.md#scripts): for an agent without
// dependencies {input, parameters, context}; otherwise llm-orc's
// ScriptAgentInput (input_data, each dependency's response as text), or for
// a fan-out instance its chunk (input, chunk_index, total_chunks, base_input); and the
// variables llm-orc sets: INPUT_DATA (the stdin), INPUT_TEXT (input_data)
// and AGENT_PARAMETERS (the parameters as JSON), over the agent's env.
func llmOrcInput(req *agent.Request, spec *Spec) (stdin []byte, env map[string]string, err error) {
	a := req.Agent
	text := jsonvalue.Text(scriptexec.Input(req))
	var v any
	if in := req.Instance; in != nil {
		v = llmOrcInstanceInput{
			AgentName:   fmt.Sprintf("%s[%d]", a.Name, in.Index),
			Input:       in.Item,
			ChunkIndex:  in.Index,
			TotalChunks: in.Count,
			BaseInput:   jsonvalue.Text(req.Input),
			Context:     map[string]any{},
		}
	} else if len(a.Dependencies) == 0 {
		v = llmOrcRootInput{Input: text, Parameters: orEmpty(spec.Parameters), Context: map[string]any{}}
	} else {
		// llm-orc hands a script only the dependencies that succeeded: a
		// skipped one is absent, not null.
		deps := make(map[string]llmOrcDependency, len(req.Dependencies))
		for name, out := range req.Dependencies {
			if !slices.Contains(req.Skipped, name) {
				deps[name] = llmOrcDependency{Response: jsonvalue.Text(out), Status: "success"}
			}
		}
		v = llmOrcScriptInput{AgentName: a.Name, InputData: text, Context: map[string]any{}, Dependencies: deps}
	}
	stdin, err = json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot encode the script's input as JSON: %w", err)
	}
	params, err := json.Marshal(orEmpty(spec.Parameters))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot encode the script's parameters as JSON: %w", err)
	}
	env = make(map[string]string, len(spec.Env)+3)
	maps.Copy(env, spec.Env)
	env["INPUT_DATA"] = string(stdin)
	env["INPUT_TEXT"] = text
	if req.Instance != nil {
		env["INPUT_TEXT"] = string(stdin)
	}
	env["AGENT_PARAMETERS"] = string(params)
	return stdin, env, nil
}
