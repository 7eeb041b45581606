package ensemble_test

import (
	"path/filepath"
	"reflect"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// A profile's options are JSON values whose strings expand ${VAR}.
func TestProfileOptions(t *testing.T) {
	t.Parallel()
	profiles := filepath.Join("testdata", "options", "profiles.yaml")
	e := loadOK(t, "options/options.yaml", LoadOptions{Kinds: testKinds, ProfileFiles: []string{profiles},
		LookupEnv: envOf(map[string]string{"TEAM": "core"})})
	want := map[string]any{
		"reasoning_effort": "high",
		"metadata":         map[string]any{"team": "core", "tags": []any{"a", "core"}, "1": "one"},
		"seed":             7,
		"think":            false,
		"extra":            nil,
		"literal":          "${X}",
	}
	if got := e.Models["deep"].Options; !reflect.DeepEqual(got, want) {
		t.Errorf("options %#v,\nwant %#v", got, want)
	}
	if got := e.Models["local"].Options; got == nil || len(got) != 0 {
		t.Errorf("options: {} decodes as %#v, want an empty map", got)
	}
	if got := e.Models["shared"].Options; !reflect.DeepEqual(got, map[string]any{"reasoning_effort": "none"}) {
		t.Errorf("a profiles file's options %#v", got)
	}
	e = loadOK(t, "options/options.yaml", LoadOptions{Kinds: testKinds,
		LookupEnv: envOf(map[string]string{"TEAM": "core", "EFFORT": "low"})})
	if got := e.Models["deep"].Options["reasoning_effort"]; got != "low" {
		t.Errorf("reasoning_effort %v, want the variable's low", got)
	}
}

func TestProfileOptionErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "options", "bad.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, file,
		`8:7: model profile "a": options.temperature is set by the run: use the profile's temperature`,
		`9:7: model profile "a": options.max_tokens is set by the run: use the profile's max_tokens`,
		`10:7: model profile "a": options.stream is set by the run: use run --stream`,
		`12:12: model profile "a": options.bad holds .inf or .nan, which JSON cannot carry`,
		`13:12: model profile "a": options.env uses ${UNSET}, which is not set`,
		`17:14: options of model profile "b" must be a mapping, got string "high"`,
		`21:5: unknown key "reasoning_effort" in model profile "c"; a field of the provider's request goes under options: {reasoning_effort: ...}`)
}
