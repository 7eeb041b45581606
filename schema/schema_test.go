package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
)

func noEnv(string) (string, bool) { return "", false }

func TestSchemaIsValidJSONSchema(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(JSON, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" || doc["$id"] != ID {
		t.Fatalf("$schema %v, $id %v", doc["$schema"], doc["$id"])
	}
	if _, err := Compiled(); err != nil { // checked against the draft's metaschema
		t.Fatal(err)
	}
}

func TestEveryExampleIsValid(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*/ensemble.yaml")
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateYAML(data); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestWhatTheLoaderAcceptsIsValid: no file of the repository that loads is
// flagged by the schema (an editor must not nag about a good file).
func TestWhatTheLoaderAcceptsIsValid(t *testing.T) {
	// triggers: appear in no file of the repository but docs
	triggers := "name: x\ntriggers:\n  - cron: \"0 9 * * 1-5\"\n    timezone: Europe/Berlin\n    input: hi\n" +
		"  - webhook: {path: /hooks/pr, secret_env: S, input: \"{{ body.x }}\"}\nagents: [{name: a, ask: q}]\n"
	if _, err := ensemble.LoadBytes("t.yaml", []byte(triggers), kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: noEnv})); err != nil {
		t.Fatal(err)
	}
	if err := ValidateYAML([]byte(triggers)); err != nil {
		t.Errorf("triggers load, but the schema rejects them: %v", err)
	}
	loaded := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		if _, err := ensemble.Load(path, kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: noEnv})); err != nil {
			return nil // not an ensemble, or a broken one
		}
		loaded++
		data, _ := os.ReadFile(path)
		if err := ValidateYAML(data); err != nil {
			t.Errorf("%s loads, but the schema rejects it: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if loaded < 10 {
		t.Fatalf("only %d ensembles loaded", loaded)
	}
}

