package conditions

import (
	"errors"
	"strings"
	"testing"
)

// A pattern read from the run's data is charged for the work of its match
// (the text's bytes times the pattern's instructions), before it is done:
// ten thousand alternations over a megabyte of output fail at once on the
// step budget, where the match alone took minutes beyond the run's
// deadline. Ordinary patterns, literal or not, match as expr's do.
func TestDynamicPatternsAreCharged(t *testing.T) {
	t.Parallel()
	ctx := map[string]any{"a": map[string]any{
		"text":    strings.Repeat("a", 1<<20),
		"pattern": strings.Repeat("(a|aa)*", 10000) + "b",
		"simple":  "^a+$",
		"short":   "hello world",
		"bad":     "(",
		"n":       1.0,
	}}
	p := MustCompile(`context.a.text matches context.a.pattern`)
	if _, err := p.Eval(&Env{Context: ctx}); !errors.Is(err, ErrStepBudget) {
		t.Fatalf("error = %v, want the step budget", err)
	}
	for src, want := range map[string]bool{
		`context.a.text matches context.a.simple`:    true,
		`context.a.short matches context.a.simple`:   false,
		`context.a.short matches "wor"`:              true,
		`context.a.short matches ("^" + "hello")`:    true,
		`!(context.a.short matches context.a.short)`: false,
	} {
		got, err := MustCompile(src).Eval(&Env{Context: ctx})
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
	for src, msg := range map[string]string{
		`context.a.short matches context.a.bad`: "error parsing regexp",
		`context.a.n matches context.a.simple`:  "mismatched types",
	} {
		if _, err := MustCompile(src).Eval(&Env{Context: ctx}); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", src, err, msg)
		}
	}
}
