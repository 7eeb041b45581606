package llm

import (
	"context"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// TestFakeModelSpeaksTheWireFormats holds the tests' fake model server to
// the LLM kind's reading of each wire format, plain and streamed: a tool
// call, its result sent back, then a reply in pieces, with the server's
// fixed usage counted for each request.
func TestFakeModelSpeaksTheWireFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		anthropic bool
		stream    bool
	}{
		{name: "openai"}, {name: "openai streamed", stream: true},
		{name: "anthropic", anthropic: true}, {name: "anthropic streamed", anthropic: true, stream: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
				if last := r.Last(); last.Role == "tool" {
					return fakemodel.Reply{Text: "EMEA leads", Chunks: []string{"EMEA", " leads"}}
				}
				return fakemodel.Reply{Calls: []fakemodel.Call{{Name: r.Tools[0], Args: `{"region":"EMEA"}`}}}
			}, fakemodel.WithUsage(100, 20))
			p := openaiProfile(srv.URL())
			if tc.anthropic {
				p = anthropicProfile(srv.Root())
			}
			e, a := newEnsemble(t, p, ensemble.Agent{}, echoTool)
			var log eventLog
			req := request(e, a, "Which region?")
			req.Events = log.sink()
			res := newTestRunner(Options{Stream: tc.stream}).Run(context.Background(), req)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Output != "EMEA leads" || res.Usage.Requests != 2 || res.Usage.InputTokens != 200 || res.Usage.OutputTokens != 40 {
				t.Errorf("output %#v, usage %+v", res.Output, res.Usage)
			}
			if got := strings.Join(log.deltas(), ""); tc.stream && got != "EMEA leads" {
				t.Errorf("deltas %q", got)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Stream != tc.stream || reqs[0].System == "" || reqs[0].LastUser() == "" {
				t.Fatalf("requests %+v", reqs)
			}
			if last := reqs[1].Last(); last.Role != "tool" || !strings.Contains(last.Content, `echo:{"region":"EMEA"}`) {
				t.Errorf("the tool's result sent back: %+v", last)
			}
			if reqs[0].Auth() != testKey {
				t.Errorf("key %q", reqs[0].Auth())
			}
		})
	}
}
