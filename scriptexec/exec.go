package scriptexec

import (
	"context"
	"maps"
	"os"
	"strconv"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/proc"
)

// ExecScript runs a script of req's execution with proc.Run: a script agent's
// (docs/semantics.md#script-agents) or one of an LLM agent's tools (docs/llm.md#tools). It runs in the ensemble
// file's folder (spec.Dir), and its environment (spec.Env) is ScriptEnv of
// environ() (nil means os.Environ) with extra, then ENSEMBLE_AGENT,
// ENSEMBLE_TURN and ENSEMBLE_EXECUTION, which extra cannot override.
func ExecScript(ctx context.Context, req *agent.Request, environ func() []string, extra map[string]string, spec Spec) (*Result, error) {
	env := make(map[string]string, len(extra)+3)
	maps.Copy(env, extra)
	env["ENSEMBLE_AGENT"] = ""
	if req.Agent != nil {
		env["ENSEMBLE_AGENT"] = req.Agent.Name
	}
	env["ENSEMBLE_TURN"] = strconv.Itoa(req.Turn)
	env["ENSEMBLE_EXECUTION"] = strconv.Itoa(req.Execution)
	if environ == nil {
		environ = os.Environ
	}
	if req.Ensemble != nil {
		spec.Dir = req.Ensemble.Dir
	}
	spec.Env = ScriptEnv(environ(), req.Ensemble, env)
	if r := req.Services.Secrets; !r.Empty() {
		// The tail of stderr is redacted before it is cut, so that the cut
		// never keeps the end of a key.
		spec.Redact, spec.Hold = r.String, r.Longest()-1
	}
	return proc.Run(ctx, spec)
}

// BaseInputData is what any agent is given, less the shared context:
// agent, input, dependencies, turn, execution, request_parameters. input
// is the run's input, or the value of the agent's input template (Input).
func BaseInputData(req *agent.Request) map[string]any {
	var rp any
	if req.RequestParameters != nil {
		rp = req.RequestParameters
	}
	m := map[string]any{
		"agent":              req.Agent.Name,
		"input":              Input(req),
		"dependencies":       orEmpty(req.Dependencies),
		"turn":               req.Turn,
		"execution":          req.Execution,
		"request_parameters": rp,
	}
	req.Instance.AddTo(m) // item, index and count of a fan-out instance
	return m
}

// Input is what a script finds under input on stdin: the value of the
// agent's input template when it has one (docs/semantics.md#what-an-agent-receives),
// otherwise the run's input.
func Input(req *agent.Request) any {
	if v, ok := req.Template("input"); ok {
		return v
	}
	return req.Input
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
