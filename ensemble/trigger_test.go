package ensemble_test

import (
	"context"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

const triggerAgents = "agents:\n  - name: a\n    ask: why?\n"

func TestTriggersDecode(t *testing.T) {
	t.Parallel()
	src := `name: t
triggers:
  - cron: "0 9 * * 1-5"
    timezone: Europe/Berlin
    input: morning report
  - cron: "*/5 * * * *"
  - webhook:
      path: /hooks/pr
      secret_env: GITHUB_HOOK_SECRET
      input: "review {{ body.pull_request.html_url }} ({{ headers['x-github-event'] }})"
  - webhook: {path: /hooks/raw, secret_env: RAW_SECRET}
` + triggerAgents
	e, err := LoadBytes("t.yaml", []byte(src), LoadOptions{LookupEnv: noEnv, Kinds: testKinds})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Triggers) != 4 {
		t.Fatalf("%d triggers, want 4", len(e.Triggers))
	}
	c := e.Triggers[0]
	if c.Cron == nil || c.Cron.Location.String() != "Europe/Berlin" || c.Cron.Input == nil || *c.Cron.Input != "morning report" || c.Key != "cron 0 9 * * 1-5 Europe/Berlin" || c.Pos.Line != 3 {
		t.Errorf("cron trigger: %+v %+v", c, c.Cron)
	}
	if c := e.Triggers[1].Cron; c.Timezone != "UTC" || c.Input != nil {
		t.Errorf("default timezone and input: %+v", c)
	}
	h := e.Triggers[2].Hook
	if h == nil || h.Path != "/hooks/pr" || h.SecretEnv != "GITHUB_HOOK_SECRET" || h.Input == nil {
		t.Fatalf("webhook trigger: %+v", h)
	}
	body := map[string]any{"pull_request": map[string]any{"html_url": "https://github.com/o/r/pull/1"}}
	got, err := h.Input.EvalRequest(context.Background(), body, map[string]any{"x-github-event": "pull_request"})
	if err != nil || got != "review https://github.com/o/r/pull/1 (pull_request)" {
		t.Errorf("rendered %q, %v", got, err)
	}
	if e.Triggers[3].Hook.Input != nil {
		t.Error("a webhook without input has a template")
	}
}

func TestTriggersErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, triggers string
		want           []string
	}{
		{"cron syntax", "  - cron: \"0 9 * *\"\n", []string{`3:11: trigger #1: cron "0 9 * *" has 4 fields`}},
		{"cron field", "  - cron: \"0 25 * * *\"\n", []string{`3:11: trigger #1: cron hour field "25"`}},
		{"timezone", "  - cron: \"0 9 * * *\"\n    timezone: Mars/Olympus\n", []string{`4:15: trigger #1: timezone "Mars/Olympus" is not a time zone`}},
		{"both wrong", "  - cron: \"0 9 * *\"\n    timezone: Local\n", []string{`3:11: trigger #1: cron "0 9 * *" has 4 fields`, `4:15: trigger #1: timezone must name a time zone`}},
		{"both", "  - cron: \"0 9 * * *\"\n    webhook: {path: /hooks/a, secret_env: S}\n", []string{`4:5: trigger #1: give cron or webhook, not both`}},
		{"neither", "  - input: x\n", []string{`3:5: trigger #1: cron or webhook is required`}},
		{"unknown key", "  - cron: \"0 9 * * *\"\n    tz: UTC\n", []string{`4:5: unknown key "tz" in trigger #1`}},
		{"path", "  - webhook: {path: /pr, secret_env: S}\n", []string{`3:21: trigger #1 webhook: path "/pr" must be a path under /hooks/`}},
		{"secret missing", "  - webhook: {path: /hooks/a}\n", []string{`3:14: trigger #1 webhook: secret_env is required`}},
		{"secret name", "  - webhook: {path: /hooks/a, secret_env: \"a b\"}\n", []string{`3:43: trigger #1 webhook: secret_env "a b" is not a variable name`}},
		{"template name", "  - webhook:\n      path: /hooks/a\n      secret_env: S\n      input: \"{{ context.x }}\"\n", []string{`6:18: trigger #1 webhook: input does not compile: unknown name context`}},
		{"template syntax", "  - webhook:\n      path: /hooks/a\n      secret_env: S\n      input: \"see {{ body.x \"\n", []string{`6:19: trigger #1 webhook: input does not compile: {{ is not closed`}},
		{"webhook input outside", "  - webhook: {path: /hooks/a, secret_env: S}\n    input: x\n", []string{`4:5: trigger #1: input belongs to a cron trigger`}},
		{"repeated", "  - webhook: {path: /hooks/a, secret_env: S}\n  - webhook: {path: /hooks/a, secret_env: T}\n", []string{`4:5: trigger #2 repeats trigger #1 (webhook /hooks/a)`}},
		{"same schedule", "  - cron: \"0 9 * * 1-5\"\n  - cron: \"0 9 * * MON-FRI\"\n", []string{`4:5: trigger #2 repeats trigger #1: cron 0 9 * * MON-FRI UTC fires when it does`}},
		{"sunday 0 and 7", "  - cron: \"0 9 * * 0\"\n    timezone: Europe/Berlin\n  - cron: \"0 9 * * 7\"\n    timezone: Europe/Berlin\n", []string{`5:5: trigger #2 repeats trigger #1`}},
		{"not a list", "  cron: x\n", []string{`3:3: triggers must be a list, got a mapping`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "name: t\ntriggers:\n" + tc.triggers + triggerAgents
			_, err := LoadBytes("t.yaml", []byte(src), LoadOptions{LookupEnv: noEnv, Kinds: testKinds})
			checkErrors(t, err, "t.yaml", tc.want...)
		})
	}
}
