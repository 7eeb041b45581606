// Package agentpath names the agents of an ensemble by path, through the
// agents that run child ensembles (`review_round/critic`) and the instances
// of a fan-out agent (`analyst[1]/think`), and finds their records in a
// run's state. It is part of the public API: a kind written outside this
// module reads agent paths with it as the built-in kinds do.
package agentpath

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// PathWithoutInstances is path with the instance of each part dropped:
// `analyst[1]/think` is `analyst/think`, the name an entry or a --live
// name shared by every instance's child has.
func PathWithoutInstances(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if a, _, ok := ensemble.ParseInstanceName(p); ok {
			parts[i] = a
		}
	}
	return strings.Join(parts, "/")
}

// AgentAt is the agent a path names: an agent of e, or through agents that
// run child ensembles (`review_round/critic`) an agent of a child; nil when
// there is none. A dispatch's cases are searched in order. A part above
// the last may name one instance of a fan-out agent (`analyst[1]/think`).
func AgentAt(e *ensemble.Ensemble, path string) *ensemble.Agent {
	parts := strings.Split(path, "/")
	es := []*ensemble.Ensemble{e}
	for i, part := range parts {
		var next []*ensemble.Ensemble
		for _, x := range es {
			a := x.Agent(part)
			if a == nil && i < len(parts)-1 {
				// An instance's child (`analyst[1]/think`).
				if name, _, ok := ensemble.ParseInstanceName(part); ok {
					if a = x.Agent(name); a != nil && a.FanOut == nil {
						a = nil
					}
				}
			}
			if a == nil {
				continue
			}
			if i == len(parts)-1 {
				return a
			}
			next = append(next, agent.Children(a)...)
		}
		es = next
	}
	return nil
}

// SuggestAgent is the did-you-mean for an unknown name in responses: among
// the top-level names, or for a path among every child agent's path. A path
// with one level too many (a dispatch's case key, `route/billing/answer`)
// suggests the path without it.
func SuggestAgent(e *ensemble.Ensemble, name string) string {
	if !strings.Contains(name, "/") {
		return ensemble.Suggest(name, e.AgentNames())
	}
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts)-1; i++ {
		p := strings.Join(append(slices.Clone(parts[:i]), parts[i+1:]...), "/")
		if AgentAt(e, p) != nil {
			return fmt.Sprintf("; did you mean %q?", p)
		}
	}
	return ensemble.Suggest(name, agentPaths(e, ""))
}

// agentPaths lists the agents of e and of its child ensembles by path, each
// once, in file order.
func agentPaths(e *ensemble.Ensemble, prefix string) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range e.Agents {
		add := func(p string) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		add(prefix + a.Name)
		for _, c := range agent.Children(a) {
			for _, p := range agentPaths(c, prefix+a.Name+"/") {
				add(p)
			}
		}
	}
	return out
}

// PathRecords are the records of the agent at path (`review/critic`,
// `analyst[1]/think`) among recs and the runs of the children they ran, in
// order. A part of path without an instance (`analyst/think`) takes in
// every instance's records.
func PathRecords(recs []*state.Record, path string) []*state.Record {
	return pathRecords(recs, strings.Split(path, "/"), "")
}

func pathRecords(recs []*state.Record, want []string, prefix string) []*state.Record {
	var out []*state.Record
	for _, r := range recs {
		name := prefix + r.AgentName
		depth := strings.Count(name, "/") + 1
		if partsMatch(want, name) {
			out = append(out, r)
		}
		if c := r.Child(); c != nil && len(want) > depth && partsMatch(want[:depth], name) {
			for _, c := range c.Runs() {
				out = append(out, pathRecords(c.ConversationHistory, want, name+"/")...)
			}
		}
	}
	return out
}

// NamesPath reports whether any of names (`--live` names) names the agent
// at path: the same path, or one whose parts without an instance take in
// every instance there (`analyst/think` and `analyst[0]/summarize` both name
// `analyst[0]/summarize[1]`).
func NamesPath(names []string, path string) bool {
	for _, n := range names {
		if n == path || partsMatch(strings.Split(n, "/"), path) {
			return true
		}
	}
	return false
}

// partsMatch reports whether the path name has the parts want, each the
// same or, where want names no instance, an instance of it.
func partsMatch(want []string, name string) bool {
	got := strings.Split(name, "/")
	if len(got) != len(want) {
		return false
	}
	for i, g := range got {
		if g != want[i] && PathWithoutInstances(g) != want[i] {
			return false
		}
	}
	return true
}
