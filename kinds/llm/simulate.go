package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
)

// simulateInstruction follows the persona prompt of a simulated user.
const simulateInstruction = "You are playing the human user of an automated multi-agent workflow. " +
	"Each message shows what the agents ask you and what they produced. " +
	"Answer in character, as that person would type it: the answer only, with no preamble."

// Simulate answers for an agent with a model (docs/testing.md#the-responses-file:
// `{simulate: {model_profile, prompt}}` in a responses file). The model gets
// the prompt (the persona) and the profile's system prompt as its system
// prompt, and, as the user message, the agent's `ask` text (for ask agents)
// with the run's input and the dependency outputs, labelled as for LLM
// agents. A simulated user keeps its own conversation in req.Memory like an
// LLM agent: later executions add only what is new. It has no tools and
// makes one model request per execution; the output is the reply parsed as
// any text output (docs/semantics.md#state).
func (r *Runner) Simulate(ctx context.Context, req *agent.Request, profile, prompt string) *agent.Result {
	if req.Ensemble == nil {
		return &agent.Result{Err: fmt.Errorf("simulate: the request has no ensemble"), StopReason: StopError}
	}
	prof := req.Ensemble.Models[profile]
	if prof == nil {
		return &agent.Result{Err: fmt.Errorf("simulate: unknown model profile %q", profile), StopReason: StopError}
	}
	c := &conversation{
		profile:  prof,
		system:   systemPrompt(prof.SystemPrompt, prompt, simulateInstruction),
		maxSteps: 1,
		window:   prof.ContextWindow,
	}
	if req.Agent != nil {
		c.timeout = req.Agent.Timeout
		// The simulated agent's question, when its kind has one (an ask agent).
		if ask := strings.TrimSpace(agent.Question(req.Agent)); ask != "" {
			c.prefix = "The agents ask you:\n" + ask
		}
	}
	return r.converse(ctx, req, c)
}
