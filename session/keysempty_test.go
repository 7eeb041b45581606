package session_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/session"
)

// A key variable that is set but empty is refused as an unset one is
// (docs/llm.md#keys), and the message says which of the two it is: "not
// set" would send the user to look for an export that is there.
func TestKeySetButEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "e.yaml"), `name: e
models:
  fast: {provider: openai, model: m, api_key_env: ENSEMBLE_TEST_EMPTY_KEY}
agents:
  - {name: writer, model_profile: fast}
`)
	e, err := session.Load(filepath.Join(dir, "e.yaml"), nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  func(string) (string, bool)
		want string
	}{
		{"unset", noEnv, "ENSEMBLE_TEST_EMPTY_KEY, which is not set: export it"},
		{"empty", func(string) (string, bool) { return " ", true }, "ENSEMBLE_TEST_EMPTY_KEY, which is set but empty: export it"},
	} {
		_, err := session.Open(context.Background(), e, session.Options{LookupEnv: tc.env})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
