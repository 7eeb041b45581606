package ensemble_test

import (
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

// A key written in api_key_env's place is refused without being echoed,
// also a key that is a valid variable name (Groq's gsk_…, Hugging Face's
// hf_…): taken for a name, "variable … is not set" would print it.
func TestKeyInPlaceOfItsVariable(t *testing.T) {
	t.Parallel()
	for value, isKey := range map[string]bool{
		"gsk_AbCdEf0123456789ghIJkl":  true,
		"hf_abcdefghijklmnopqrstuvwx": true,
		"AIzaSyA1b2C3d4E5f6G7h8I9j0K": true,
		"Tq9XvB27mWz4LpRk8NcY3hJd6Fs": true, // long, mixed case and digits
		"sk-proj-abcdefghijklmnop":    true,
		"OPENAI_API_KEY":              false,
		"ENSEMBLE_TEST_FAKE_KEY_2026": false,
		"my_groq_key":                 false,
		"Anthropic_Key_2":             false,
	} {
		y := "name: k\nmodels:\n  m: {provider: openai, model: x, api_key_env: " + value + "}\nagents:\n  - {name: a, model_profile: m}\n"
		_, err := LoadBytes("k.yaml", []byte(y), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
		refused := err != nil && strings.Contains(err.Error(), "names the variable holding the key, not the key")
		if refused != isKey {
			t.Errorf("%s: refused as a key %v, want %v (%v)", value, refused, isKey, err)
		}
		if isKey && strings.Contains(err.Error(), value) {
			t.Errorf("%s: the error echoes it: %v", value, err)
		}
	}
}
