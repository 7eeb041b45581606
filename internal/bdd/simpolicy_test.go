package bdd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	obj := func(approved bool) map[string]any { return map[string]any{"approved": approved} }
	for _, c := range []struct {
		text string
		// answers are the first answers, in order: the policy's values,
		// then its last one repeated.
		answers []any
	}{
		{`always "yes"`, []any{"yes", "yes", "yes"}},
		{`always yes`, []any{"yes", "yes"}},
		{`always looks good to me`, []any{"looks good to me", "looks good to me"}},
		{`always 42`, []any{42.0, 42.0}},
		{`always true`, []any{true}},
		{`always null`, []any{nil, nil}},
		{`always {"approved": true}`, []any{obj(true), obj(true)}},
		{`  always   [1, "a"]  `, []any{[]any{1.0, "a"}, []any{1.0, "a"}}},
		{`always "go then stop"`, []any{"go then stop", "go then stop"}},
		{`reject then approve`, []any{"reject", "approve", "approve", "approve"}},
		{`no then no then yes`, []any{"no", "no", "yes", "yes"}},
		{`{"approved": false} then {"approved": true}`, []any{obj(false), obj(true), obj(true)}},
		{`{"approved":false}then{"approved":true}`, nil}, // refused: then is a word
		{`"not yet, then" then "fine"`, []any{"not yet, then", "fine", "fine"}},
		{`needs more detail then 3 then false`, []any{"needs more detail", 3.0, false, false}},
		{`athen then thena`, []any{"athen", "thena"}},
	} {
		p, err := parsePolicy(c.text)
		if c.answers == nil {
			if err == nil {
				t.Errorf("%s: parsed as %v, want an error", c.text, p.values)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		for i, want := range c.answers {
			if got := p.answer(i + 1); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: answer %d is %#v, want %#v", c.text, i+1, got, want)
			}
		}
	}
}

func TestParsePolicyErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, want string }{
		{``, "the simulator is empty"},
		{`always`, "always needs a value"},
		{`always yes then no`, "always takes one value"},
		{`always "yes" no`, "always takes one value"},
		{`approve`, `"approve" is one value with neither always nor then`},
		{`reject than approve`, "neither always nor then"},
		{`reject then`, "a value is missing after the last then"},
		{`reject then then approve`, "a value is missing"},
		{`{"approved": } then yes`, "is not a JSON value"},
		{`{"a": 1} {"a": 2}`, "expected then after the value {\"a\":1}"},
		{`"yes"no then x`, "is followed by"},
	} {
		_, err := parsePolicy(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error containing %q", c.text, err, c.want)
		}
	}
}

// The answers are copies: a run that changes one cannot change the next.
func TestPolicyAnswersAreCopies(t *testing.T) {
	t.Parallel()
	p, err := parsePolicy(`always {"notes": ["a"]}`)
	if err != nil {
		t.Fatal(err)
	}
	p.answer(1).(map[string]any)["notes"].([]any)[0] = "changed"
	if got := p.answer(2).(map[string]any)["notes"].([]any)[0]; got != "a" {
		t.Errorf("the second answer is %v", got)
	}
}

// A value is checked as an answer of the agent is: against its
// output_schema when its kind has one.
func TestPolicyCheckAgainstSchema(t *testing.T) {
	t.Parallel()
	schema, err := ensemble.CompileOutputSchema(map[string]any{
		"type":       "object",
		"properties": map[string]any{"approved": map[string]any{"type": "boolean"}},
		"required":   []any{"approved"},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &ensemble.Agent{Name: "reviewer", OutputSchema: schema}
	for _, c := range []struct{ text, want string }{
		{`always {"approved": true}`, ""},
		{`{"approved": false} then {"approved": true}`, ""},
		{`{"approved": false} then {"approved": "yes"}`, `ask agent "reviewer" cannot take the simulator's value 2, {"approved":"yes"}: the output does not match output_schema: at '/approved'`},
		{`reject then approve`, `ask agent "reviewer" cannot take the simulator's value 1, "reject"`},
	} {
		p, err := parsePolicy(c.text)
		if err != nil {
			t.Fatal(err)
		}
		err = p.check(a)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.text, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error containing %s", c.text, err, c.want)
		}
	}
	// Without a schema, any value fits.
	p, _ := parsePolicy(`reject then {"x": 1}`)
	if err := p.check(&ensemble.Agent{Name: "plain"}); err != nil {
		t.Error(err)
	}
}
