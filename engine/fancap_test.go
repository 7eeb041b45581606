package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
)

// What one fan-out's instances are given beside their dependencies, their
// items and what their templates give, adds up to at most
// engine.MaxFanOutGiven: each instance's record keeps it, so a template
// embedding a large output, or items that are that output again and
// again, would store a copy of it per instance. Past the cap the fan-out
// is one failed execution of the agent, no instance runs or is recorded,
// and the error names the agent, the template or the list, and the sizes.
// A value given whole by a template counts as much as text: the record
// keeps it for each instance.
func TestFanOutGivenIsCapped(t *testing.T) {
	t.Parallel()
	doc := strings.Repeat("x", 2<<20) // 2 MiB: 32 instances reach the cap
	const prefix = `fan_out of agent "summarize": its instances would be given more than 64MiB in all beside their dependencies, the cap of one fan-out (each instance's record keeps its item and what its templates gave): `
	for _, tc := range []struct {
		name, template string // template "": none
		items          int
		docItems       bool   // each item is doc
		err            string // "": the fan-out runs
	}{
		{"text under the cap", "{{ item }}: {{ context.split.doc }}", 30, false, ""},
		{"text over the cap", "{{ item }}: {{ context.split.doc }}", 100, false, prefix +
			`input ("{{ item }}: {{ context.split.doc }}") gave 2.0MiB to summarize[10], about 200.0MiB for its 100 instances; pass a large value through the agent's dependencies, which the history holds once, rather than through a template or the items`},
		{"whole value over the cap", "{{ context.split.doc }}", 40, false, `input ("{{ context.split.doc }}") gave 2.0MiB to summarize[0], about 80.0MiB for its 40 instances`},
		{"items under the cap", "", 30, true, ""},
		{"items over the cap", "", 40, true, `the item (fan_out.over "context.split.chunks") gave 2.0MiB to summarize[0], about 80.0MiB for its 40 instances`},
		{"items and their template count both", "{{ item }}", 20, true, `the item (fan_out.over "context.split.chunks") gave 2.0MiB to summarize[0], about 40.0MiB for its 20 instances`},
		{"small items, many instances", "{{ item }}", 1000, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := splitEnsemble()
			if tc.template != "" {
				withTemplate(e.Agent("summarize"), "input", tc.template)
			}
			var ran atomic.Int32
			run := chunks(tc.items, func(req *agentpkg.Request) (any, error) { ran.Add(1); return "ok", nil })
			split := run["split"]
			run["split"] = func(req *agentpkg.Request) (any, error) {
				out, err := split(req)
				m := out.(map[string]any)
				m["doc"] = doc
				if tc.docItems {
					for i := range m["chunks"].([]any) {
						m["chunks"].([]any)[i] = doc
					}
				}
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
			if len(msgs) != 1 || !strings.HasPrefix(msgs[0], "summarize: "+prefix) || !strings.Contains(msgs[0], tc.err) {
				t.Errorf("errors %q, want one of summarize with %q", msgs, tc.err)
			}
		})
	}
}
