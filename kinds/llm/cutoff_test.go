package llm

import (
	"context"
	"fmt"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// A reply cut off at max_tokens that is not the output asked for (JSON,
// or what the output_schema takes) fails with the cut named, not as a
// plain JSON or schema error: the limit, the error, and the reply's
// start. No repair turn is asked (it would be cut too). Each provider's
// own word for the cut: OpenAI's and Ollama's finish_reason "length",
// Anthropic's stop_reason "max_tokens".
func TestCutOffReplyNamesTheCut(t *testing.T) {
	t.Parallel()
	schema := schemaAgent(t, approvalDoc(), 1)
	jsonFormat := ensemble.Agent{Spec: &Spec{OutputFormat: "json"}}
	tests := []struct {
		name    string
		profile func(url string) ensemble.ModelProfile
		agent   ensemble.Agent
		reply   string
		want    []string
	}{
		{"openai, output_schema", func(url string) ensemble.ModelProfile {
			p := openaiProfile(url)
			p.MaxTokens = 64
			return p
		}, schema, oaReply("length", `{"approved": tr`, 5, 64),
			[]string{`the reply was cut off at max_tokens (64): output_schema needs JSON: the reply is not valid JSON`, `; the reply began "{\"approved\": tr"`}},
		{"ollama, output_format json", func(url string) ensemble.ModelProfile {
			return ensemble.ModelProfile{Provider: ProviderOllama, Model: "llama3.2", BaseURL: url}
		}, jsonFormat, oaReply("length", `{"n": [1, 2`, 5, 64),
			[]string{`the reply was cut off at max_tokens (the server's limit): output_format json: `, `the reply began "{\"n\": [1, 2"`}},
		{"anthropic, output_schema through the output tool", anthropicProfile, schema,
			anReply("max_tokens", 5, 4096, anToolUse("toolu_1", OutputToolName, map[string]any{})),
			[]string{fmt.Sprintf(`the reply was cut off at max_tokens (%d): the output does not match output_schema: at '/': missing property 'approved'`, DefaultAnthropicMaxTokens)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, scripted(tt.reply, oaText(`{"approved": true}`)))
			e, a := newEnsemble(t, tt.profile(srv.URL), tt.agent)
			res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "review this"))
			if res.Err == nil || res.StopReason != StopMaxTokens {
				t.Fatalf("err %v, stop %q, output %#v", res.Err, res.StopReason, res.Output)
			}
			for _, w := range tt.want {
				mustContain(t, res.Err.Error(), w)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests: a cut-off reply gets no repair turn", n)
			}
		})
	}
}
