package conditions

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func testEnv() *Env {
	return &Env{
		Context: map[string]any{
			"reviewer":  map[string]any{"approved": false, "score": 7.5, "notes": []any{"a", "b"}},
			"analyzer":  map[string]any{"needs_clarification": true},
			"draft":     "Once upon a time",
			"flag":      true,
			"count":     3.0,
			"extracted": []any{map[string]any{"region": "EMEA"}},
		},
		TurnCount:  4,
		Executions: map[string]int{"writer": 2, "reviewer": 1},
		History: []any{
			map[string]any{"turn_number": 1, "agent_name": "writer", "execution": 1, "output_data": "d1", "error": nil, "execution_time": 0.1},
			map[string]any{"turn_number": 2, "agent_name": "reviewer", "execution": 1, "output_data": map[string]any{"approved": false}, "error": nil, "execution_time": 0.2},
			map[string]any{"turn_number": 3, "agent_name": "writer", "execution": 2, "output_data": nil, "error": "boom", "execution_time": 0.3},
		},
		Input: "Sales figures for Q3",
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want bool
	}{
		{"true", true},
		{"context.flag", true},
		{"context.flag == true", true},
		{"context.reviewer.approved", false},
		{"context.reviewer?.approved != true", true},
		{"context.missing?.approved != true", true},
		{"context.missing?.approved ?? false", false},
		{"context.missing?.deep?.deeper ?? true", true},
		{"context.analyzer?.needs_clarification == true", true},
		{"context.reviewer.score > 7", true},
		{"context.count == 3", true},
		{"len(context.reviewer.notes) == 2", true},
		{`context.extracted[0].region == "EMEA"`, true},
		{`context.draft contains "upon"`, true},
		{`context.draft matches "^Once"`, true},
		{`"reviewer" in context`, true},
		{`"nobody" in context`, false},
		{"turn_count == 4", true},
		{"turn_count >= 5", false},
		{"executions.writer >= 2", true},
		{"executions.reviewer >= 2", false},
		{"(executions.nobody ?? 0) == 0", true},
		{"executions.nobody == 0", true}, // missing map[string]int key is the zero value
		{`input startsWith "Sales"`, true},
		{"len(history) > 2", true},
		{"len(history) > 3", false},
		{`history[-1].agent_name == "writer"`, true},
		{`history[0].agent_name == "writer" && history[1].agent_name == "reviewer"`, true},
		{`history[-1].error != nil`, true},
		{`history[-2].output_data.approved == false`, true},
		{`count(history, .agent_name == "writer") == 2`, true},
		{`any(history, .error != nil)`, true},
		{`all(history, .execution_time < 1)`, true},
		{`len(filter(history, .agent_name == "reviewer")) == 1`, true},
		{`last(history).turn_number == 3`, true},
		{`"a" + "b" == "ab"`, true},
		{`context.draft + "!" == "Once upon a time!"`, true},
		{`upper(input) == "SALES FIGURES FOR Q3"`, true},
		{`len(split(input, " ")) == 4`, true},
		{`toJSON(context.reviewer.notes) contains "a"`, true},
		{`string(turn_count) == "4"`, true},
		{`join(["a", "b"], ",") == "a,b"`, true},
		{`replace("aaa", "a", "bb") == "bbbbbb"`, true},
		{`repeat("ab", 3) == "ababab"`, true},
		{`len(flatten([[1, 2], [3]])) == 3`, true},
		{`len(concat([1], [2, 3])) == 3`, true},
		{`sum(map(1..10, # * 2)) == 110`, true},
		{`reduce(1..5, #acc + #, 0) == 15`, true},
		{`let x = context.reviewer; x.score > 5 && !x.approved`, true},
		{`duration("1h") > duration("30m")`, true},
		{`fromJSON("{\"a\": 1}").a == 1`, true},
		{`turn_count > 2 ? context.flag : false`, true},
		{"context.missing", false}, // an untyped nil result counts as false
		{"context.reviewer.missing_key", false},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.Eval(env)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("true && ", MaxNodes) + "true"
	tests := []struct {
		src      string
		contains string
		line     int
		column   int
	}{
		{"", "empty condition", 0, 0},
		{"   ", "empty condition", 0, 0},
		{"approved == true", "unknown name approved", 1, 1},
		{"context.x == 1 && reviewer.ok", "unknown name reviewer", 1, 19},
		{"context.x ==\n  nope", "unknown name nope", 2, 3},
		{"os.Getenv(\"HOME\") != \"\"", "unknown name os", 1, 1},
		{`env("HOME") != ""`, "unknown name env", 1, 1},
		{`exec("rm -rf /") == nil`, "unknown name exec", 1, 1},
		{`system("ls")`, "unknown name system", 1, 1},
		{`readFile("/etc/passwd") != ""`, "unknown name readFile", 1, 1},
		{`$env.context != nil`, "unknown name $env", 1, 1},
		{`$env["context"] != nil`, "unknown name $env", 1, 1},
		{`now().Year() > 2000`, "now is not available in conditions", 1, 1},
		{`date("2024-01-01") != nil`, "date is not available", 1, 1},
		{`timezone("Europe/Paris") != nil`, "timezone is not available", 1, 1},
		{"__ensemble_step($env, true)", "unknown name", 1, 1},
		{"turn_count + 1", "must be boolean, but it is always a number", 0, 0},
		{`input`, "must be boolean, but it is always a string", 0, 0},
		{`history`, "must be boolean, but it is always a list", 0, 0},
		{`executions`, "must be boolean, but it is always an object", 0, 0},
		{`nil`, "must be boolean, but it is always nil", 0, 0},
		{`turn_count == "three"`, "mismatched types int and string", 1, 12},
		{`input > 3`, "invalid operation", 1, 7},
		{`len(turn_count) > 0`, "invalid argument for len", 1, 1},
		{`context.x ==`, "unexpected token EOF", 1, 12},
		{`context.x == (1`, "unexpected token EOF", 1, 15},
		{`context.a = true`, `unexpected token Operator("="); did you mean ==?`, 1, 11},
		{`context.a == null`, "unknown name null; did you mean nil? (JSON's null is nil here)", 1, 14},
		{`context.a == None`, "unknown name None; did you mean nil?", 1, 14},
		{`context.a == True`, "unknown name True; did you mean true?", 1, 14},
		{`"unterminated`, "literal not terminated", 1, 14},
		{big, "condition is too large", 0, 0},
		{"true || " + strings.Repeat("x", MaxLength), "condition is too long", 0, 0},
		{"true || " + strings.Repeat("x", 1000), "unknown name xxxx", 1, 9}, // message shortened

	}
	for _, tt := range tests {
		name := tt.src
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tt.src)
			if err == nil {
				t.Fatalf("compiled: %#v", p)
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *CompileError: %v", err, err)
			}
			if !strings.Contains(ce.Msg, tt.contains) {
				t.Errorf("Msg = %q, want it to contain %q", ce.Msg, tt.contains)
			}
			if strings.Contains(err.Error(), "\n") || len(err.Error()) > 400 {
				t.Errorf("error is not one short line: %q", err.Error())
			}
			if tt.line != 0 && (ce.Line != tt.line || ce.Column != tt.column) {
				t.Errorf("position = %d:%d, want %d:%d", ce.Line, ce.Column, tt.line, tt.column)
			}
		})
	}
}

func TestRuntimeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src      string
		contains string
		is       error
	}{
		{"context.draft.approved == true", "cannot fetch approved from a string or a list (column 15 of the condition)", nil}, // field of a string
		{"context.reviewer.notes?.first == 1", "cannot fetch first from a string or a list (column 25 of the condition)", nil},
		{"context.missing.approved == true", "cannot fetch approved from nil (a missing value: write ?. and ?? where it may be missing) (column 17 of the condition)", nil},
		{"context.count.x == 1", "cannot fetch x from number (column 15 of the condition)", nil},
		{"turn_count > 0 &&\n  context.draft.words > 2", "cannot fetch words from a string or a list", nil},
		// Of unknown type at compile time, not boolean at run time: said in
		// words, never as Go types such as []interface {}.
		{"context.draft", "condition must be boolean, but it returned a string", nil},
		{"context.extracted", "condition must be boolean, but it returned a list", nil},
		{"context.reviewer", "condition must be boolean, but it returned an object", nil},
		{"context.count", "condition must be boolean, but it returned a number", nil},
		{"context.reviewer.notes + 1", "invalid operation: list + int", nil},
		{"1 % (turn_count - 4) == 0", "", nil}, // integer division by zero
		{"history[10].agent_name == \"x\"", "out of range", nil},
		{`fromJSON(context.draft).x == 1`, "", nil},
		{`int(context.draft) > 1`, "", nil},
		// memory: expr's own budget
		{`len(1..100000000) > 0`, "memory budget exceeded", ErrMemoryBudget},
		{`len(map(1..2000000, #)) > 0`, "memory budget exceeded", ErrMemoryBudget},
		// memory: byte meter, before allocation
		{`repeat("x", 1000000000) != ""`, "memory budget exceeded", ErrMemoryBudget},
		{`repeat(repeat("x", 1000000), 1000000) != ""`, "memory budget exceeded", ErrMemoryBudget},
		{`replace(repeat("x", 100000), "", repeat("y", 100000)) != ""`, "memory budget exceeded", ErrMemoryBudget},
		{`join(map(1..1000, repeat("x", 100000))) != ""`, "memory budget exceeded", ErrMemoryBudget},
		{`toJSON(map(1..1000, repeat("x", 100000))) != ""`, "memory budget exceeded", ErrMemoryBudget},
		{`string(map(1..1000, repeat("x", 100000))) != ""`, "memory budget exceeded", ErrMemoryBudget},
		{`let a = map(1..1000, 1); let b = flatten(map(1..1000, a)); len(flatten(map(1..1000, b))) > 0`, "memory budget exceeded", ErrMemoryBudget},
		// memory: exponential growth through string concatenation
		{`reduce(1..100, #acc + #acc, "x") != ""`, "memory budget exceeded", ErrMemoryBudget},
		{`let a = repeat("x", 1000000); let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; let g = f + f; len(g) > 0`, "memory budget exceeded", ErrMemoryBudget},
		{`len(map(1..1000, upper(repeat("x", 100000)))) > 0`, "memory budget exceeded", ErrMemoryBudget},
		// work: predicate bodies
		{`let r = 1..2000; all(r, all(r, true))`, "step budget exceeded", ErrStepBudget},
		{`let r = 1..200; any(r, any(r, any(r, false)))`, "step budget exceeded", ErrStepBudget},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.Eval(env)
			if err == nil {
				t.Fatalf("Eval = %v, want an error", got)
			}
			if got {
				t.Errorf("Eval returned true with an error")
			}
			var re *RuntimeError
			if !errors.As(err, &re) {
				t.Errorf("error %T is not a *RuntimeError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err.Error())
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
		})
	}
}

