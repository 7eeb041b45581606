package ensemble_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
)

const joinLoop = `name: join
agents:
  - name: start
    ask: q
  - name: coder
    ask: q
    dependencies: [start, {agent_name: critic, requires_all: false}]
    conversation: {max_turns: 3}
  - name: critic
    ask: q
    dependencies: [coder]
    conversation: {max_turns: 3}
  - name: synth
    ask: q
%s    dependencies: [coder, critic, start]
    conversation: {max_turns: 3}
`

func TestJoinInALoopWarns(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		warn string // "" when no warning is wanted
	}{
		"default trigger": {strings.Replace(joinLoop, "%s", "", 1),
			`agent "synth" joins "coder" and "critic", which run in the same loop: it runs as soon as one of them has a new output, paired with the others' previous ones; add trigger: all to wait for all of them (trigger: all waits for a new output from every required dependency: make "start" optional`},
		"trigger all, start required": {strings.Replace(joinLoop, "%s", "    trigger: all\n", 1),
			`agent "synth" has trigger: all and requires "start", which runs at most once`},
		"trigger all, start optional": {strings.Replace(strings.Replace(joinLoop, "%s", "    trigger: all\n", 1), "[coder, critic, start]", "[coder, critic, {agent_name: start, requires_all: false}]", 1), ""},
		"explicit any":                {strings.Replace(joinLoop, "%s", "    trigger: any\n", 1), ""},
		"trigger all, nothing required": {strings.Replace(strings.Replace(joinLoop, "%s", "    trigger: all\n", 1), "[coder, critic, start]", "[{agent_name: coder, requires_all: false}]", 1),
			`agent "synth" has trigger: all but no required dependency: it has no effect`},
	} {
		e, err := LoadBytes("join.yaml", []byte(c.src), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch {
		case c.warn == "" && len(e.Warnings) > 0:
			t.Errorf("%s: unexpected warnings %v", name, e.Warnings)
		case c.warn != "" && (len(e.Warnings) != 1 || !strings.HasPrefix(e.Warnings[0].Error(), "join.yaml:13:5: "+c.warn)):
			t.Errorf("%s: warnings %v, want one: %s", name, e.Warnings, c.warn)
		}
		if strings.Contains(c.src, "trigger: all") && !e.Agent("synth").TriggerAll {
			t.Errorf("%s: trigger: all not decoded", name)
		}
	}
}

// Only dependencies in the same cycle warn: a join of a loop's agent with
// one outside it, or of two separate loops, is fine.
func TestJoinWarningNeedsTwoInOneLoop(t *testing.T) {
	t.Parallel()
	src := `name: joins
agents:
  - name: a
    ask: q
  - name: b
    ask: q
    dependencies: [a, {agent_name: c, requires_all: false}]
    conversation: {max_turns: 3}
  - name: c
    ask: q
    dependencies: [b]
    conversation: {max_turns: 3}
  - name: d
    ask: q
    dependencies: [a, {agent_name: e, requires_all: false}]
    conversation: {max_turns: 3}
  - name: e
    ask: q
    dependencies: [d]
    conversation: {max_turns: 3}
  - name: one-loop
    ask: q
    dependencies: [a, b]
  - name: two-loops
    ask: q
    dependencies: [c, e]
  - name: optional-pair
    ask: q
    dependencies: [{agent_name: b, requires_all: false}, {agent_name: c, requires_all: false}]
`
	e, err := LoadBytes("joins.yaml", []byte(src), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Warnings) > 0 {
		t.Fatalf("unexpected warnings: %v", e.Warnings)
	}
}

func TestTriggerMustBeAnyOrAll(t *testing.T) {
	t.Parallel()
	_, err := LoadBytes("t.yaml", []byte("name: t\nagents:\n  - name: a\n    ask: q\n    trigger: every\n"), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "t.yaml", `5:14: agent "a": trigger must be any or all, got "every"`)
}

// A max_cost with no priced profile can never be reached: cost comes from
// pricing, and an unpriced profile costs 0.
func TestMaxCostWithoutPricingWarns(t *testing.T) {
	t.Parallel()
	const src = `name: spend
models:
  m: {provider: openai, model: gpt-4o, api_key_env: K%s}
agents:
  - name: a
    model_profile: m
    prompt: p
    budget: {max_cost: 1}
conversation_limits:
  max_cost: 2
`
	env := func(string) (string, bool) { return "x", true }
	for name, c := range map[string]struct {
		pricing string
		want    []string
	}{
		"no pricing": {"", []string{
			"spend.yaml:10:3: conversation_limits sets max_cost but no model profile has pricing",
			`spend.yaml:5:5: agent "a" has a budget with max_cost but no model profile has pricing`}},
		"priced": {", pricing: {input_per_million: 1, output_per_million: 2}", nil},
	} {
		e, err := LoadBytes("spend.yaml", []byte(strings.Replace(src, "%s", c.pricing, 1)), LoadOptions{Kinds: testKinds, LookupEnv: env})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(e.Warnings) != len(c.want) {
			t.Fatalf("%s: warnings %v, want %d", name, e.Warnings, len(c.want))
		}
		for i, w := range c.want {
			if !strings.HasPrefix(e.Warnings[i].Error(), w) {
				t.Errorf("%s: warning %q, want %q…", name, e.Warnings[i].Error(), w)
			}
		}
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	known := []string{"name", "agents", "dependencies", "env", "max_turns"}
	for in, want := range map[string]string{
		"agnets": "agents", "dependecies": "dependencies", "Name": "name", "max_turn": "max_turns",
		"xyz": "", "environment": "", "ev": "env",
	} {
		got := Suggest(in, known)
		if (want == "" && got != "") || (want != "" && got != `; did you mean "`+want+`"?`) {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// An agent in a loop that may run only once (max_turns 1, the default)
// keeps the loop from going round: each such agent is warned of, with its
// loop and the fix; one that may run again is not.
func TestLoopThatRunsOnceWarns(t *testing.T) {
	t.Parallel()
	src := `name: loop
agents:
  - name: start
    ask: q
  - name: writer
    ask: q
    dependencies: [start, {agent_name: reviewer, requires_all: false}]
    conversation: {max_turns: 3}
  - name: reviewer
    ask: q
    dependencies: [writer]
  - name: after
    ask: q
    dependencies: [reviewer]
`
	e, err := LoadBytes("loop.yaml", []byte(src), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range e.Warnings {
		got = append(got, w.Error())
	}
	want := []string{
		`loop.yaml:9:5: agent "reviewer" is in a loop (with "writer") but runs only once: conversation.max_turns is 1, so the loop never goes round; give it conversation: {max_turns: N}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
