package ensemble_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// wideSchemaFile is an ensemble whose one llm agent has an output_schema of n
// properties, each {type: string}, in flow style on one line each.
func wideSchemaFile(n int) []byte {
	var b strings.Builder
	b.WriteString("name: wide\nmodels:\n  m: {provider: ollama, model: llama3.2}\nagents:\n  - name: a\n    model_profile: m\n    output_schema:\n      type: object\n      properties:\n")
	for i := range n {
		fmt.Fprintf(&b, "        p%d: {type: string}\n", i)
	}
	return []byte(b.String())
}

// deepSchemaFile is an ensemble whose output_schema nests n objects, each
// the one property x of the one before, in flow style.
func deepSchemaFile(n int) []byte {
	var b strings.Builder
	b.WriteString("name: deep\nmodels:\n  m: {provider: ollama, model: llama3.2}\nagents:\n  - name: a\n    model_profile: m\n    output_schema: ")
	for range n {
		b.WriteString("{type: object, properties: {x: ")
	}
	b.WriteString("{type: string}")
	for range n {
		b.WriteString("}}")
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// BenchmarkLoadWideSchema loads an output_schema of 5,000 properties and
// one of MaxSchemaNodes, the largest allowed (docs/performance.md#loading).
func BenchmarkLoadWideSchema(b *testing.B) {
	for _, n := range []int{5000, MaxSchemaNodes - 2} {
		data := wideSchemaFile(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LoadBytes("wide.yaml", data, LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadDeepSchema loads the deepest output_schema allowed, and
// refuses one of 3,000 levels.
func BenchmarkLoadDeepSchema(b *testing.B) {
	for _, n := range []int{MaxSchemaDepth/2 - 1, 3000} {
		data := deepSchemaFile(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LoadBytes("deep.yaml", data, LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); (err != nil) != (n > MaxSchemaDepth) {
					b.Fatal(err)
				}
			}
		})
	}
}

// A schema nested 3,000 levels deep is refused at once, naming the agent
// and the line; one within MaxSchemaDepth loads and validates.
func TestDeepSchemaRefused(t *testing.T) {
	t.Parallel()
	_, err := LoadBytes("deep.yaml", deepSchemaFile(3000), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "deep.yaml",
		`7:20: agent "a": output_schema nests deeper than 64 levels of objects and lists; flatten it, or describe the deep part as {type: object}`)

	// {type: object, properties: {x: ...}} is two levels a property.
	e, err := LoadBytes("deep.yaml", deepSchemaFile(MaxSchemaDepth/2-1), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	var v any = "leaf"
	for range MaxSchemaDepth/2 - 1 {
		v = map[string]any{"x": v}
	}
	if err := e.Agent("a").OutputSchema.Validate(v); err != nil {
		t.Error(err)
	}
	if _, err := CompileOutputSchema(map[string]any{"x": deepValue(MaxSchemaDepth)}); err == nil {
		t.Error("CompileOutputSchema took a schema deeper than MaxSchemaDepth")
	}
}

func deepValue(n int) any {
	var v any = "leaf"
	for range n {
		v = []any{v}
	}
	return v
}

// A wide schema loads, and a key written twice is still refused; one of
// 50,000 properties is refused at once, before it is compiled.
func TestWideSchemaLoads(t *testing.T) {
	t.Parallel()
	_, err := LoadBytes("wide.yaml", wideSchemaFile(50000), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "wide.yaml",
		`8:7: agent "a": output_schema holds more than 10000 objects and lists (subschemas); split the output, or describe parts of it as {type: object}`)
	if _, err := CompileOutputSchema(map[string]any{"x": make([]any, 0), "p": wideValue(MaxSchemaNodes)}); err == nil {
		t.Error("CompileOutputSchema took a schema past MaxSchemaNodes")
	}

	e, err := LoadBytes("wide.yaml", wideSchemaFile(5000), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	props := e.Agent("a").OutputSchema.Doc["properties"].(map[string]any)
	if len(props) != 5000 {
		t.Errorf("%d properties, want 5000", len(props))
	}
	if err := e.Agent("a").OutputSchema.Validate(map[string]any{"p4999": 1}); err == nil {
		t.Error("p4999: 1 validated against {type: string}")
	}
	data := append(wideSchemaFile(3), "        p1: {type: number}\n"...)
	_, err = LoadBytes("wide.yaml", data, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err == nil || !strings.Contains(err.Error(), `mapping key "p1" already defined at line 11`) {
		t.Errorf("duplicate key: %v", err)
	}
}

func wideValue(n int) any {
	v := make([]any, n)
	for i := range v {
		v[i] = map[string]any{}
	}
	return v
}
