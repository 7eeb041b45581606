package conditions

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// missEnv is a context where get_diff ran and author did not.
func missEnv() *Env {
	return &Env{Context: map[string]any{
		"get_diff": map[string]any{"touches_code": true, "diff": "d", "meta": map[string]any{"lines": 3.0}, "none": nil,
			"list": []any{map[string]any{"ok": true}}},
		"judge": "APPROVE",
	}, Executions: map[string]int{"get_diff": 1}}
}

func TestMissingReads(t *testing.T) {
	t.Parallel()
	type miss struct{ path, key, suggestion string }
	for _, c := range []struct {
		src   string
		kind  string // condition, select, template
		want  []miss
		value any // "" to skip
	}{
		{"context.get_diff.touches_cod", "select", []miss{{"context.get_diff.touches_cod", "touches_cod", "touches_code"}}, nil},
		{"context.get_diff.touches_code", "condition", nil, true},
		// A key present with null is no miss.
		{"context.get_diff.none == nil", "condition", nil, true},
		// context's own keys: an agent that has not run yet.
		{"context.author == nil", "condition", nil, true},
		{"executions.author == 0", "condition", nil, nil},
		// ?. says the key may be absent.
		{"context.get_diff?.touches_cod ?? false", "condition", nil, false},
		{"context.get_diff?.nope == nil", "condition", nil, true},
		{"context.author?.pach == nil", "condition", nil, true},
		// …and so does a ?. just after the key.
		{"context.get_diff.nope?.x == nil", "condition", nil, true},
		{"context.get_diff.nope?.x.y == nil", "condition", nil, true},
		// After a ?., a read below a present map is still seen.
		{"context.get_diff?.meta.line == nil", "condition", []miss{{"context.get_diff?.meta.line", "line", "lines"}}, true},
		// The chain on the left of ?? may be absent.
		{"context.get_diff.dif ?? 'x'", "select", nil, "x"},
		{"context.get_diff.meta.line ?? 0", "select", nil, 0},
		// …but not the right side.
		{"context.author?.pach ?? context.get_diff.dif", "template", []miss{{"context.get_diff.dif", "dif", "diff"}}, nil},
		{"context.get_diff.dif == nil", "condition", []miss{{"context.get_diff.dif", "dif", "diff"}}, true},
		// No key near enough: no suggestion.
		{"context.get_diff.zzzzzzzz == nil", "condition", []miss{{"context.get_diff.zzzzzzzz", "zzzzzzzz", ""}}, true},
		// Index syntax with a constant is a read of that key; case is
		// suggested.
		{"context.get_diff['Diff'] == nil", "condition", []miss{{"context.get_diff.Diff", "Diff", "diff"}}, true},
		// Predicates read their items' keys; each path is noted once.
		{"all(context.get_diff.list, .okk == nil)", "condition", []miss{{".okk", "okk", "ok"}}, true},
		// A key read twice in one expression: once.
		{"context.get_diff.dif == nil && context.get_diff.dif == nil", "condition", []miss{{"context.get_diff.dif", "dif", "diff"}}, true},
		// A field of a string is expr's error, not a miss.
		{"context.judge.verdict == nil", "condition", nil, nil},
	} {
		t.Run(c.src, func(t *testing.T) {
			t.Parallel()
			env := missEnv()
			env.Reads = &Reads{}
			var got any
			var err error
			switch c.kind {
			case "condition":
				got, err = MustCompile(c.src).EvalContext(context.Background(), env)
			case "select":
				s, cerr := CompileSelect(c.src)
				if cerr != nil {
					t.Fatal(cerr)
				}
				got, err = s.EvalContext(context.Background(), env, nil)
			case "template":
				tp, cerr := CompileTemplate("{{ "+c.src+" }}", false)
				if cerr != nil {
					t.Fatal(cerr)
				}
				got, err = tp.EvalContext(context.Background(), env, nil)
			}
			if c.value != nil {
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(c.value) {
					t.Errorf("value %v, want %v", got, c.value)
				}
			}
			var misses []miss
			for _, m := range env.Reads.Take() {
				m.Suggest()
				if m.Expression != c.src {
					t.Errorf("expression %q, want %q", m.Expression, c.src)
				}
				misses = append(misses, miss{m.Path, m.Key, m.Suggestion})
			}
			if !reflect.DeepEqual(misses, c.want) {
				t.Errorf("misses %+v, want %+v", misses, c.want)
			}
		})
	}
}