// Deep nesting within the length limit compiles and runs.
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	n := MaxLength/2 - 10
	p, err := Compile(strings.Repeat("(", n) + "true" + strings.Repeat(")", n))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Eval(&Env{}); !ok || err != nil {
		t.Fatal(ok, err)
	}
}

func TestEvalNilAndEmpty(t *testing.T) {
	t.Parallel()
	var p *Program
	if ok, err := p.Eval(testEnv()); !ok || err != nil {
		t.Fatalf("nil program: %v %v, want true", ok, err)
	}
	q := MustCompile("len(history) == 0 && (context.x ?? true) && turn_count == 0")
	if ok, err := q.Eval(nil); !ok || err != nil {
		t.Fatalf("nil env: %v %v, want true", ok, err)
	}
	if ok, err := q.Eval(&Env{}); !ok || err != nil {
		t.Fatalf("zero env: %v %v, want true", ok, err)
	}
}

// The budgets are per evaluation: a failed evaluation leaves nothing behind
// for the next one on the same pooled runner.
func TestBudgetsArePerEvaluation(t *testing.T) {
	t.Parallel()
	heavy := MustCompile(`len(repeat("x", 20000000)) > 0`) // 20 MB of the 32 MB budget
	for i := 0; i < 5; i++ {
		if ok, err := heavy.Eval(&Env{}); !ok || err != nil {
			t.Fatalf("evaluation %d: %v %v", i, ok, err)
		}
	}
}

