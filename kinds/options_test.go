package kinds

import (
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/kinds/llm"
)

// With gives the built-in ask and llm kinds their own options (what the
// host no longer carries), and leaves r and its other kinds as they were.
func TestWithSetsTheKindsOwnOptions(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	r := Builtin()
	r.Register(hostKind{})
	c := r.With(Options{Ask: ask.Options{Out: &out, NoInput: true, Suspend: true}, Stream: true})
	if len(c.Kinds()) != len(r.Kinds()) {
		t.Fatalf("kinds %v, want %v", c.Kinds(), r.Kinds())
	}
	for i, k := range c.Kinds() {
		if k.String() != r.Kinds()[i].String() {
			t.Errorf("kind %d: %s, want %s", i, k, r.Kinds()[i])
		}
	}
	if k := c.Kind("ask").(ask.Kind); k.Options.Out != &out || !k.Options.NoInput || !k.Options.Suspend || k.Options.Batch {
		t.Errorf("ask options %+v", k.Options)
	}
	if !c.Kind("llm").(llm.Kind).Stream {
		t.Error("the llm kind does not stream")
	}
	if _, ok := c.Kind("host").(hostKind); !ok {
		t.Error("a kind of its own was not kept")
	}
	if r.Kind("ask").(ask.Kind) != (ask.Kind{}) || r.Kind("llm").(llm.Kind).Stream {
		t.Error("With changed the registry it copied")
	}
	// The ask kind's runner takes them.
	run := c.Kind("ask").Runner(&agent.Host{}).(*ask.Runner)
	if run.Out != &out || !run.NoInput || !run.Suspend {
		t.Errorf("ask runner %+v", run)
	}
}
