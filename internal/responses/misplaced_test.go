package responses

import (
	"strings"
	"testing"
)

// A simulated user written as an item of the list would be taken as the
// output {"simulate": …}: it is refused, by both parsers, at its line;
// the same output as JSON text, or beside other keys, is data.
func TestMisplacedSimulationIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"flow", "user:\n  - ok\n  - {simulate: {model_profile: m, prompt: hi}}\n", `r.yaml:3:1: response 2 of agent "user" is {simulate: ...}`},
		{"block", "user:\n  - |\n    two\n    lines\n  - simulate:\n      model_profile: m\n      prompt: hi\n", `r.yaml:5:1: response 2 of agent "user" is {simulate: ...}`},
		{"json text", "user:\n  - '{\"simulate\": {\"model_profile\": \"m\"}}'\n", ""},
		{"other keys", "user:\n  - {simulate: 1, why: data}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseResponses("r.yaml", []byte(tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
