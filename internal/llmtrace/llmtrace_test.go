package llmtrace

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func msg(role, content string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"role": role, "content": content})
	return b
}

func contents(t *testing.T, msgs []json.RawMessage) string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		var x struct{ Role, Content string }
		if err := json.Unmarshal(m, &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x.Role+":"+x.Content)
	}
	return strings.Join(out, " ")
}

func TestRebuild(t *testing.T) {
	t.Parallel()
	mem := []json.RawMessage{msg("user", "u1"), msg("assistant", "a1"), msg("user", "old")}
	after := []json.RawMessage{msg("user", "u1"), msg("assistant", "a1"), msg("user", "CHANGED"), msg("user", "u2"), msg("assistant", "a2")}
	tr := &Trace{System: "S", Memory: &MemoryRef{Turn: 1, Execution: 1, Messages: 3},
		Requests: []Request{{Sent: [][2]int{{0, 1}, {3, 4}}, Reply: 5}}}
	cases := []struct {
		name, want string
		conv       []json.RawMessage
		incomplete bool
	}{
		// The memory part comes from the memory referred to, the rest from after.
		{"memory and after", "system:S user:u1 user:u2", Conversation(mem, after, 3), false},
		{"memory gone", "system:S user:u2", WithAdded(nil, 3, []any{map[string]string{"role": "user", "content": "u2"}, map[string]string{"role": "assistant", "content": "a2"}}), true},
		{"added with system", "system:S user:u1 user:u2", WithAdded(mem, 3, []any{map[string]string{"role": "system", "content": "S"}, map[string]string{"role": "user", "content": "u2"}, map[string]string{"role": "assistant", "content": "a2"}}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := Rebuild(tr, tc.conv)[0]
			if got := contents(t, s.Messages); got != tc.want || s.Incomplete != tc.incomplete {
				t.Errorf("rebuilt %q incomplete %v, want %q %v", got, s.Incomplete, tc.want, tc.incomplete)
			}
			if got := contents(t, []json.RawMessage{s.Reply}); got != "assistant:a2" {
				t.Errorf("reply %q", got)
			}
		})
	}
}

func TestBound(t *testing.T) {
	t.Parallel()
	big := map[string]any{"description": strings.Repeat("x", MaxBytes)}
	tr := &Trace{System: "S", Tools: []Tool{{Name: "t", Description: "d", Schema: big}}, Requests: []Request{{Model: "m"}}}
	tr.Bound()
	b, _ := json.Marshal(tr)
	if len(b) > MaxBytes || !tr.Truncated || tr.Tools[0].Name != "t" || tr.Tools[0].Schema != nil {
		t.Errorf("bounded to %d bytes: %+v", len(b), tr.Tools)
	}
	long := &Trace{System: strings.Repeat("é", MaxBytes), Requests: []Request{{Model: "m"}}}
	long.Bound()
	if len(long.System) > MaxBytes/2 || !utf8.ValidString(long.System) || !long.Truncated {
		t.Errorf("a long system prompt bounded to %d bytes (valid %v)", len(long.System), utf8.ValidString(long.System))
	}
	small := &Trace{Tools: []Tool{{Name: "t", Schema: map[string]any{"type": "object"}}}}
	small.Bound()
	if small.Truncated || small.Tools[0].Schema == nil {
		t.Errorf("a small trace was cut: %+v", small)
	}
}

func TestRebuildCapped(t *testing.T) {
	t.Parallel()
	conv := []json.RawMessage{msg("user", strings.Repeat("x", 100)), msg("assistant", "a"), msg("user", "u")}
	tr := &Trace{Requests: []Request{{Sent: [][2]int{{0, 1}}}, {Sent: [][2]int{{0, 3}}}}}
	out := RebuildCapped(tr, conv, 200)
	if out[0].Cut || len(out[0].Messages) != 1 || !out[1].Cut || out[1].Messages != nil {
		t.Errorf("capped: %+v", out)
	}
	if out := RebuildCapped(tr, conv, 1000); out[1].Cut || len(out[1].Messages) != 3 {
		t.Errorf("under the cap: %+v", out)
	}
}
