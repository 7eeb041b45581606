package llmorc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata project holds each construct: every one is converted, and
// what is not is listed with its file and line.
func TestImportProject(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	res, err := Import(Options{Dir: "testdata/project", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) == 0 {
		t.Error("no problems listed (testdata/golden/project/problems.txt has them all)")
	}
	b, err := os.ReadFile(filepath.Join(out, "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"protocol: llm-orc",                                      // script agents
		"over: context.classifier.topics",                        // fan_out with input_key
		"select: output.topics",                                  // input_key
		"when: context.gate?.ok == true",                         // when
		"ensemble: summarize.yaml",                               // ensemble:
		`"on": context.gate?.route`,                              // dispatch
		`until: output?.done not in [nil, false, 0, "", [], {}]`, // loop
		"carry: output?.next",                                    // loop carry
		"on_exhausted: succeed",                                  // llm-orc ends a loop at max_iterations
		"fallback:\n      - cheap",                               // fallback_model_profile on the agent
		"input: Rust is fast. Go is simple. Is Python slow?",     // default_task
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("pipeline.yaml lacks %q:\n%s", want, b)
		}
	}
	b, _ = os.ReadFile(filepath.Join(out, "premium.yaml"))
	for _, want := range []string{"provider: anthropic", "api_key_env: ANTHROPIC_API_KEY", "input_per_million: 10", "fallback:\n      - local"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("premium.yaml lacks %q:\n%s", want, b)
		}
	}
	// nothing is overwritten
	if _, err := Import(Options{Dir: "testdata/project", Out: out}); !errors.As(err, new(*InputError)) {
		t.Errorf("a second import into the same folder: %v", err)
	}
}

// A provider without an equivalent is listed at its profile's line.
func TestProfileWithoutEquivalent(t *testing.T) {
	t.Parallel()
	im := &importer{root: "testdata/project/.llm-orc", res: &Result{}, profiles: map[string]*profile{}}
	if err := im.readProfiles(); err != nil {
		t.Fatal(err)
	}
	if p := im.profileOf(im.profiles["pro-max"]); p != nil {
		t.Errorf("pro-max converted: %+v", p)
	}
	if len(im.res.Problems) != 1 || !strings.HasPrefix(im.res.Problems[0].String(), `config.yaml:16: profile "pro-max": provider "anthropic-claude-pro-max": an OAuth login, not converted`) {
		t.Errorf("problems %v", im.res.Problems)
	}
}

func TestNotAProject(t *testing.T) {
	t.Parallel()
	if _, err := Import(Options{Dir: t.TempDir(), Out: t.TempDir()}); !errors.As(err, new(*InputError)) {
		t.Errorf("error %v", err)
	}
}

// An unknown provider falls back as llm-orc's model factory does: to
// default_models' test profile only when that is an ollama one, else to
// its fallback model (llama3) on its fallback provider (ollama).
func TestUnknownProviderFallsBackAsLLMOrc(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ defaults, model, provider string }{
		{"    test: local\n", "qwen3", "ollama"},
		{"    test: cloud\n", "llama3", "ollama"},
		{"    test: cloud\n    fallback: phi4\n", "phi4", "ollama"},
		{"", "llama3", "ollama"},
	} {
		dir := t.TempDir()
		cfg := "project:\n  default_models:\n" + tc.defaults + `model_profiles:
  local: {provider: ollama, model: qwen3}
  cloud: {provider: anthropic-api, model: claude-x}
  odd: {provider: mystery-cloud, model: m1}
`
		if tc.defaults == "" {
			cfg = strings.Replace(cfg, "project:\n  default_models:\n", "", 1)
		}
		if err := os.MkdirAll(filepath.Join(dir, ".llm-orc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".llm-orc", "config.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		im := &importer{root: filepath.Join(dir, ".llm-orc"), res: &Result{}, profiles: map[string]*profile{}}
		if err := im.readProfiles(); err != nil {
			t.Fatal(err)
		}
		p := im.profileOf(im.profiles["odd"])
		if p == nil || p.Model != tc.model || p.Provider != tc.provider {
			t.Errorf("%q: %+v, want %s on %s; problems %v", tc.defaults, p, tc.model, tc.provider, im.res.Problems)
		}
	}
}
