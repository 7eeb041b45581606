package responses

import (
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

const fakeKeyVar = "FAKE_ENSEMBLE_TEST_API_KEY"

// testEnsemble builds an ensemble by hand whose folder is testdata/, with a
// model profile naming fakeKeyVar in api_key_env.
func testEnsemble(t *testing.T, agents ...*ensemble.Agent) *ensemble.Ensemble {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	e := &ensemble.Ensemble{
		Path: filepath.Join(dir, "ensemble.yaml"),
		Dir:  dir,
		Name: "test",
		Models: map[string]*ensemble.ModelProfile{
			"efficient": {Name: "efficient", Provider: "openai", Model: "m", APIKeyEnv: fakeKeyVar},
			"local":     {Name: "local", Provider: "ollama", Model: "m"},
		},
		Agents: agents,
	}
	e.Index()
	return e
}

func scriptAgent(name, script string, params map[string]any) *ensemble.Agent {
	return &ensemble.Agent{Name: name, Kind: scriptKind{}, Spec: params}
}

func askAgent(name, question string, deps ...string) *ensemble.Agent {
	a := &ensemble.Agent{Name: name, Kind: askKind{}}
	for _, d := range deps {
		a.Dependencies = append(a.Dependencies, &ensemble.Dependency{AgentName: d, RequiresAll: true})
	}
	return a
}

// nested is n arrays, each in the next.
func nested(n int) any {
	var v any = []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}
