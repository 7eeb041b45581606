package bdd

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/runners"
)

// A policy is a simulator that answers an ask agent with fixed values
// (docs/testing.md#simulated-people): `always VALUE`, every answer VALUE,
// or `V1 then V2 then V3`, the values in order, the last one repeated. A
// value is a JSON literal (an object, a list, a number, true, false, null or
// a "quoted" string) or bare text, which is a string unless it reads as a
// number, true, false or null.
type policy struct {
	text   string // as written, for messages
	values []any  // at least one; the last repeats
}

// policySyntax is how a policy is written, for messages.
const policySyntax = `write always VALUE, or VALUE then VALUE (then ...): always "yes", reject then approve`

// maxPolicyValues is how many values a policy may list.
const maxPolicyValues = 1000

// parsePolicy reads a policy as written in a step.
func parsePolicy(text string) (*policy, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return nil, errors.New("the simulator is empty: " + policySyntax)
	}
	p := &policy{text: s}
	if word, rest := firstWord(s); word == "always" {
		if strings.TrimSpace(rest) == "" {
			return nil, errors.New("always needs a value: always \"yes\", always approve")
		}
		v, n, err := policyValue(strings.TrimSpace(rest))
		if err != nil {
			return nil, err
		}
		if tail := strings.TrimSpace(strings.TrimSpace(rest)[n:]); tail != "" {
			return nil, fmt.Errorf("always takes one value, and %s follows it: an answer that changes is written VALUE then VALUE", quote(tail))
		}
		p.values = []any{v}
		return p, nil
	}
	vals, err := policyValues(s)
	if err != nil {
		return nil, err
	}
	if len(vals) < 2 {
		return nil, fmt.Errorf("the simulator %s is one value with neither always nor then: %s", quote(s), policySyntax)
	}
	p.values = vals
	return p, nil
}

// policyValues reads VALUE then VALUE then ...
func policyValues(s string) ([]any, error) {
	var vals []any
	rest := s
	for {
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return nil, fmt.Errorf("a value is missing after the last then in %s", quote(s))
		}
		if len(vals) == maxPolicyValues {
			return nil, fmt.Errorf("the simulator lists more than %d values", maxPolicyValues)
		}
		v, n, err := policyValue(rest)
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
		rest = strings.TrimSpace(rest[n:])
		if rest == "" {
			return vals, nil
		}
		word, after := firstWord(rest)
		if word != "then" {
			return nil, fmt.Errorf("expected then after the value %s, got %s: %s", jsonText(v), quote(rest), policySyntax)
		}
		rest = after
	}
}

// policyValue reads the value at the start of s: a JSON object, list or
// string to its end, or bare text up to the next word then. n is how much
// of s it took.
func policyValue(s string) (v any, n int, err error) {
	switch s[0] {
	case '{', '[', '"':
		dec := json.NewDecoder(strings.NewReader(s))
		if err := dec.Decode(&v); err != nil {
			return nil, 0, fmt.Errorf("%s is not a JSON value: %v", quote(cut(s, 80)), err)
		}
		n = int(dec.InputOffset())
		if n < len(s) && s[n] != ' ' && s[n] != '\t' {
			return nil, 0, fmt.Errorf("the JSON value %s is followed by %s without a space or then", quote(s[:n]), quote(cut(s[n:], 40)))
		}
		return v, n, nil
	}
	n = len(s)
	if i := indexWord(s, "then"); i >= 0 {
		n = i
	}
	bare := strings.TrimSpace(s[:n])
	if bare == "" {
		return nil, 0, errors.New("a value is missing before a then")
	}
	var x any
	if err := json.Unmarshal([]byte(bare), &x); err == nil {
		switch x.(type) {
		case float64, bool, nil: // a number, true, false, null
			return x, n, nil
		}
	}
	return bare, n, nil
}

// firstWord splits s at its first space.
func firstWord(s string) (word, rest string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// indexWord is where the word w starts in s, standing alone (spaces or
// the ends around it), or -1.
func indexWord(s, w string) int {
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], w)
		if i < 0 {
			return -1
		}
		i += from
		end := i + len(w)
		if (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') && (end == len(s) || s[end] == ' ' || s[end] == '\t') {
			return i
		}
		from = i + 1
	}
	return -1
}

// answer is the policy's value for its n-th answer (from 1): the last
// value once the list is used up. It is a copy: a run's outputs are its
// own.
func (p *policy) answer(n int) any {
	return jsonvalue.Copy(p.values[min(max(n, 1), len(p.values))-1])
}

// check checks each value against what agent a takes as an answer (its
// output_schema, when its kind has one), as an answer is checked.
func (p *policy) check(a *ensemble.Agent) error {
	for i, v := range p.values {
		if err := checkAnswer(a, v); err != nil {
			return fmt.Errorf("ask agent %q cannot take the simulator's value %d, %s: %w", a.Name, i+1, jsonText(v), err)
		}
	}
	return nil
}

// checkAnswer checks v as an answer of a.
func checkAnswer(a *ensemble.Agent, v any) error {
	if err := runners.CheckSchema(a, v); err != nil {
		return err
	}
	return nil
}

// jsonText is v as compact JSON, for messages.
func jsonText(v any) string { return cut(jsonvalue.Compact(v), 200) }