func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	p := MustCompile(`context.reviewer?.approved != true && len(history) == 3 && executions.writer >= 2 && any(history, .agent_name == "reviewer")`)
	bad := MustCompile(`context.draft.approved == true`)
	env := testEnv()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if ok, err := p.Eval(env); !ok || err != nil {
					errs <- fmt.Errorf("good: %v %v", ok, err)
					return
				}
				if ok, err := bad.Eval(env); ok || err == nil {
					errs <- fmt.Errorf("bad: %v %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Eval does not modify the environment it is given.
func TestEvalDoesNotModifyEnv(t *testing.T) {
	t.Parallel()
	env := testEnv()
	p := MustCompile(`len(sort(keys(context))) > 0 && len(reverse(history)) == 3`)
	before := fmt.Sprint(env.Context, env.History)
	if ok, err := p.Eval(env); !ok || err != nil {
		t.Fatalf("%v %v", ok, err)
	}
	if after := fmt.Sprint(env.Context, env.History); after != before {
		t.Fatalf("env changed:\n%s\n%s", before, after)
	}
}

func BenchmarkEval(b *testing.B) {
	env := testEnv()
	for _, src := range []string{
		"context.reviewer?.approved != true",
		"executions.writer >= 2",
		`len(history) > 2 && history[-1].agent_name == "writer"`,
		`context.draft + "!" != ""`,
	} {
		p := MustCompile(src)
		b.Run(src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Eval(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEvalParallel(b *testing.B) {
	env := testEnv()
	p := MustCompile("context.analyzer?.needs_clarification == true")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Eval(env); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestContextKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []ContextKey
	}{
		{"turn_count > 1", nil},
		{"context.fetch.items != nil", []ContextKey{{"fetch", 1, 9}}},
		{`context?.a?.b == 1 || context["b"] == 2`, []ContextKey{{"a", 1, 10}, {"b", 1, 31}}},
		{"len(context) > 0 &&\n  all(context.list ?? [], # != nil)", []ContextKey{{"list", 2, 15}}},
		{`context[input] == nil`, nil}, // not a constant: unknown at load
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			if got := MustCompile(tt.src).ContextKeys; !slices.Equal(got, tt.want) {
				t.Errorf("ContextKeys = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExecutionKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []ContextKey
	}{
		{"turn_count > 1 && context.writer != nil", nil},
		{"executions.writer < 5", []ContextKey{{"writer", 1, 12}}},
		{`executions["a"] + executions.b > 2`, []ContextKey{{"a", 1, 12}, {"b", 1, 30}}},
		{`executions[input] == 0`, nil}, // not a constant: unknown at load
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			p := MustCompile(tt.src)
			if got := p.ExecutionKeys; !slices.Equal(got, tt.want) {
				t.Errorf("ExecutionKeys = %v, want %v", got, tt.want)
			}
			if len(p.ContextKeys) > 0 && tt.want != nil {
				t.Errorf("ContextKeys = %v: executions are not context", p.ContextKeys)
			}
		})
	}
}

// expensive is a condition within every budget that takes minutes of CPU:
// 900,000 scans of a 2 MB string.
const expensive = `let s = repeat("a", 2000000); any(1..1000, any(1..900, s contains "b"))`

// expiresAfter is a context whose Err is DeadlineExceeded after it has
// been checked `checks` times.
type expiresAfter struct {
	context.Context
	mu     sync.Mutex
	checks int
}

func (c *expiresAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checks <= 0 {
		return context.DeadlineExceeded
	}
	c.checks--
	return nil
}

// An interrupted evaluation stops at the next check of its context and
// returns an error wrapping the context's error.
func TestEvalContextInterrupts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout time.Duration // 0: cancelled before; < 0: expires at its second check
		src     string
		want    error
	}{
		{"cancelled before", 0, "true", context.Canceled},
		{"deadline during predicates", 100 * time.Millisecond, expensive, context.DeadlineExceeded},
		// A context that expires at its second check, the first inside the
		// evaluation: whether the step budget or a clock ran out first
		// would otherwise be a race on a busy machine.
		{"deadline in a builtin", -1, `len(string(groupBy(1..100000, #))) > 0`, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := MustCompile(tc.src)
			ctx, cancel := context.WithCancel(context.Background())
			switch {
			case tc.timeout > 0:
				ctx, cancel = context.WithTimeout(context.Background(), tc.timeout)
			case tc.timeout < 0:
				ctx = &expiresAfter{Context: ctx, checks: 1}
			}
			defer cancel()
			if tc.timeout == 0 {
				cancel()
			}
			done := make(chan error, 1)
			go func() {
				ok, err := p.EvalContext(ctx, &Env{})
				if ok {
					err = errors.New("true")
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("error = %v, want %v", err, tc.want)
				}
			case <-time.After(30 * time.Second): // uninterrupted, it takes minutes
				t.Fatal("the evaluation was not interrupted")
			}
		})
	}
}

// Printing a value costs work: printing a huge map exceeds the step budget
// before fmt spends seconds sorting its keys.
// Lists and maps compare in depth with numbers by value, as numbers do at
// the top: a JSON output's 1.0 is the literal 1 (docs/semantics.md#conditions).
func TestEqualInDepth(t *testing.T) {
	t.Parallel()
	env := &Env{
		Context: map[string]any{
			"a":     map[string]any{"n": 1.0, "tags": []any{"x", 2.0}, "sub": map[string]any{"ok": true, "none": nil}},
			"list":  []any{1.0, 2.0},
			"items": []any{map[string]any{"n": 1.0}, map[string]any{"n": 2.0}},
			"same":  map[string]any{"n": 1.0, "tags": []any{"x", 2.0}, "sub": map[string]any{"ok": true, "none": nil}},
		},
		Executions: map[string]int{"writer": 2},
	}
	for src, want := range map[string]bool{
		"context.a.n == 1": true,
		"context.a == {'n': 1, 'tags': ['x', 2], 'sub': {'ok': true, 'none': nil}}": true,
		"{'n': 1, 'tags': ['x', 2], 'sub': {'ok': true, 'none': nil}} == context.a": true,
		"context.a != {'n': 1, 'tags': ['x', 2], 'sub': {'ok': true, 'none': nil}}": false,
		"context.a == {'n': 1, 'tags': ['x', 2], 'sub': {'ok': true}}":              false, // a missing key is not a null
		"context.a == {'n': 2, 'tags': ['x', 2], 'sub': {'ok': true, 'none': nil}}": false,
		"context.a == context.same":                   true,
		"context.a.tags == ['x', 2]":                  true,
		"context.a.tags == ['x', 2, 3]":               false,
		"context.a.tags == ['x', '2']":                false,
		"context.list == [1, 2]":                      true,
		"[1, 2] == context.list":                      true,
		"context.list != [2, 1]":                      true,
		"context.items == [{'n': 1}, {'n': 2}]":       true,
		"{'n': 1} in context.items":                   true,
		"{'n': 3} in context.items":                   false,
		"{'n': 3} not in context.items":               true,
		"[1, 2] in [context.list]":                    true,
		"2 in context.list":                           true,
		"'a' in context":                              true,
		"'zz' in context":                             false,
		"context.a == nil":                            false,
		"context.missing == nil":                      true,
		"context.a == context.list":                   false,
		"context.a == 'x'":                            false,
		"any(context.items, # == {'n': 2})":           true,
		"filter(context.items, .n > 1) == [{'n': 2}]": true,
	} {
		got, err := MustCompile(src).Eval(env)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", src, got, err, want)
		}
	}
	// A select and a fan-out's list compile the same way.
	s := MustCompileSelect(t, "output == {'n': 1}")
	if got, err := s.EvalContext(context.Background(), env, map[string]any{"n": 1.0}); got != true || err != nil {
		t.Errorf("select = %v, %v; want true", got, err)
	}
	l, err := CompileList("filter(context.items, # != {'n': 1})")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := l.EvalContext(context.Background(), env); err != nil || len(got) != 1 {
		t.Errorf("fan-out list = %v, %v; want one item", got, err)
	}
}

// Comparing in depth is work: one unit per value compared.
func TestEqualCostsSteps(t *testing.T) {
	t.Parallel()
	big := make([]any, 600_000)
	for i := range big {
		big[i] = float64(i)
	}
	c := slices.Clone(big)
	c[len(c)-1] = -1.0
	env := &Env{Context: map[string]any{"a": big, "b": slices.Clone(big), "c": c}}
	if ok, err := MustCompile("context.a == context.b").Eval(env); !ok || err != nil {
		t.Fatalf("one comparison = %v, %v; want true", ok, err)
	}
	p := MustCompile("context.a == context.b && context.b == context.a")
	if _, err := p.Eval(env); !errors.Is(err, ErrStepBudget) {
		t.Fatalf("error = %v, want the step budget", err)
	}
	if _, err := MustCompile("context.a in [context.c, context.c]").Eval(env); !errors.Is(err, ErrStepBudget) {
		t.Fatalf("in: error = %v, want the step budget", err)
	}
}

func TestPrintingCostsSteps(t *testing.T) {
	t.Parallel()
	p := MustCompile(`len(string(groupBy(1..400000, #))) > 0`)
	if _, err := p.Eval(&Env{}); !errors.Is(err, ErrStepBudget) {
		t.Fatalf("error = %v, want the step budget", err)
	}
}

func TestUsesHistory(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]bool{
		"len(history) > 2":                          true,
		"any(history, .agent_name == 'a')":          true,
		"context.history == 1":                      false,
		"turn_count > 1 && executions.a == 1":       false,
		"context['history'] != nil || input == 'x'": false,
	} {
		if got := MustCompile(src).UsesHistory; got != want {
			t.Errorf("%s: UsesHistory = %v, want %v", src, got, want)
		}
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	out := map[string]any{"topics": []any{"a", "b"}, "score": 0.5}
	env := &Env{Context: map[string]any{"x": 1.0}, TurnCount: 3, Executions: map[string]int{}, Input: "in"}
	for src, want := range map[string]any{
		"output.topics":      []any{"a", "b"},
		"output.score > 0.4": true,
		"{'n': len(output.topics), 't': turn_count}": map[string]any{"n": 2, "t": 3},
		"output":    out,
		"context.x": 1.0,
	} {
		s, err := CompileSelect(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := s.EvalContext(context.Background(), env, out)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, %v; want %#v", src, got, err, want)
		}
	}
	if _, err := Compile("output.topics != nil"); err == nil {
		t.Error("a condition may not name output")
	}
	if _, err := CompileSelect("output.("); err == nil || !strings.Contains(err.Error(), "of the select") {
		t.Errorf("compile error = %v, want one about the select", err)
	}
	s := MustCompileSelect(t, "output.missing.deeper")
	if _, err := s.EvalContext(context.Background(), env, out); err == nil || !strings.Contains(err.Error(), "select") {
		t.Errorf("run-time error = %v", err)
	}
	s = MustCompileSelect(t, "repeat('x', 1000000000)")
	if _, err := s.EvalContext(context.Background(), env, out); err == nil {
		t.Error("the sandbox's limits do not apply to a select")
	}
}

func MustCompileSelect(t *testing.T, src string) *Select {
	t.Helper()
	s, err := CompileSelect(src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A condition lists the fields it reads below context keys, and a select
// those it reads below output, each at its last field.
func TestContextAndOutputFields(t *testing.T) {
	t.Parallel()
	p := MustCompile(`context.r?.a.b == 1 && context["s"].c != nil && len(context.t.items[0]) > 0 && context.u != nil`)
	got := fmt.Sprint(p.ContextFields)
	if want := "[{[r a] 1 12} {[r a b] 1 14} {[s c] 1 37} {[t items] 1 63}]"; got != want {
		t.Errorf("ContextFields %s, want %s", got, want)
	}
	s, err := CompileSelect(`{"x": output.a.b, "y": output?.c, "z": context.k.f}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(s.OutputFields), "[{[a] 1 14} {[a b] 1 16} {[c] 1 32}]"; got != want {
		t.Errorf("OutputFields %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(s.ContextFields), "[{[k f] 1 50}]"; got != want {
		t.Errorf("select ContextFields %s, want %s", got, want)
	}
}

// expr v1.17.8 compiles findLast and findLastIndex (and last(filter(…)) and
// filter(…)[-1], which its optimizer turns into findLast) into a loop that
// leaves values on the stack: an operand pushed before them was read wrong
// (expr-lang/expr issue 950). The guard rewrites them.
func TestFindLast(t *testing.T) {
	t.Parallel()
	env := &Env{History: []any{
		map[string]any{"agent_name": "s", "n": 1.0},
		map[string]any{"agent_name": "t", "n": 2.0},
	}}
	for _, src := range []string{
		"last(filter(history, true)).agent_name + 'x' == 'tx'",
		"last(filter(history, .agent_name == 's')) == {'agent_name': 's', 'n': 1}",
		"upper(last(filter(history, true)).agent_name) == 'T'",
		"upper(findLast(history, .agent_name == 's').agent_name) == 'S'",
		"upper(filter(history, .agent_name == 's')[-1].agent_name) == 'S'",
		"'x' + string(findLastIndex(history, .agent_name == 's')) == 'x0'",
		"'x' + string(findLastIndex(history, .agent_name == 'zz')) == 'x-1'",
		"findLast(history, .agent_name == 'zz') == nil",
		"last(filter(history, .agent_name == 'zz')) == nil",
		"{'r': findLast([1, 2, 3, 4, 5], # > 3)}.r == 5",
		"{'r': findLastIndex([1, 2, 3, 4, 5], # > 3)}.r == 4",
		"{'r': last(filter([1, 2, 3, 4, 5], # > 3))}.r == 5",
		"{'r': filter([1, 2, 3, 4, 5], # > 3)[-1]}.r == 5",
		"{'r': last(map(filter(history, .n > 0), .n))}.r == 2",
	} {
		if got, err := MustCompile(src).Eval(env); !got || err != nil {
			t.Errorf("%s = %v, %v; want true", src, got, err)
		}
	}
	if _, err := MustCompile("filter(history, .n > 5)[-1] == nil").Eval(env); err == nil {
		t.Error("filter(…)[-1] of an empty list did not fail")
	}
}
