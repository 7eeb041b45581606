package conditions

import (
	"fmt"
	"strings"
	"testing"
)

// comparisonString writes c as `PATH OP LIT@LINE:COL, …` (Elem: `LIT in
// PATH[]`), with its defaults after `??`.
func comparisonString(c Comparison) string {
	var lits []string
	for _, l := range c.Literals {
		lits = append(lits, fmt.Sprintf("%s(%T)@%d:%d", l.Text, l.Value, l.Line, l.Column))
	}
	s := fmt.Sprintf("%s@%d:%d %s %s", c.PathString(), c.Line, c.Column, c.Op, strings.Join(lits, ", "))
	if c.Elem {
		s += " (items)"
	}
	if len(c.Defaults) > 0 {
		s += fmt.Sprintf(" ?? %v", c.Defaults)
	}
	return s
}

func TestComparisons(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src  string
		want []string
	}{
		{`context.judge.verdict == 'APPROVED'`, []string{`context.judge.verdict@1:15 == 'APPROVED'(string)@1:26`}},
		{`'APPROVED' != context.judge?.verdict`, []string{`context.judge.verdict@1:30 != 'APPROVED'(string)@1:1`}},
		{`context["judge"]["score"] == -3`, []string{`context.judge.score@1:17 == -3(int)@1:30`}},
		{`context.a.level in [1, 'x', context.b, 2.5]`, []string{`context.a.level@1:11 in 1(int)@1:21, 'x'(string)@1:24, 2.5(float64)@1:40`}},
		{`context.a.level not in ["x"]`, []string{`context.a.level@1:11 not in "x"(string)@1:25`}},
		{`!(context.a.b == true)`, []string{`context.a.b@1:13 != true(bool)@1:18`}},
		{`!!(context.a.b == true)`, []string{`context.a.b@1:14 == true(bool)@1:19`}},
		{`not not not ('x' in context.a.b)`, []string{`context.a.b@1:31 not in 'x'(string)@1:14 (items)`}},
		{`'bug' in context.triage.labels`, []string{`context.triage.labels@1:25 in 'bug'(string)@1:1 (items)`}},
		{`all(context.r, .verdict == 'OK')`, []string{`context.r[].verdict@1:17 == 'OK'(string)@1:28`}},
		{`any(context.r, all(.items, # == 1.0))`, []string{`context.r[].items[]@1:28 == 1.0(float64)@1:33`}},
		{`any(context.r, all(.items, #.n == 1))`, []string{`context.r[].items[].n@1:30 == 1(int)@1:35`}},
		{`context.fan[0].v == 'a' || context.fan[-1].v == 'b'`, []string{`context.fan[].v@1:16 == 'a'(string)@1:21`, `context.fan[].v@1:44 == 'b'(string)@1:49`}},
		{`(context.a.b ?? 'none') != 'none'`, []string{`context.a.b@1:12 != 'none'(string)@1:28 ?? [none]`}},
		{`context.a.b == nil`, []string{`context.a.b@1:11 == nil(<nil>)@1:16`}},
		{`output.verdict == 'X'`, []string{`output.verdict@1:8 == 'X'(string)@1:19`}},
		{"true &&\n  context.é.b == 'é'", []string{`context.é.b@2:13 == 'é'(string)@2:18`}},
		// Not comparisons of a read with a literal.
		{`len(context.a.b) == 3`, nil},
		{`context.a.b == context.c.d`, nil},
		{`'a' == 'b'`, nil},
		{`context.a.b > 3`, nil},
		{`history[-1].agent_name == 'x'`, nil},
		{`context.a[context.k] == 'x'`, nil},
		{`context.a.tags == ['x']`, nil},
		{`context.a.b in context.c.d`, nil},
		{`map(context.r, .v == 'a' && #index == 1)[0]`, []string{`context.r[].v@1:17 == 'a'(string)@1:22`}},
	} {
		var got []string
		for _, cmp := range comparisons(c.src) {
			got = append(got, comparisonString(cmp))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", c.src, got, c.want)
		}
	}
}

// A program keeps its comparisons; a template's are at their place in the
// template.
func TestProgramAndTemplateComparisons(t *testing.T) {
	t.Parallel()
	p := MustCompile(`context.judge.verdict == 'APPROVED'`)
	if len(p.Comparisons) != 1 || p.Comparisons[0].Literals[0].Value != "APPROVED" {
		t.Errorf("program's comparisons %+v", p.Comparisons)
	}
	tmpl, err := CompileTemplate("Verdict:\n  {{ context.judge.verdict == 'OK' ? 'yes' : 'no' }}", false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range tmpl.Names.Comparisons {
		got = append(got, comparisonString(c))
	}
	if want := `context.judge.verdict@2:20 == 'OK'(string)@2:31`; strings.Join(got, "\n") != want {
		t.Errorf("template's comparisons %q, want %q", got, want)
	}
}
