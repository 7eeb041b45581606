package jsonvalue

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

type point struct {
	X int `json:"x"`
}

func TestNormalizeDecodePlain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        any
		normalize any
		plain     any
		err       bool
	}{
		{"string", "a", "a", "a", false},
		{"int", 3, 3.0, 3.0, false},
		{"struct", point{X: 1}, map[string]any{"x": 1.0}, map[string]any{"x": 1.0}, false},
		{"typed map", map[string]int{"a": 1}, map[string]any{"a": 1.0}, map[string]any{"a": 1.0}, false},
		// A decoded map is returned as it is by Plain, round-tripped by Normalize.
		{"map with int", map[string]any{"n": 1}, map[string]any{"n": 1.0}, map[string]any{"n": 1}, false},
		{"no JSON form", make(chan int), nil, nil, true},
		{"NaN", math.NaN(), nil, math.NaN(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decode(tt.in)
			if (err != nil) != tt.err {
				t.Fatalf("Decode err = %v", err)
			}
			if !tt.err && !reflect.DeepEqual(got, tt.normalize) {
				t.Fatalf("Decode = %#v, want %#v", got, tt.normalize)
			}
			n := Normalize(tt.in)
			if tt.err {
				// Kept as it is.
				if reflect.TypeOf(n) != reflect.TypeOf(tt.in) {
					t.Fatalf("Normalize = %#v, want the value itself", n)
				}
			} else if !reflect.DeepEqual(n, tt.normalize) {
				t.Fatalf("Normalize = %#v, want %#v", n, tt.normalize)
			}
			p := Plain(tt.in)
			if f, ok := tt.plain.(float64); ok && math.IsNaN(f) {
				if pf, ok := p.(float64); !ok || !math.IsNaN(pf) {
					t.Fatalf("Plain = %#v, want NaN", p)
				}
				return
			}
			if !reflect.DeepEqual(p, tt.plain) {
				t.Fatalf("Plain = %#v, want %#v", p, tt.plain)
			}
		})
	}
}

func TestCopyIsDeep(t *testing.T) {
	t.Parallel()
	v := map[string]any{"list": []any{map[string]any{"a": "b"}, 1.0}, "s": "x"}
	c := Copy(v).(map[string]any)
	c["list"].([]any)[0].(map[string]any)["a"] = "changed"
	c["s"] = "changed"
	if v["list"].([]any)[0].(map[string]any)["a"] != "b" || v["s"] != "x" {
		t.Fatalf("the original changed: %v", v)
	}
	if got := Copy("x"); got != "x" {
		t.Fatalf("Copy(scalar) = %v", got)
	}
}

func TestCompactAndText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in            any
		compact, text string
	}{
		{"a<b>&c", `"a<b>&c"`, "a<b>&c"},
		{map[string]any{"b": 1.0, "a": []any{true, nil}}, `{"a":[true,null],"b":1}`, `{"a":[true,null],"b":1}`},
	}
	for _, tt := range tests {
		if got := Compact(tt.in); got != tt.compact {
			t.Errorf("Compact(%v) = %s, want %s", tt.in, got, tt.compact)
		}
		if got := Text(tt.in); got != tt.text {
			t.Errorf("Text(%v) = %s, want %s", tt.in, got, tt.text)
		}
	}
	if got := Compact(math.Inf(1)); got != "+Inf" {
		t.Errorf("Compact(+Inf) = %s, want fmt's +Inf", got)
	}
	// Compact is what encoding/json writes, less the newline and escapes.
	b, _ := json.Marshal(map[string]any{"k": []any{1.5, "x"}})
	if got := Compact(map[string]any{"k": []any{1.5, "x"}}); got != string(b) {
		t.Errorf("Compact = %s, json.Marshal = %s", got, b)
	}
}

func TestFromYAML(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"m":    map[any]any{1: "one", true: []any{map[any]any{"k": 2.0}}},
		"list": []any{1.5, "x"},
	}
	got, ok := FromYAML(in)
	want := map[string]any{
		"m":    map[string]any{"1": "one", "true": []any{map[string]any{"k": 2.0}}},
		"list": []any{1.5, "x"},
	}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("FromYAML = %#v, %v", got, ok)
	}
	for _, bad := range []any{math.Inf(-1), []any{math.NaN()}, map[any]any{"x": map[string]any{"y": math.Inf(1)}}} {
		if _, ok := FromYAML(bad); ok {
			t.Errorf("FromYAML(%v) reports finite numbers", bad)
		}
	}
}
