package engine

import (
	"fmt"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// MaxFanOutGiven is the most the instances of one fan-out execution may
// be given beyond their dependencies (docs/semantics.md#fan-out): their
// items and what their templates (input, prompt) give, added up over the
// instances, as the JSON their records hold. Each instance's record keeps
// its item and what its templates gave, so a template that embeds a large
// output, or a list whose items are that output again and again
// (`over: map(…, context.doc.text)`), would otherwise store a copy of it
// per instance: a 9 MB output and 100 instances made 900 MB in the state,
// and several times that in memory as the turn was saved. A large value
// reaches the instances through their dependencies, which the history
// holds once.
const MaxFanOutGiven = 64 << 20

// fanSizes adds up what one fan-out's instances are given, as they are
// planned, and fails past MaxFanOutGiven.
type fanSizes struct {
	agent *ensemble.Agent
	count int   // the instances of the fan-out
	total int64 // what the instances planned so far were given
	// The largest one value given to an instance, what it was (the item,
	// or a template's field) and the instance.
	largest int64
	field   string // "" for the item
	at      string
}

// add counts the item and template values vals of the instance name: an
// error once the instances' total passes MaxFanOutGiven.
func (t *fanSizes) add(name string, item any, vals map[string]any) error {
	if err := t.count1(name, "", item); err != nil {
		return err
	}
	for _, tpl := range t.agent.Templates {
		if v, ok := vals[tpl.Field]; ok {
			if err := t.count1(name, tpl.Field, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// count1 counts v, given to the instance name as its item (field "") or
// by its template of field.
func (t *fanSizes) count1(name, field string, v any) error {
	n := jsonSize(v, MaxFanOutGiven-t.total)
	t.total += n
	if n > t.largest {
		t.largest, t.field, t.at = n, field, name
	}
	if t.total <= MaxFanOutGiven {
		return nil
	}
	what := fmt.Sprintf("the item (fan_out.over %q)", t.agent.FanOut.Over)
	for _, tp := range t.agent.Templates {
		if t.field != "" && tp.Field == t.field {
			what = fmt.Sprintf("%s (%q)", tp.Field, tp.Source)
		}
	}
	return fmt.Errorf("fan_out of agent %q: its instances would be given more than %s in all beside their dependencies, the cap of one fan-out (each instance's record keeps its item and what its templates gave): %s gave %s to %s, about %s for its %d instances; "+
		"pass a large value through the agent's dependencies, which the history holds once, rather than through a template or the items",
		t.agent.Name, readcap.Size(MaxFanOutGiven), what, byteSize(t.largest), t.at, byteSize(t.largest*int64(t.count)), t.count)
}

// byteSize writes n bytes for a message in the units of the cap it is
// measured against (readcap.Size, powers of 1024): 8.6MiB, 640.0KiB,
// 12 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// jsonSize is about the length of v as compact JSON (strings without their
// escapes), walked no further than it takes to pass limit: a value larger
// than limit gives a number larger than limit, not its whole size.
func jsonSize(v any, limit int64) int64 {
	switch x := v.(type) { // most items: no walk
	case string:
		return int64(len(x)) + 2
	case map[string]any, []any:
	default:
		return 8
	}
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
