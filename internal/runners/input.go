package runners

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/proc"
)

// ExecScript runs a script of req's execution with proc.Run: a script agent's
// (docs/semantics.md#script-agents) or one of an LLM agent's tools (docs/llm.md#tools). It runs in the ensemble
// file's folder (spec.Dir), and its environment (spec.Env) is ScriptEnv of
// environ() (nil means os.Environ) with extra, then ENSEMBLE_AGENT,
// ENSEMBLE_TURN and ENSEMBLE_EXECUTION, which extra cannot override.
func ExecScript(ctx context.Context, req *agent.Request, environ func() []string, extra map[string]string, spec proc.Spec) (*proc.Result, error) {
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

// Given is the text of the agent's input template for this execution
// (a value that is not a string as compact JSON); ok is false when the
// agent has none, and is then given the Labelled text.
func Given(req *agent.Request) (text string, ok bool) {
	v, ok := req.Template("input")
	if !ok {
		return "", false
	}
	return jsonvalue.Text(v), true
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Labelled is the labelled text an execution is given as a message
// (docs/llm.md#messages-and-memory): a fan-out instance's item (`Item 2 of
// 5:`), or else the run's input when withInput (`Input:`), the outputs of
// deps in that order (`Output of NAME:`), and the request parameters; a
// string as it is, anything else as compact JSON, sections apart by a blank
// line. "" when there is nothing to say. An LLM agent's user message and a
// child ensemble's input are built with it.
func Labelled(req *agent.Request, withInput bool, deps []string) string {
	var b strings.Builder
	section := func(label, body string) {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(label)
		b.WriteString(":\n")
		b.WriteString(body)
	}
	if in := req.Instance; in != nil {
		// A fan-out instance: its item instead of the run's input
		// (docs/semantics.md#fan-out).
		section(fmt.Sprintf("Item %d of %d", in.Index+1, in.Count), jsonvalue.Text(in.Item))
	} else if withInput && strings.TrimSpace(req.Input) != "" {
		section("Input", req.Input)
	}
	for _, name := range deps {
		section("Output of "+name, jsonvalue.Text(req.Dependencies[name]))
	}
	if len(req.RequestParameters) > 0 {
		section("Request parameters", jsonvalue.Text(req.RequestParameters))
	}
	return b.String()
}
