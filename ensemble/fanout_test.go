package ensemble_test

import (
	"testing"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/opaque"
)

func TestFanOutDecoding(t *testing.T) {
	t.Parallel()
	ok := `name: s
models:
  fast: {provider: ollama, model: llama3}
agents:
  - {name: splitter, ask: q}
  - name: summarize
    model_profile: fast
    fan_out:
      over: "context.splitter.chunks"
      max_parallel: 4
      on_error: fail
    dependencies: [splitter]
  - name: count
    model_profile: fast
    fan_out: {over: "split(input, ',')"}
`
	e, err := LoadBytes("s.yaml", []byte(ok), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	fo := e.Agent("summarize").FanOut
	if fo == nil || fo.Over != "context.splitter.chunks" || opaque.Get(fo.OverProgram) == nil || fo.MaxParallel != 4 || fo.MaxItems != DefaultMaxItems || !fo.FailOnError {
		t.Fatalf("fan_out not decoded: %+v", fo)
	}
	if fo := e.Agent("count").FanOut; fo == nil || fo.MaxParallel != 0 || fo.FailOnError {
		t.Fatalf("defaults: %+v", fo)
	}
	if e.Agent("splitter").FanOut != nil {
		t.Fatal("an agent without fan_out has one")
	}

	bad := `name: s
models:
  fast: {provider: ollama, model: llama3}
agents:
  - {name: splitter, ask: q}
  - name: a
    model_profile: fast
    fan_out: {over: "context.spliter.chunks", max_parallel: 0, on_error: stop}
  - name: b
    model_profile: fast
    fan_out: {over: "'one, two'"}
  - name: c
    model_profile: fast
    fan_out: {over: "len(input) > 3", max_items: -1}
  - name: d
    model_profile: fast
    fan_out: {over: "context.(", overr: 1}
  - name: e
    model_profile: fast
    fan_out: {max_parallel: 2}
  - name: f
    ask: q
    fan_out: {over: "[1, 2]"}
  - name: g
    model_profile: fast
    fan_out: [1, 2]
  - name: h
    model_profile: fast
    fan_out: {over: "42"}
  - name: i
    model_profile: fast
    fan_out: {over: "[1, 2]"}
    conversation: {triggers_conversation: true}
  - name: j
    model_profile: fast
    fan_out: {over: "[1, 2]", max_items: 100000000}
`
	_, err = LoadBytes("s.yaml", []byte(bad), LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, "s.yaml",
		`8:21: fan_out of agent "a": over names context.spliter, but no agent has the state key "spliter"; did you mean "splitter"? (column 9 of the fan_out.over)`,
		`8:61: fan_out of agent "a": max_parallel must be at least 1, got 0`,
		`8:74: fan_out of agent "a": on_error must be continue or fail, got "stop"`,
		`11:21: fan_out of agent "b": over does not compile: must yield a list, but it is always a string`,
		`14:21: fan_out of agent "c": over does not compile: must yield a list, but it is always a boolean`,
		`14:50: fan_out of agent "c": max_items must be at least 1, got -1`,
		`17:21: fan_out of agent "d": over does not compile: expected name (column 9 of the fan_out.over)`,
		`17:34: unknown key "overr" in fan_out of agent "d"; did you mean "over"?`,
		`20:14: fan_out of agent "e": over is required`,
		`23:5: agent "f": fan_out is not for ask agents, which ask a person`,
		`26:14: fan_out of agent "g" must be a mapping, got a list`,
		`29:21: fan_out of agent "h": over does not compile: must yield a list, but it is always a number`,
		`33:20: agent "i": an agent with fan_out makes no agent requests (its output is a list): remove conversation.triggers_conversation`,
		`36:42: fan_out of agent "j": max_items must be at most 1000000, got 100000000: every item of the list is planned before the first instance runs`,
	)
}

func TestInstanceName(t *testing.T) {
	t.Parallel()
	if got := InstanceName("summarize", 12); got != "summarize[12]" {
		t.Fatal(got)
	}
	for s, want := range map[string]bool{"summarize[0]": true, "summarize[12]": true, "s[01]": false, "s[]": false, "[1]": false, "s[1": false, "s[x]": false, "s": false} {
		a, i, ok := ParseInstanceName(s)
		if ok != want || ok && InstanceName(a, i) != s {
			t.Errorf("%q: %q %d %v", s, a, i, ok)
		}
	}
}
