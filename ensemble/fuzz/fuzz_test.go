// Package fuzz holds the loader's fuzz target, apart from the ensemble
// package's other tests: those load with every built-in kind, and so link
// the model providers' SDKs, which the fuzzer would compile again with its
// coverage instrumentation (minutes of a cold make test). The kinds here
// link no SDK; the LLM kind is stood in for by its fields' decoding.
package fuzz

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	askkind "github.com/ensemble-run/ensemble/kinds/ask"
	nested "github.com/ensemble-run/ensemble/kinds/ensemble"
	"github.com/ensemble-run/ensemble/kinds/script"
)

// FuzzLoadBytes checks that no input makes the loader panic, and that it
// returns either an Ensemble or a non-empty *ErrorList of one-line messages.
func FuzzLoadBytes(f *testing.F) {
	seeds, _ := filepath.Glob("../testdata/*.yaml")
	seeds = append(seeds, "../testdata/iterative-analysis/ensemble.yaml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := LoadBytes("testdata/fuzz.yaml", data, LoadOptions{Kinds: fuzzKinds, LookupEnv: func(string) (string, bool) { return "", false }})
		if (e == nil) == (err == nil) {
			t.Fatalf("Ensemble %v with error %v", e, err)
		}
		if err == nil {
			return
		}
		var list *ErrorList
		if !errors.As(err, &list) || len(*list) == 0 {
			t.Fatalf("error %T %v, want a non-empty *ErrorList", err, err)
		}
		for i, e := range *list {
			if i == MaxErrors && e.Line == 0 && strings.HasPrefix(e.Message, "…and ") {
				continue // the count of the errors left out
			}
			if e.Line < 1 || e.Column < 1 || strings.Contains(e.Message, "\n") {
				t.Errorf("bad error %q", e.Error())
			}
		}
	})
}

// fuzzKinds are the built-in kinds that link no model SDK, and llmFields
// for the LLM kind.
var fuzzKinds = []Kind{script.Kind{}, llmFields{}, askkind.Kind{}, nested.Kind{}, nested.Dispatch{}}

// llmFields decodes the LLM kind's fields as kinds/llm does, through the
// loader's field decoders (which are what the fuzzer is after), without
// the package that brings the providers.
type llmFields struct{}

func (llmFields) String() string { return "llm" }
func (llmFields) Key() string    { return "model_profile" }
func (llmFields) Fields() []string {
	return []string{"prompt", "output_format", "tools", "max_steps", "tool_parallel", "context_window", "output_repairs"}
}
func (llmFields) Decode(f *Fields, a *Agent) {
	if f.Has("model_profile") {
		f.Require("model_profile", f.ModelProfile("model_profile") == "")
	}
	_ = f.String("prompt")
	if v := f.String("output_format"); f.Has("output_format") && v != "text" && v != "json" {
		f.Bad("output_format", "must be text or json, got %q", v)
	}
	_ = f.Tools("tools")
	_ = f.Positive("max_steps")
	_ = f.Positive("tool_parallel")
	_ = f.ContextWindow("context_window")
	_ = f.Positive("output_repairs")
}
