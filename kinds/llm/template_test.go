package llm

import (
	"context"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// An agent with an input template sends its text as the user message,
// and nothing else (no labels, no dependency outputs); a prompt template's
// text is its system prompt, after the profile's.
func TestTemplatesMakeTheMessages(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText("done")))
	p := openaiProfile(srv.URL)
	p.SystemPrompt = "You are precise."
	e, a := newEnsemble(t, p, ensemble.Agent{Spec: &Spec{Prompt: "You write for {{ context.facts.region }}."},
		Dependencies: []*ensemble.Dependency{{AgentName: "facts"}}})
	req := request(e, a, "the report")
	req.Dependencies = map[string]any{"facts": map[string]any{"region": "EMEA"}}
	req.Fresh = []string{"facts"}
	req.Templates = map[string]any{"input": "Write the report for EMEA.", "prompt": "You write for EMEA."}
	if res := newTestRunner(Options{}).Run(context.Background(), req); res.Err != nil {
		t.Fatal(res.Err)
	}
	msgs := messages(t, srv.requests()[0])
	if len(msgs) != 2 || msgs[0]["content"] != "You are precise.\n\nYou write for EMEA." || msgs[1]["content"] != "Write the report for EMEA." {
		t.Errorf("messages %v", msgs)
	}
	// A value that is not text is sent as compact JSON.
	req.Templates = map[string]any{"input": map[string]any{"region": "EMEA"}}
	if got := userMessage(req, true); got != `{"region":"EMEA"}` {
		t.Errorf("user message %q", got)
	}
}
