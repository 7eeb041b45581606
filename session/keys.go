package session

import (
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

// checkKeys refuses, before the first turn, a run whose agents would call a
// model without its key: an agent of a kind that calls a model
// (agent.ModelUser), in the file or a child ensemble, that has no injected
// responses and would not be stopped by the guard of live agents, nor
// served by a replay, whose profile names in api_key_env a variable that is
// unset or empty. A simulated user (a responses entry {simulate: ...})
// needs its profile's key too. Without this the run would fail mid-way,
// after the scripts before it ran.
func (s *Session) checkKeys(lookup func(string) (string, bool)) error {
	o := s.opts.Models
	if opaque.Get(o.Recording) != nil && !opaque.Get(o.Recording).Live() {
		return nil // a replay answers every model request
	}
	check := func(e *ensemble.Ensemble, who, name string) error {
		p := e.Models[name]
		if p == nil || p.APIKeyEnv == "" {
			return nil // an unknown profile is the loader's error; no key is needed without api_key_env
		}
		v, ok := lookup(p.APIKeyEnv)
		if ok && strings.TrimSpace(v) != "" {
			return nil
		}
		unset := "which is not set"
		if ok {
			unset = "which is set but empty" // an `export KEY=` with nothing after it
		}
		return fmt.Errorf("%s calls model profile %q, whose key is read from %s, %s: export it, or run without the model, with injected replies (--responses FILE)",
			who, name, p.APIKeyEnv, unset)
	}
	// A child file is checked once, not once per path to it (a wide tree
	// has exponentially many): below a path that no responses entry or
	// --live name reaches into, every path of a file gets the same answer.
	marked := map[string]bool{}
	for _, name := range append(o.Responses.Agents(), o.Live...) {
		name = agentpath.PathWithoutInstances(name)
		for i := range len(name) {
			if name[i] == '/' {
				marked[name[:i+1]] = true
			}
		}
	}
	// --live analyst[1]/think lets one instance's child call its model:
	// the walk names paths without instances, so it is checked as
	// analyst/think.
	liveOne := map[string]bool{}
	for _, name := range o.Live {
		if strings.Contains(name, "[") {
			liveOne[agentpath.PathWithoutInstances(name)] = true
		}
	}
	checked := map[*ensemble.Ensemble]bool{}
	var walk func(e *ensemble.Ensemble, prefix string) error
	walk = func(e *ensemble.Ensemble, prefix string) error {
		if prefix != "" && !marked[prefix] && o.Guard == nil {
			if checked[e] {
				return nil
			}
			checked[e] = true
		}
		for _, a := range e.Agents {
			path := prefix + a.Name
			for _, c := range agent.Children(a) {
				if err := walk(c, path+"/"); err != nil {
					return err
				}
			}
			if ent := o.Responses.Entry(path); ent != nil {
				if ent.Simulate != nil {
					if err := check(e, fmt.Sprintf("the simulated user of %q", path), ent.Simulate.ModelProfile); err != nil {
						return err
					}
				}
				continue
			}
			if _, replaced := s.opts.Replace[a.Kind.String()]; replaced || !s.calls(path) && !liveOne[path] {
				continue
			}
			if name := agent.ModelProfile(a); name != "" {
				if err := check(e, fmt.Sprintf("agent %q", path), name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(s.e, "")
}

// calls reports whether an agent at path without injected responses would
// call its model: the guard of live agents lets it through (--live), or
// there is none.
func (s *Session) calls(path string) bool {
	return s.guard == nil || s.guard(path) == nil
}
