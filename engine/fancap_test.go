package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
)

// The templates of one fan-out's instances add up to at most
// engine.MaxFanOutTemplates: each instance's record keeps what its
// templates gave, so a template embedding a large output would store a
// copy of it per instance. Past the cap the fan-out is one failed
// execution of the agent, no instance runs, and the error names the
// agent, the template and the sizes. A value given whole by a template
// counts as much as text: the record keeps it for each instance.
func TestFanOutTemplatesAreCapped(t *testing.T) {
	t.Parallel()
	doc := strings.Repeat("x", 2<<20) // 2 MiB: 32 instances reach the cap
	for _, tc := range []struct {
		name, template string
		items          int
		err            string // "": the fan-out runs
	}{
		{"text under the cap", "{{ item }}: {{ context.split.doc }}", 30, ""},
		{"text over the cap", "{{ item }}: {{ context.split.doc }}", 100,
			`fan_out of agent "summarize": its instances' templates would give more than 64MiB in all, the cap of one fan-out (each instance's record keeps what its templates gave): input ("{{ item }}: {{ context.split.doc }}") gave 2.1 MB to summarize[10], about 209.7 MB for its 100 instances; pass a large value through the agent's dependencies, which the history holds once, rather than through a template`},
		{"whole value over the cap", "{{ context.split.doc }}", 40, `input ("{{ context.split.doc }}") gave 2.1 MB to summarize[0], about 83.9 MB for its 40 instances`},
		{"small items, many instances", "{{ item }}", 1000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := splitEnsemble()
			withTemplate(e.Agent("summarize"), "input", tc.template)
			var ran atomic.Int32
			run := chunks(tc.items, func(req *agentpkg.Request) (any, error) { ran.Add(1); return "ok", nil })
			split := run["split"]
			run["split"] = func(req *agentpkg.Request) (any, error) {
				out, err := split(req)
				out.(map[string]any)["doc"] = doc
				return out, err
			}
			res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
			if tc.err == "" {
				if len(res.Errors) != 0 || int(ran.Load()) != tc.items {
					t.Fatalf("%d of %d instances ran, errors %+v", ran.Load(), tc.items, res.Errors)
				}
				return
			}
			if n := ran.Load(); n != 0 {
				t.Errorf("%d instances ran past the cap", n)
			}
			var msgs []string
			for _, rec := range res.ConversationHistory {
				if rec.Error != nil {
					msgs = append(msgs, rec.AgentName+": "+*rec.Error)
				}
				if rec.Of == "summarize" {
					t.Errorf("an instance recorded past the cap: %s", rec.AgentName)
				}
			}
			if len(msgs) != 1 || !strings.HasPrefix(msgs[0], "summarize: ") || !strings.Contains(msgs[0], tc.err) {
				t.Errorf("errors %q, want one of summarize with %q", msgs, tc.err)
			}
		})
	}
}
