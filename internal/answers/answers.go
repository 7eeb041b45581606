// Package answers reads and checks the answers given to a run that waits
// for a person (docs/semantics.md#ask-agents-that-wait): `resume --answer
// AGENT=TEXT` and `--answers FILE.yaml`. Each answers its agent's next
// execution, once, and is read as any output is (JSON text is JSON).
package answers

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// ErrNoAnswer is the error of an answers file with no answer in it.
var ErrNoAnswer = errors.New("no answer in it: map each agent to its answer (approver: yes)")

// Parse adds each AGENT=TEXT of pairs to given, which file (an answers
// file, read by ParseFile) may have filled already: an agent answered twice
// is an error.
func Parse(given map[string]string, pairs []string) error {
	for _, kv := range pairs {
		name, text, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return fmt.Errorf("--answer %q: give AGENT=TEXT", kv)
		}
		if _, dup := given[name]; dup {
			return fmt.Errorf("--answer: %q is answered twice", name)
		}
		given[name] = text
	}
	return nil
}

// ReadFile reads the answers file at path into given (see ParseFile). The
// file is read as an ensemble file is, at most ensemble.MaxFileSize bytes.
func ReadFile(path string, given map[string]string) error {
	data, err := ensemble.ReadFile(path)
	if err != nil {
		return err
	}
	return ParseFile(path, data, given)
}

// ParseFile reads an answers file into given: one YAML document mapping
// agents to answers, read like the project's other YAML files (errors at
// FILE:LINE:COL in plain words, a second document refused). A string is
// the answer's text; any other YAML value is the output itself, given as
// JSON.
func ParseFile(file string, data []byte, given map[string]string) error {
	root, err := ensemble.ParseYAML(file, data)
	if err != nil {
		return err
	}
	if root == nil || root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return fmt.Errorf("%s: %w", file, ErrNoAnswer)
	}
	at := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d:%d: %s", file, n.Line, n.Column, fmt.Sprintf(format, args...))
	}
	if root.Kind != yaml.MappingNode {
		return at(root, "an answers file maps each agent to its answer (approver: yes)")
	}
	lines := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" && k.ShortTag() != "!!int" {
			return at(k, "expected an agent name")
		}
		if first, dup := lines[k.Value]; dup {
			return at(k, "agent %q is answered twice (first at line %d)", k.Value, first)
		}
		lines[k.Value] = k.Line
		var x any
		if err := v.Decode(&x); err != nil {
			return at(v, "the answer of %q: %v", k.Value, err)
		}
		s, ok := x.(string)
		if !ok { // a YAML value is the output itself: give it as JSON
			b, err := json.Marshal(x)
			if err != nil {
				return at(v, "the answer of %q: %v", k.Value, err)
			}
			s = string(b)
		}
		given[k.Value] = s
	}
	return nil
}

// Check refuses answers for agents the saved run f of e does not wait for.
func Check(e *ensemble.Ensemble, f *state.File, given map[string]string) error {
	if len(given) == 0 {
		return nil
	}
	// A run that was resumed with answers and then interrupted before its
	// turn committed waits for them still: any run that resume continues.
	var waiting []string
	if f.Resumable() {
		for _, p := range engine.FromFile(e, f, engine.Options{}).PendingInput() {
			waiting = append(waiting, p.Agent)
		}
	}
	names := make([]string, 0, len(given))
	for name := range given {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.Contains(waiting, name) {
			continue
		}
		why := "the run is not waiting for input"
		if len(waiting) > 0 {
			why = "the run waits for " + strings.Join(waiting, ", ")
		}
		// Worded for every door (resume --answer, the run API, a chat
		// reply, A2A): none names a flag.
		if e.Agent(name) == nil {
			return fmt.Errorf("cannot answer unknown agent %q%s (%s)", name, ensemble.Suggest(name, e.AgentNames()), why)
		}
		return fmt.Errorf("cannot answer agent %q: it is not waiting for input (%s)", name, why)
	}
	return nil
}