// Fan-out templates read their item's keys; a select its output's; a
// loop's until its output's.
func TestMissingReadsOfItemAndOutput(t *testing.T) {
	t.Parallel()
	reads := &Reads{}
	env := &Env{Context: map[string]any{}, Reads: reads}
	tp, err := CompileTemplate("Review {{ item.pth }}", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.EvalContext(context.Background(), env, &Item{Value: map[string]any{"path": "a.go"}, Count: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := CompileLoop("output.verdikt == 'ok' || status == 'failed'")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EvalOutcome(context.Background(), env, map[string]any{"verdict": "ok"}, Outcome{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	got := reads.Take()
	for i := range got {
		got[i].Suggest()
	}
	want := []Miss{
		{Expression: "item.pth", Path: "item.pth", Key: "pth", Suggestion: "path"},
		{Expression: "output.verdikt == 'ok' || status == 'failed'", Path: "output.verdikt", Key: "verdikt", Suggestion: "verdict"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if reads.Take() != nil {
		t.Error("Take did not forget")
	}
}

// The rewrite keeps expr's behaviour where no key is missing: a ?. over
// null ends the chain, a fetch from null is an error, as before.
func TestMissingReadsKeepSemantics(t *testing.T) {
	t.Parallel()
	env := missEnv()
	env.Reads = &Reads{}
	for src, want := range map[string]any{
		"context.author?.a.b":             nil,
		"context.get_diff.meta?.x":        nil,
		"context.get_diff.list[0]":        map[string]any{"ok": true},
		"context.get_diff.meta.lines + 1": 4.0,
	} {
		s, err := CompileSelect(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.EvalContext(context.Background(), env, nil)
		if err != nil {
			t.Errorf("%s: %v", src, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", src, got, want)
		}
	}
	// The error of a fetch from null, as written.
	s, _ := CompileSelect("context.get_diff.nope.x")
	if _, err := s.EvalContext(context.Background(), env, nil); err == nil || err.Error() != "cannot fetch x from nil (a missing value: write ?. and ?? where it may be missing) (column 23 of the select)" {
		t.Errorf("error %v", err)
	}
	if len(env.Reads.Take()) != 1 {
		t.Error("the missing nope was not noted")
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	keys := map[string]any{"touches_code": 1, "diff": 1, "id": 1, "verdict": 1}
	for key, want := range map[string]string{
		"touches_cod": "touches_code", "dif": "diff", "Verdict": "verdict", "ok": "", "ix": "id", "zzzz": "",
	} {
		if got := closest(key, keys); got != want {
			t.Errorf("closest(%q) = %q, want %q", key, got, want)
		}
	}
}

func BenchmarkMissingRead(b *testing.B) {
	p := MustCompile("context.get_diff.touches_cod == true")
	env := missEnv()
	env.Reads = &Reads{}
	for b.Loop() {
		_, _ = p.Eval(env)
		env.Reads.Take()
	}
}

// The search for a suggestion, over an object of 10,000 keys: what the
// first report of a miss costs (later reads of it skip it).
func BenchmarkSuggest(b *testing.B) {
	obj := map[string]any{}
	for i := range 10_000 {
		obj[fmt.Sprintf("field_%d", i)] = i
	}
	for b.Loop() {
		m := Miss{Key: "feild_77", obj: obj}
		m.Suggest()
	}
}
