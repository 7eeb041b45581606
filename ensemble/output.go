package ensemble

import (
	"maps"
	"slices"
)

// TopKeys lists the keys the loader reads at the top of an ensemble file,
// in the order messages list them (x- keys aside).
func TopKeys() []string { return slices.Clone(topKeys) }

// output decodes the top-level output: the name of an agent of the file.
// It is checked once the agents are decoded; with no agent decoded (the
// file's agents: is missing or broken, which is reported), it is not.
func (d *decoder) output(f field) string {
	if !f.ok() {
		return ""
	}
	name := d.str(f)
	d.need(f, name == "")
	if name != "" && len(d.agentNodes) > 0 && d.agentNodes[name] == nil {
		d.errorf(f.val, "output: unknown agent %q%s", name, suggest(name, slices.Sorted(maps.Keys(d.agentNodes))))
	}
	return name
}

// OutputAgent is the agent the file's output: names; nil without one.
func (e *Ensemble) OutputAgent() *Agent {
	if e.Output == "" {
		return nil
	}
	return e.Agent(e.Output)
}

// ResultOf is what the ensemble returns to its callers from a run that
// ended with the final state final: the output: agent's output (the value
// under its state key), or without output: the whole final state. ok is
// false when the output: agent has no output in final (it never ran, it
// failed, or it was skipped).
func (e *Ensemble) ResultOf(final map[string]any) (v any, ok bool) {
	a := e.OutputAgent()
	if a == nil {
		if e.Output != "" {
			return nil, false
		}
		return final, true
	}
	v, ok = final[a.StateKey()]
	return v, ok
}

// OutputSchema is the JSON Schema of what the ensemble returns
// (docs/format.md#what-an-ensemble-returns): the output_schema of its
// output: agent, or for a fan-out agent, whose output is the list of its
// instances' outputs, an array of them (an item may be null, a failed
// instance's, unless on_error is fail). nil when the file has no output:
// or that agent has no output_schema. The value is a new map each call; the
// agent's schema in it is shared, and must not be modified.
func (e *Ensemble) OutputSchema() map[string]any {
	a := e.OutputAgent()
	if a == nil || a.OutputSchema == nil || a.OutputSchema.Doc == nil {
		return nil
	}
	doc := a.OutputSchema.Doc
	if a.FanOut == nil {
		return maps.Clone(doc)
	}
	// The agent's schema becomes the items' schema. Keywords that only
	// mean something at a document's root move to the array's root: its
	// dialect ($schema), and its definitions, which its references
	// (#/$defs/x) then find there. A schema with an $id of its own is its
	// own root for its references, and keeps them.
	items := maps.Clone(doc)
	out := map[string]any{"type": "array"}
	if s, ok := items["$schema"]; ok {
		out["$schema"] = s
		delete(items, "$schema")
	}
	if _, ok := items["$id"]; !ok {
		for _, k := range []string{"$defs", "definitions"} {
			if v, ok := items[k]; ok {
				out[k] = v
				delete(items, k)
			}
		}
	}
	var item any = items
	if !a.FanOut.FailOnError {
		item = map[string]any{"anyOf": []any{items, map[string]any{"type": "null"}}}
	}
	out["items"] = item
	return out
}

// InputSchema is the JSON Schema of a run's input: a string (the format has
// no schema of its own for it), its default the file's input: when it has
// one.
func (e *Ensemble) InputSchema() map[string]any {
	s := map[string]any{"type": "string"}
	if e.Input != "" {
		s["default"] = e.Input
	}
	return s
}
