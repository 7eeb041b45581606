package engine

import (
	"fmt"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// MaxFanOutTemplates is the most the templates of one fan-out execution
// (its instances' input and prompt, docs/semantics.md#fan-out) may give,
// added up over the instances, as the JSON their records hold. Each
// instance's record holds what its templates gave, so a template that
// embeds a large output would otherwise store a copy of it per instance
// (a 9 MB output and 100 instances: 900 MB in the state, and several
// times that in memory as the turn is saved). A large value reaches the
// instances through their dependencies, which the history holds once.
const MaxFanOutTemplates = 64 << 20

// templateSizes adds up what the templates of one fan-out's instances give,
// as they are planned, and fails at MaxFanOutTemplates.
type templateSizes struct {
	agent   *ensemble.Agent
	count   int   // the instances of the fan-out
	total   int64 // what the instances planned so far gave
	largest int64 // the most one template gave
	field   string
	at      string // the instance it gave it to
}

// add counts the template values vals of the instance name: an error once
// the instances' total passes MaxFanOutTemplates. Nothing on a nil t.
func (t *templateSizes) add(name string, vals map[string]any) error {
	if t == nil {
		return nil
	}
	for _, tpl := range t.agent.Templates {
		v, ok := vals[tpl.Field]
		if !ok {
			continue
		}
		n := jsonSize(v, MaxFanOutTemplates-t.total)
		t.total += n
		if n > t.largest {
			t.largest, t.field, t.at = n, tpl.Field, name
		}
		if t.total > MaxFanOutTemplates {
			src := ""
			for _, tp := range t.agent.Templates {
				if tp.Field == t.field {
					src = tp.Source
				}
			}
			return fmt.Errorf("fan_out of agent %q: its instances' templates would give more than %s in all, the cap of one fan-out (each instance's record keeps what its templates gave): %s (%q) gave %s to %s, about %s for its %d instances; "+
				"pass a large value through the agent's dependencies, which the history holds once, rather than through a template",
				t.agent.Name, readcap.Size(MaxFanOutTemplates), t.field, src, byteSize(t.largest), t.at, byteSize(t.largest*int64(t.count)), t.count)
		}
	}
	return nil
}

// byteSize writes n bytes for a message: 9.0 MB, 640 KB, 12 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d bytes", n)
}

// jsonSize is about the length of v as compact JSON (strings without their
// escapes), walked no further than it takes to pass limit: a value larger
// than limit gives a number larger than limit, not its whole size.
func jsonSize(v any, limit int64) int64 {
	var n int64
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case string:
			n += int64(len(x)) + 2
		case map[string]any:
			n += 2
			for k, e := range x {
				n += int64(len(k)) + 4
				if walk(e); n > limit {
					return
				}
			}
		case []any:
			n += 2
			for _, e := range x {
				n++
				if walk(e); n > limit {
					return
				}
			}
		default:
			n += 8 // numbers, booleans, null: a few bytes
		}
	}
	walk(v)
	return n
}