// broken files: each is rejected by the loader and by the schema, at the
// place given.
var broken = []struct {
	name, yaml, where string
}{
	{"unknown top-level key", "name: x\nagnets: []\nagents: [{name: a, ask: q}]\n", "agnets"},
	{"missing agents", "name: x\n", "agents"},
	{"trigger with neither", "name: x\ntriggers: [{input: hi}]\nagents: [{name: a, ask: q}]\n", "/triggers/0"},
	{"trigger with both", "name: x\ntriggers: [{cron: \"* * * * *\", webhook: {path: /hooks/a, secret_env: S}}]\nagents: [{name: a, ask: q}]\n", "/triggers/0"},
	{"webhook outside /hooks/", "name: x\ntriggers: [{webhook: {path: /a, secret_env: S}}]\nagents: [{name: a, ask: q}]\n", "/triggers/0"},
	{"webhook without a secret", "name: x\ntriggers: [{webhook: {path: /hooks/a}}]\nagents: [{name: a, ask: q}]\n", "/triggers/0"},
	{"cron with three fields", "name: x\ntriggers: [{cron: \"* * *\"}]\nagents: [{name: a, ask: q}]\n", "/triggers/0"},
	{"no agents", "name: x\nagents: []\n", "/agents"},
	{"bad name", "name: My Flow\nagents: [{name: a, ask: q}]\n", "/name"},
	{"version 2", "version: 2\nname: x\nagents: [{name: a, ask: q}]\n", "/version"},
	{"typo in an agent", "name: x\nagents: [{name: a, ask: q, dependecies: []}]\n", "dependecies"},
	{"x- key inside an agent", "name: x\nagents: [{name: a, ask: q, x-note: hi}]\n", "x-note"},
	{"no kind", "name: x\nagents: [{name: a}]\n", "/agents/0"},
	{"two kinds", "name: x\nagents: [{name: a, ask: q, script: s.sh}]\n", "/agents/0"},
	{"prompt on a script agent", "name: x\nagents: [{name: a, script: s.sh, prompt: hi}]\n", "/agents/0"},
	{"env on an ask agent", "name: x\nagents: [{name: a, ask: q, env: {A: b}}]\n", "/agents/0"},
	{"allow_outside on an ask agent", "name: x\nagents: [{name: a, ask: q, allow_outside: true}]\n", "/agents/0"},
	{"allow_outside not a boolean", "name: x\nagents: [{name: a, script: s.sh, allow_outside: \"yes\"}]\n", "allow_outside"},
	{"max_turns 0", "name: x\nagents: [{name: a, ask: q, conversation: {max_turns: 0}}]\n", "max_turns"},
	{"bad output_format", "models: {m: {provider: ollama, model: l}}\nname: x\nagents: [{name: a, model_profile: m, output_format: yaml}]\n", "output_format"},
	{"timeout 0", "name: x\nagents: [{name: a, ask: q, timeout_seconds: 0}]\n", "timeout_seconds"},
	{"bad on", "name: x\nagents: [{name: a, ask: q}, {name: b, ask: q, dependencies: [{agent_name: a, on: error}]}]\n", "/dependencies/0"},
	{"bad trigger", "name: x\nagents: [{name: a, ask: q, trigger: every}]\n", "trigger"},
	{"requires_all as a string", "name: x\nagents: [{name: a, ask: q}, {name: b, ask: q, dependencies: [{agent_name: a, requires_all: \"no\"}]}]\n", "requires_all"},
	{"blank condition", "name: x\nagents: [{name: a, ask: q}, {name: b, ask: q, dependencies: [{agent_name: a, condition: \" \"}]}]\n", "condition"},
	{"typo in a dependency", "name: x\nagents: [{name: a, ask: q}, {name: b, ask: q, dependencies: [{agent: a}]}]\n", "/dependencies/0"},
	{"bad provider", "models: {m: {provider: gemini, model: g}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "provider"},
	{"anthropic without api_key_env", "models: {m: {provider: anthropic, model: c}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "/models/m"},
	{"a reserved option", "models: {m: {provider: ollama, model: l, options: {temperature: 1}}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "propertyName 'temperature'"},
	{"options not a mapping", "models: {m: {provider: ollama, model: l, options: high}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "options"},
	{"temperature 3", "models: {m: {provider: ollama, model: l, temperature: 3}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "temperature"},
	{"recent_turns without its strategy", "models: {m: {provider: ollama, model: l, context_window: {max_messages: 4, recent_turns: 2}}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "context_window"},
	{"strategy recent_turns without recent_turns", "models: {m: {provider: ollama, model: l, context_window: {strategy: recent_turns}}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "context_window"},
	{"window without a limit", "models: {m: {provider: ollama, model: l, context_window: {strategy: middle_out}}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "context_window"},
	{"bad tool name", "tools: [{name: \"look up\", script: s.sh}]\nname: x\nagents: [{name: a, ask: q}]\n", "/tools/0/name"},
	{"tool parameters not an object", "tools: [{name: t, script: s.sh, parameters: {type: string}}]\nname: x\nagents: [{name: a, ask: q}]\n", "/tools/0/parameters"},
	{"parallel 0", "name: x\nagents: [{name: a, ask: q}]\nconversation_limits: {parallel_agent_limit: 0}\n", "parallel_agent_limit"},
	{"limits typo", "name: x\nagents: [{name: a, ask: q}]\nconversation_limits: {max_turns: 3}\n", "max_turns"},
	{"tool listed twice", "models: {m: {provider: ollama, model: l}}\ntools: [{name: t, script: s.sh}]\nname: x\nagents: [{name: a, model_profile: m, tools: [t, t]}]\n", "/tools"},
	{"timeout beyond a time.Duration", "name: x\nagents: [{name: a, ask: q}]\nconversation_limits: {timeout_seconds: 1e10}\n", "timeout_seconds"},
	{"fan_out without over", "name: x\nagents: [{name: a, script: s.sh, fan_out: {max_parallel: 2}}]\n", "/agents/0/fan_out"},
	{"fan_out typo", "name: x\nagents: [{name: a, script: s.sh, fan_out: {over: \"[1]\", max_paralel: 2}}]\n", "max_paralel"},
	{"fan_out max_parallel 0", "name: x\nagents: [{name: a, script: s.sh, fan_out: {over: \"[1]\", max_parallel: 0}}]\n", "max_parallel"},
	{"fan_out bad on_error", "name: x\nagents: [{name: a, script: s.sh, fan_out: {over: \"[1]\", on_error: stop}}]\n", "on_error"},
	{"fan_out on an ask agent", "name: x\nagents: [{name: a, ask: q, fan_out: {over: \"[1]\"}}]\n", "/agents/0"},
	{"fan_out with triggers_conversation", "name: x\nagents: [{name: a, script: s.sh, fan_out: {over: \"[1]\"}, conversation: {triggers_conversation: true}}]\n", "triggers_conversation"},
	{"bad ask_mode", "name: x\nagents: [{name: a, ask: q, ask_mode: wait}]\n", "ask_mode"},
	{"ask_mode on a script agent", "name: x\nagents: [{name: a, script: s.sh, ask_mode: suspend}]\n", "/agents/0"},
	{"bad env name", "name: x\nagents: [{name: a, script: s.sh, env: {\"1A\": b}}]\n", "1A"},
	{"empty budget", "name: x\nagents: [{name: a, script: s.sh, budget: {}}]\n", "budget"},
	{"budget typo", "name: x\nagents: [{name: a, script: s.sh, budget: {max_dollars: 1}}]\n", "max_dollars"},
	{"max_cost 0", "name: x\nagents: [{name: a, ask: q}]\nconversation_limits: {max_cost: 0}\n", "max_cost"},
	{"retry without attempts", "name: x\nagents: [{name: a, script: s.sh, retry: {backoff: 1s}}]\n", "/agents/0/retry"},
	{"retry with a bad backoff", "name: x\nagents: [{name: a, script: s.sh, retry: {attempts: 2, backoff: soon}}]\n", "backoff"},
	{"pricing without output", "models: {m: {provider: ollama, model: l, pricing: {input_per_million: 1}}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "pricing"},
	{"negative pricing", "models: {m: {provider: ollama, model: l, pricing: {input_per_million: -1, output_per_million: 1}}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "input_per_million"},
	{"fallback twice", "models: {m: {provider: ollama, model: l, fallback: [n, n]}, n: {provider: ollama, model: k}}\nname: x\nagents: [{name: a, model_profile: m}]\n", "fallback"},
	{"output_schema on an ask agent", "name: x\nagents: [{name: a, ask: q, output_schema: {type: string}}]\n", "/agents/0"},
	{"output_schema not a mapping", "name: x\nagents: [{name: a, script: s.sh, output_schema: [1]}]\n", "output_schema"},
	{"output_repairs without output_schema", "models: {m: {provider: ollama, model: l}}\nname: x\nagents: [{name: a, model_profile: m, output_repairs: 2}]\n", "/agents/0"},
	{"output_repairs on a script agent", "name: x\nagents: [{name: a, script: s.sh, output_schema: {type: object}, output_repairs: 2}]\n", "/agents/0"},
	{"negative output_repairs", "models: {m: {provider: ollama, model: l}}\nname: x\nagents: [{name: a, model_profile: m, output_schema: {type: object}, output_repairs: -1}]\n", "output_repairs"},
	{"output on a script agent", "name: x\nagents: [{name: a, script: s.sh, output: b}]\n", "/agents/0"},
	{"prompt on an ensemble agent", "name: x\nagents: [{name: a, ensemble: c.yaml, prompt: hi}]\n", "/agents/0"},
	{"loop without until", "name: x\nagents: [{name: a, ensemble: c.yaml, loop: {max_iterations: 2}}]\n", "/agents/0/loop"},
	{"loop bad on_exhausted", "name: x\nagents: [{name: a, ensemble: c.yaml, loop: {until: \"true\", max_iterations: 2, on_exhausted: retry}}]\n", "on_exhausted"},
	{"expect not a list", "name: x\nagents: [{name: a, ask: q}]\nexpect: \"context.a == 'y'\"\n", "expect"},
	{"blank expectation", "name: x\nagents: [{name: a, ask: q}]\nexpect: [\" \"]\n", "/expect/0"},
	{"dispatch without cases", "name: x\nagents: [{name: a, dispatch: {on: input}}]\n", "/agents/0/dispatch"},
	{"ensemble and dispatch", "name: x\nagents: [{name: a, ensemble: c.yaml, dispatch: {on: input, cases: {a: c.yaml}}}]\n", "/agents/0"},
}

func TestBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte("#!/bin/sh\necho {}\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range broken {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "ensemble.yaml")
			if _, err := ensemble.LoadBytes(path, []byte(tc.yaml), kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: noEnv})); err == nil {
				t.Fatal("the loader accepts it: the schema must not invent rules")
			}
			err := ValidateYAML([]byte(tc.yaml))
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("the schema accepts it (err %v)", err)
			}
			if msg := ve.Error() + "\n" + strings.Join(locations(ve), "\n"); !strings.Contains(msg, tc.where) {
				t.Fatalf("error not at %q:\n%s", tc.where, msg)
			}
		})
	}
}

// locations lists where each leaf error of a validation error points.
func locations(ve *jsonschema.ValidationError) []string {
	if len(ve.Causes) == 0 {
		return []string{"/" + strings.Join(ve.InstanceLocation, "/")}
	}
	var out []string
	for _, c := range ve.Causes {
		out = append(out, locations(c)...)
	}
	return out
}

func TestExtensionsAndMergeKeys(t *testing.T) {
	yaml := `
x-defaults: &defaults
  conversation: {max_turns: 3}
name: x
agents:
  - name: a
    ask: q
    <<: *defaults
`
	if err := ValidateYAML([]byte(yaml)); err != nil {
		t.Fatal(err)
	}
	if err := ValidateYAML([]byte("name: x\nagents: [{name: a, ask: q}]\n1: odd\n")); err == nil {
		t.Fatal("a non-string key passed")
	}
	if err := ValidateYAML([]byte("name: [x\n")); err == nil {
		t.Fatal("bad YAML passed")
	}
}

// Optional text fields left empty (`key:` with no value, YAML's null) load
// as empty strings, so the schema takes them too: an editor must not flag a
// file the loader accepts.
func TestEmptyOptionalTextIsValid(t *testing.T) {
	dir := t.TempDir()
	for _, y := range []string{
		"name: x\ndescription:\ninput:\nagents: [{name: a, ask: q}]\n",
		"name: x\nmodels: {m: {provider: ollama, model: l, system_prompt: }}\nagents: [{name: a, model_profile: m, prompt: }]\n",
		"name: x\ntools: [{name: t, script: s.sh, description: }]\nagents: [{name: a, ask: q}]\n",
		"name: x\nagents: [{name: a, ask: q}]\nconversation_limits: {timeout_seconds: 9223372036}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte("#!/bin/sh\necho {}\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := ensemble.LoadBytes(filepath.Join(dir, "e.yaml"), []byte(y), kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: noEnv})); err != nil {
			t.Fatalf("the loader rejects it, so the case proves nothing: %v\n%s", err, y)
		}
		if err := ValidateYAML([]byte(y)); err != nil {
			t.Errorf("the loader accepts it, the schema does not: %v\n%s", err, y)
		}
	}
}

// strictProblems lists what Ajv's strict mode (ajv compile --strict=true)
// refuses in a schema: a required property that the same schema object does
// not declare in its properties (strictRequired), and a union of types
// other than T-or-null (strictTypes).
func strictProblems(v any, at string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if req, ok := v["required"].([]any); ok {
			props, _ := v["properties"].(map[string]any)
			for _, k := range req {
				if _, ok := props[k.(string)]; !ok {
					out = append(out, fmt.Sprintf("%s: required %q is not in its properties", at, k))
				}
			}
		}
		if types, ok := v["type"].([]any); ok {
			nonNull := 0
			for _, t := range types {
				if t != "null" {
					nonNull++
				}
			}
			if nonNull > 1 {
				out = append(out, fmt.Sprintf("%s: union type %v", at, types))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, strictProblems(v[k], at+"/"+k)...)
		}
	case []any:
		for i, x := range v {
			out = append(out, strictProblems(x, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return out
}

func TestSchemaIsStrict(t *testing.T) {
	t.Parallel()
	var doc any
	if err := json.Unmarshal(JSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range strictProblems(doc, "#") {
		t.Error(p)
	}
	// The check itself finds both problems.
	bad := `{"properties": {"a": {"if": {"required": ["b"]}, "then": {"type": ["string", "number"]}}}}`
	if err := json.Unmarshal([]byte(bad), &doc); err != nil {
		t.Fatal(err)
	}
	if got := strictProblems(doc, "#"); len(got) != 2 {
		t.Errorf("problems of %s: %q", bad, got)
	}
}

// TestSchemaCompilesWithAjv runs Ajv's own strict mode, when ajv-cli is
// installed; in CI (ENSEMBLE_CI set, as .ci/run does, which installs
// ajv-cli) its absence fails the test. Strict mode without strictTuples:
// an MCP server's command is an open tuple on purpose (a program, then
// any arguments), which strictTuples forbids.
func TestSchemaCompilesWithAjv(t *testing.T) {
	t.Parallel()
	ajv, err := exec.LookPath("ajv")
	if err != nil {
		if os.Getenv("ENSEMBLE_CI") != "" {
			t.Fatal("ajv is not installed, and ENSEMBLE_CI is set: CI installs it (npm install -g ajv-cli, .ci/run)")
		}
		t.Skip("ajv is not installed (npm install -g ajv-cli): TestSchemaIsStrict checks its strict rules")
	}
	out, err := exec.Command(ajv, "compile", "--spec=draft2020", "--strict=true", "--strict-tuples=false", "-s", "ensemble.schema.json").CombinedOutput()
	if err != nil {
		t.Fatalf("ajv: %v\n%s", err, out)
	}
}

// TestAgentPropertiesAreTheKindsFields: the schema's agent takes exactly
// the keys the loader reads of an agent with the built-in kinds (the
// common ones, each kind's key and its fields), so that a kind's new field
// cannot be forgotten here.
func TestAgentPropertiesAreTheKindsFields(t *testing.T) {
	t.Parallel()
	var doc struct {
		Defs struct {
			Agent struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"agent"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(JSON, &doc); err != nil {
		t.Fatal(err)
	}
	inSchema := slices.Sorted(maps.Keys(doc.Defs.Agent.Properties))
	read := ensemble.AgentKeys(kinds.Builtin().Load(ensemble.LoadOptions{}).Kinds)
	slices.Sort(read)
	if !slices.Equal(inSchema, slices.Compact(read)) {
		t.Errorf("the schema's agent properties differ from the keys the loader reads:\nschema: %v\nloader: %v", inSchema, read)
	}
}

// TestTopPropertiesAreTheLoadersKeys: the schema's top-level properties
// are the keys the loader reads at the top of a file (its x- keys aside).
func TestTopPropertiesAreTheLoadersKeys(t *testing.T) {
	t.Parallel()
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(JSON, &doc); err != nil {
		t.Fatal(err)
	}
	inSchema := slices.Sorted(maps.Keys(doc.Properties))
	read := slices.Sorted(slices.Values(ensemble.TopKeys()))
	if !slices.Equal(inSchema, read) {
		t.Errorf("the schema's top-level properties differ from the keys the loader reads:\nschema: %v\nloader: %v", inSchema, read)
	}
}

// TestReservedOptions: the schema refuses in a profile's options the
// fields the loader refuses.
func TestReservedOptions(t *testing.T) {
	var doc struct {
		Defs struct {
			Profile struct {
				Properties struct {
					Options struct {
						PropertyNames struct {
							Not struct {
								Enum []string `json:"enum"`
							} `json:"not"`
						} `json:"propertyNames"`
					} `json:"options"`
				} `json:"properties"`
			} `json:"modelProfile"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(JSON, &doc); err != nil {
		t.Fatal(err)
	}
	inSchema := slices.Sorted(slices.Values(doc.Defs.Profile.Properties.Options.PropertyNames.Not.Enum))
	if read := ensemble.ReservedOptions(); !slices.Equal(inSchema, read) {
		t.Errorf("the schema's reserved options differ from the loader's:\nschema: %v\nloader: %v", inSchema, read)
	}
}
