package llmorc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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
	var got []string
	for _, p := range res.Problems {
		got = append(got, p.String())
	}
	want := []string{
		"ensembles/pipeline.yaml:4: raw_output: not converted (ensemble has no such field)",
		`ensembles/pipeline.yaml:30: agent "summary": input_scope: not converted`,
		`ensembles/pipeline.yaml:36: agent "refine": loop: its output is the body's last agent's, not llm-orc's {output, iterations, terminated}`,
		`ensembles/pipeline.yaml:54: agent "digest": its dependency "summary" is a child ensemble: its response is the child's deliverable (its output: agent's output), not llm-orc's {ensemble, status, results, deliverable}; a script reading ["deliverable"] must read the response itself`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
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
