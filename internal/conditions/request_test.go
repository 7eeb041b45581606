package conditions

import (
	"context"
	"strings"
	"testing"
)

// A request template reads body and headers, nothing of a run's state,
// and stays within a condition's budgets.
func TestRequestTemplate(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"{{ context.x }}": "unknown name context",
		"{{ input }}":     "unknown name input",
		"{{ item }}":      "unknown name item",
	} {
		if _, err := CompileRequestTemplate(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
	tmpl, err := CompileRequestTemplate("{{ body.pr.url }} by {{ headers['x-user'] }} ({{ len(body.pr.labels) }})")
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"pr": map[string]any{"url": "u", "labels": []any{"a", "b"}}}
	got, err := tmpl.EvalRequest(context.Background(), body, map[string]any{"x-user": "ann"})
	if err != nil || got != "u by ann (2)" {
		t.Errorf("%v, %v", got, err)
	}
	if _, err := tmpl.EvalContext(context.Background(), &Env{}, nil); err == nil {
		t.Error("a request template evaluated over a run's state")
	}
	plain, _ := CompileTemplate("{{ input }}", false)
	if _, err := plain.EvalRequest(context.Background(), nil, nil); err == nil {
		t.Error("a run's template evaluated over a request")
	}
	heavy, err := CompileRequestTemplate("{{ repeat(body, 100000000) }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := heavy.EvalRequest(context.Background(), "xxxxxxxxxx", nil); err == nil {
		t.Error("a template past the budgets gave a value")
	}
}
