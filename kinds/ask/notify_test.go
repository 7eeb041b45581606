package ask

import (
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

// notify: is a webhook URL and, optionally, the variable of its secret;
// each mistake is an error at its place.
func TestNotifyLoads(t *testing.T) {
	t.Parallel()
	load := func(notify string) (*ensemble.Ensemble, error) {
		y := "name: x\nagents:\n  - name: a\n    ask: \"ok?\"\n    notify: " + notify + "\n"
		return ensemble.LoadBytes("x.yaml", []byte(y), ensemble.LoadOptions{Kinds: []ensemble.Kind{Kind{}}})
	}
	e, err := load("{webhook: https://example.com/h, secret_env: NOTE}")
	if err != nil {
		t.Fatal(err)
	}
	if n := SpecOf(e.Agent("a")).Notify; n == nil || n.Webhook != "https://example.com/h" || n.SecretEnv != "NOTE" {
		t.Errorf("notify %+v", n)
	}
	for notify, want := range map[string]string{
		"{webhook: ftp://x}":                      `x.yaml:5:23: notify of agent "a": webhook must be an http:// or https:// URL`,
		"{secret_env: S}":                         `x.yaml:5:13: notify of agent "a": webhook is required`,
		"{webhook: https://x, secret_env: 'a b'}": `notify of agent "a": secret_env "a b" is not a variable name`,
		"{webhook: https://x, slack: y}":          `unknown key "slack"`,
		"https://x":                               `must be a mapping`,
	} {
		if _, err := load(notify); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", notify, err, want)
		}
	}
}
