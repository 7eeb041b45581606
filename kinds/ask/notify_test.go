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
	if e, err := load("{slack_env: SLACK_URL}"); err != nil || SpecOf(e.Agent("a")).Notify.SlackEnv != "SLACK_URL" {
		t.Errorf("slack_env: %v", err)
	}
	for notify, want := range map[string]string{
		"{webhook: ftp://x}":                      `x.yaml:5:23: notify of agent "a": webhook must be an http:// or https:// URL`,
		"{secret_env: S}":                         `x.yaml:5:13: notify of agent "a": webhook is required`,
		"{webhook: https://x, secret_env: 'a b'}": `notify of agent "a": secret_env "a b" is not a variable name`,
		"{webhook: https://x, slack: y}":          `unknown key "slack"`,
		"https://x":                               `must be a mapping`,
		"{slack_env: S, webhook: https://x}":      `slack_env and webhook cannot both be given`,
		"{slack_env: S, secret_env: T}":           `secret_env signs a webhook's posts`,
		"{slack_env: 'a-b'}":                      `slack_env "a-b" is not a variable name`,
	} {
		if _, err := load(notify); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", notify, err, want)
		}
	}
}
