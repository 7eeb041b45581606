package ask

import (
	"slices"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// The variables a file marks as holding secrets (notify's secret_env and
// slack_env, a webhook trigger's secret_env) are kept from scripts and
// their values redacted, as the models' keys are.
func TestNotifySecretsAreSecrets(t *testing.T) {
	t.Parallel()
	y := `name: x
triggers:
  - webhook: {path: /hooks/x, secret_env: HOOK_SECRET}
agents:
  - {name: a, ask: "ok?", notify: {webhook: "https://example.com/h", secret_env: NOTE_SECRET}}
  - {name: b, ask: "ok?", notify: {slack_env: SLACK_URL}}
`
	e, err := ensemble.LoadBytes("x.yaml", []byte(y), ensemble.LoadOptions{Kinds: []ensemble.Kind{Kind{}}})
	if err != nil {
		t.Fatal(err)
	}
	got := e.SecretEnvNames()
	if slices.Sort(got); !slices.Equal(got, []string{"HOOK_SECRET", "NOTE_SECRET", "SLACK_URL"}) {
		t.Errorf("secret variables %v", got)
	}
	env := map[string]string{"HOOK_SECRET": "hook-secret-123", "NOTE_SECRET": "note-secret-456", "SLACK_URL": "https://hooks.slack.com/services/T0/B0/xyz"}
	var base []string
	for k, v := range env {
		base = append(base, k+"="+v)
	}
	if left := scriptexec.ScriptEnv(append(base, "HOME=/h"), e, nil); !slices.Equal(left, []string{"HOME=/h"}) {
		t.Errorf("a script's environment: %v", left)
	}
	r := secrets.OfEnsemble(e, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if got := r.String("hook-secret-123 note-secret-456 https://hooks.slack.com/services/T0/B0/xyz"); got != "[REDACTED] [REDACTED] [REDACTED]" {
		t.Errorf("redacted %q", got)
	}
}
