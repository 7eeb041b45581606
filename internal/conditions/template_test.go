package conditions

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestTemplateValueAndText(t *testing.T) {
	env := &Env{Input: "the report", Context: map[string]any{
		"facts": map[string]any{"region": "EMEA", "n": 3.0},
	}}
	item := &Item{Value: map[string]any{"id": "a"}, Index: 1, Count: 4}
	for _, c := range []struct {
		src  string
		item *Item
		want any
	}{
		{"{{ context.facts }}", nil, map[string]any{"region": "EMEA", "n": 3.0}},
		{"  {{ item }}\n", item, map[string]any{"id": "a"}},
		{"{{ index }}", item, 1.0},
		{"Write the {{ input }} for {{ context.facts.region }}.", nil, "Write the the report for EMEA."},
		{"{{ item }} ({{ index + 1 }} of {{ count }})", item, `{"id":"a"} (2 of 4)`},
		{"no placeholder", nil, "no placeholder"},
		{`{{ {"a": {"b": "}}"}} }}`, nil, map[string]any{"a": map[string]any{"b": "}}"}}},
		{"{{ split(input, ' ') }}", nil, []any{"the", "report"}},
	} {
		tp, err := CompileTemplate(c.src, c.item != nil)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		got, err := tp.EvalContext(context.Background(), env, c.item)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q gave %#v, want %#v", c.src, got, c.want)
		}
	}
}

func TestTemplateCompileErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"Write {{ inptu }}.", "unknown name inptu (column 10 of the template)"},
		{"a\nb {{ 1 + }}", "(line 2, column"},
		{"Write {{ input", "{{ is not closed by }} (column 7 of the template)"},
		{"x {{  }}", "empty placeholder {{ }} (column 3 of the template)"},
		{"{{ output }}", "unknown name output"},
		{"Summarize {{ item }}", "item is only known to an agent with a fan_out (item, index and count are its instance's) (column 14 of the template)"},
	} {
		_, err := CompileTemplate(c.src, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.src, err, c.want)
		}
	}
}

func TestTemplateNames(t *testing.T) {
	tp, err := CompileTemplate("For {{ context.facts.region }} and {{ executions.writer }}, {{ item }}", true)
	if err != nil {
		t.Fatal(err)
	}
	if k := tp.Names.ContextKeys; len(k) != 1 || k[0].Name != "facts" || k[0].Column != 16 {
		t.Errorf("context keys %+v", k)
	}
	if f := tp.Names.ContextFields; len(f) != 1 || f[0].Column != 22 {
		t.Errorf("context fields %+v", f)
	}
	if k := tp.Names.ExecutionKeys; len(k) != 1 || k[0].Name != "writer" || k[0].Column != 50 {
		t.Errorf("execution keys %+v", k)
	}
	if tp.UsesHistory() {
		t.Error("UsesHistory without history")
	}
}

func TestTemplateRuntimeErrorsAndBudgets(t *testing.T) {
	tp, _ := CompileTemplate("{{ context.missing.field }}", false)
	_, err := tp.EvalContext(context.Background(), &Env{}, nil)
	if err == nil || !strings.Contains(err.Error(), "{{ context.missing.field }}: cannot fetch field from nil") {
		t.Errorf("got %v", err)
	}
	tp, _ = CompileTemplate(`x {{ repeat("a", 40000000) }}`, false)
	_, err = tp.EvalContext(context.Background(), &Env{}, nil)
	if !errors.Is(err, ErrMemoryBudget) {
		t.Errorf("got %v, want the memory budget", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tp, _ = CompileTemplate("{{ input }}", false)
	if _, err := tp.EvalContext(ctx, &Env{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want cancelled", err)
	}
	// A condition cannot name a fan-out instance's item, and count stays
	// expr's builtin there.
	if _, err := Compile("item == 1"); err == nil {
		t.Error("a condition compiled with item")
	}
	if _, err := CompileTemplate("{{ count([1, 2], # > 1) }}", false); err != nil {
		t.Errorf("count outside a fan-out: %v", err)
	}
}

// A template shows {{ as text through a placeholder of a string.
func TestTemplateLiteralBraces(t *testing.T) {
	t.Parallel()
	tp, err := CompileTemplate(`Use {{ "{{" }} name }} here`, false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tp.EvalContext(context.Background(), &Env{}, nil)
	if err != nil || v != "Use {{ name }} here" {
		t.Fatalf("%#v %v", v, err)
	}
}

// A template's placeholders share one condition's budgets: what one
// placeholder may do alone, four of them together may not.
func TestTemplatePlaceholdersShareTheBudget(t *testing.T) {
	t.Parallel()
	const heavy = `{{ len(filter(1..300000, # > 0)) }}`
	one, err := CompileTemplate(heavy, false)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := one.EvalContext(context.Background(), &Env{}, nil); err != nil || fmt.Sprint(v) != "300000" {
		t.Fatalf("one placeholder: %#v %v", v, err)
	}
	four, err := CompileTemplate(heavy+" "+heavy+" "+heavy+" "+heavy, false)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := four.EvalContext(context.Background(), &Env{}, nil); !errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("four placeholders: %#v %v", v, err)
	}
}
