package ensemble

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/jsonvalue"
)

// MaxAliasValues is how many values YAML aliases may add to a value the
// loader decodes (an output_schema, a tool's parameters): past it the value
// is refused, so that a few lines of nested aliases cannot expand to
// gigabytes. yaml.v3 allowed about as many.
const MaxAliasValues = 400_000

// yamlValue converts n to JSON values (docs/semantics.md#outputs), as
// yaml.v3's Node.Decode into an any followed by jsonvalue.FromYAML did, in
// time linear in the value it returns: Node.Decode compares every key of a
// mapping with every other one, so that a mapping of 50,000 keys took
// minutes. Timestamps stay strings, as written; merge keys (<<) merge; a key
// written twice in one mapping is an error, as it was. ok is false when a
// number is .inf or .nan, which JSON cannot carry.
func yamlValue(n *yaml.Node) (v any, ok bool, err error) {
	c := valueConv{sizes: map[*yaml.Node]int{}, ok: true}
	written, expanded, err := c.size(n)
	if err != nil {
		return nil, false, err
	}
	if expanded-written > MaxAliasValues {
		return nil, false, fmt.Errorf("its aliases expand to more than %d values", MaxAliasValues)
	}
	v, err = c.value(n)
	return v, c.ok, err
}

// ExpandedSize is how many nodes n holds once its aliases are expanded
// (merge keys counted whole), saturating at 2^40, counted in time linear
// in the nodes written: an alias bomb is measured without being expanded.
func ExpandedSize(n *yaml.Node) (int, error) {
	c := valueConv{sizes: map[*yaml.Node]int{}}
	_, expanded, err := c.size(n)
	return expanded, err
}

type valueConv struct {
	// sizes is the expanded size of each anchored node an alias names,
	// -1 while it is being measured (an alias inside its own anchor).
	sizes map[*yaml.Node]int
	ok    bool
}

// size counts the nodes of n as written (aliases count one) and as
// expanded (an alias counts its anchor's nodes), memoizing anchors: linear in
// the nodes written.
func (c *valueConv) size(n *yaml.Node) (written, expanded int, err error) {
	if n == nil {
		return 0, 0, nil
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1, 1, nil
		}
		s, seen := c.sizes[n.Alias]
		if s < 0 {
			return 0, 0, fmt.Errorf("line %d: alias *%s is inside its own anchor", n.Line, n.Value)
		}
		if !seen {
			c.sizes[n.Alias] = -1
			if _, s, err = c.size(n.Alias); err != nil {
				return 0, 0, err
			}
			c.sizes[n.Alias] = s
		}
		return 1, s, nil
	}
	written, expanded = 1, 1
	for _, k := range n.Content {
		w, e, err := c.size(k)
		if err != nil {
			return 0, 0, err
		}
		written += w
		// Saturate: the sum is only compared with a bound.
		expanded = min(expanded+e, 1<<40)
	}
	return written, expanded, nil
}

func (c *valueConv) value(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: unknown anchor %q", n.Line, n.Value)
		}
		return c.value(n.Alias)
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.ScalarNode:
		return c.scalar(n)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

func (c *valueConv) mapping(n *yaml.Node) (map[string]any, error) {
	m := make(map[string]any, len(n.Content)/2)
	at := make(map[string]*yaml.Node, len(n.Content)/2) // raw key → its node
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, val)
			continue
		}
		if k.Kind == yaml.ScalarNode {
			if first := at[k.Value]; first != nil {
				return nil, fmt.Errorf("line %d: mapping key %q already defined at line %d", k.Line, k.Value, first.Line)
			}
			at[k.Value] = k
		}
		key, err := c.key(k)
		if err != nil {
			return nil, err
		}
		if m[key], err = c.value(val); err != nil {
			return nil, err
		}
	}
	// Keys written in the mapping win over merged ones; of the merged, the
	// first mapping that has a key gives it.
	for _, mv := range merges {
		mv = resolve(mv)
		var from []*yaml.Node
		switch mv.Kind {
		case yaml.MappingNode:
			from = []*yaml.Node{mv}
		case yaml.SequenceNode:
			for _, e := range mv.Content {
				from = append(from, resolve(e))
			}
		}
		for _, src := range from {
			if src.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("line %d: map merge requires map or sequence of maps as the value", mv.Line)
			}
			sm, err := c.mapping(src)
			if err != nil {
				return nil, err
			}
			for k, v := range sm {
				if _, set := m[k]; !set {
					m[k] = v
				}
			}
		}
	}
	return m, nil
}

// key is a mapping key as a string: a non-string scalar is formatted
// (1 → "1", true → "true"), as FromYAML formats the keys of a map[any]any.
func (c *valueConv) key(k *yaml.Node) (string, error) {
	k = resolve(k)
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: a mapping key must be a scalar", k.Line)
	}
	if t := k.ShortTag(); t == "!!str" || t == "!!timestamp" {
		return k.Value, nil
	}
	v, err := c.scalar(k)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(v), nil
}

func (c *valueConv) scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp": // dates decode as written
		return n.Value, nil
	case "!!null":
		return nil, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, errors.New(te.Errors[0])
		}
		return nil, err
	}
	v, fine := jsonvalue.FromYAML(v)
	c.ok = c.ok && fine
	return v, nil
}
