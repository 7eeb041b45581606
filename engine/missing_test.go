package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/state"
)

// A review whose guard, condition, select and template each misspell a
// key of get_diff's output; quiet reads the same keys through ?. and ??.
const missingReads = `
name: review
agents:
  - name: get_diff
    script: x.sh
  - name: security
    script: x.sh
    dependencies: [get_diff]
    when: "context.get_diff.touches_cod"
  - name: style
    script: x.sh
    dependencies:
      - agent_name: get_diff
        condition: "context.get_diff.lang == 'go'"
  - name: lint
    script: x.sh
    dependencies:
      - agent_name: get_diff
        select: "output.dif"
  - name: reviewer
    script: x.sh
    dependencies: [get_diff]
    input: "Review {{ context.get_diff.dif }} by {{ context.author?.name ?? 'someone' }}"
  - name: quiet
    script: x.sh
    dependencies:
      - agent_name: get_diff
        condition: "(context.get_diff?.touches_cod ?? true) && context.get_diff.nope?.x == nil"
        select: "output.dif ?? output.diff"
    when: "context.get_diff.touches_cod ?? true"
    input: "{{ context.get_diff.lang ?? 'go' }}"
  - name: author
    script: x.sh
    dependencies:
      - agent_name: get_diff
        condition: "false"
`

func diffRunner() agentpkg.Runner {
	return scripted{"get_diff": func(*agentpkg.Request) (any, error) {
		return map[string]any{"touches_code": true, "diff": "+x", "language": "go"}, nil
	}}
}

func TestMissingReadsAreWarnedOnce(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, missingReads)
	log := events.NewLog(func(ev events.Event) bool { return ev.Type == events.Warning })
	res := engine.New(e, "", engine.Options{Runner: diffRunner(), Events: log.Sink()}).Run(context.Background())
	if res.CompletionReason != engine.Completed || res.ExitCode() != engine.ExitOK {
		t.Fatalf("ended %s, exit %d; want completed, 0 (a warning is no failure)", res.CompletionReason, res.ExitCode())
	}
	type w struct{ agent, dep, path, suggestion, start string }
	want := []w{
		{"security", "", "context.get_diff.touches_cod", "touches_code", "when of security reads context.get_diff.touches_cod, a key its value does not have (did you mean `touches_code`?)"},
		{"style", "get_diff", "context.get_diff.lang", "", "condition of style ← get_diff (context.get_diff.lang == 'go') reads context.get_diff.lang, a key its value does not have: it counted as null"},
		{"lint", "get_diff", "output.dif", "diff", "select of lint ← get_diff reads output.dif"},
		{"reviewer", "", "context.get_diff.dif", "diff", "input of reviewer ({{ context.get_diff.dif }}) reads context.get_diff.dif"},
	}
	var got []w
	for _, x := range res.Warnings {
		if x.Kind != state.WarnMissingRead {
			t.Errorf("a warning of kind %q: %+v", x.Kind, x)
			continue
		}
		g := w{x.AgentName, x.Dependency, x.Path, x.Suggestion, ""}
		for _, ww := range want {
			if ww.agent == g.agent && strings.HasPrefix(x.Message, ww.start) {
				g.start = ww.start
			}
		}
		if g.start == "" {
			g.start = x.Message
		}
		got = append(got, g)
	}
	if len(got) != len(want) {
		t.Fatalf("warnings\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("warning %d:\n%+v\nwant\n%+v", i, got[i], want[i])
		}
	}
	// Each is an event too, with its record.
	evs := log.Events()
	if len(evs) != len(want) {
		t.Fatalf("%d warning events, want %d", len(evs), len(want))
	}
	if rec, ok := evs[0].Warning.(*state.Warning); !ok || rec.Path != "context.get_diff.touches_cod" || rec.Suggestion != "touches_code" || evs[0].Agent != "security" {
		t.Errorf("event %+v", evs[0])
	}
}

// The same miss in every round of a loop is one warning.
func TestMissingReadOncePerRun(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `
name: loop
agents:
  - name: start
    script: x.sh
  - name: a
    script: x.sh
    conversation: {max_turns: 3}
    dependencies:
      - agent_name: start
        requires_all: false
      - agent_name: b
        requires_all: false
        condition: "context.b.again_ != false"
  - name: b
    script: x.sh
    conversation: {max_turns: 3}
    dependencies: [a]
`)
	res := engine.New(e, "", engine.Options{Runner: scripted{"b": func(*agentpkg.Request) (any, error) {
		return map[string]any{"again": true}, nil
	}}}).Run(context.Background())
	if res.AgentExecutionCount["a"] != 3 {
		t.Fatalf("a ran %d times; the test needs a loop (%v)", res.AgentExecutionCount["a"], order(res))
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Path != "context.b.again_" || res.Warnings[0].Suggestion != "again" {
		t.Fatalf("warnings %+v, want one", res.Warnings)
	}
}

// --strict ends the run before the turn whose resolution read a missing
// key runs: strict_warning, exit 7; nothing of that turn ran.
func TestStrictEndsBeforeTheTurn(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, missingReads)
	res := engine.New(e, "", engine.Options{Runner: diffRunner(), Strict: true}).Run(context.Background())
	if res.CompletionReason != engine.StrictWarning || res.ExitCode() != engine.ExitStrict || engine.ExitStrict != 7 {
		t.Fatalf("ended %s, exit %d; want strict_warning, 7", res.CompletionReason, res.ExitCode())
	}
	if res.TurnCount != 1 || len(res.ConversationHistory) != 1 || res.ConversationHistory[0].AgentName != "get_diff" {
		t.Errorf("turns %d, history %v: want get_diff's turn only", res.TurnCount, order(res))
	}
	if len(res.Warnings) == 0 || res.Warnings[0].AgentName != "security" {
		t.Errorf("warnings %+v", res.Warnings)
	}
}

// A miss found while planning (a template) stops a strict run before the
// agent is given what was built on it.
func TestStrictStopsBeforeATemplateIsSent(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `
name: t
agents:
  - name: get_diff
    script: x.sh
  - name: reviewer
    script: x.sh
    dependencies: [get_diff]
    input: "{{ context.get_diff.dif }}"
`)
	ran := false
	runner := scripted{
		"get_diff": func(*agentpkg.Request) (any, error) { return map[string]any{"diff": "+x"}, nil },
		"reviewer": func(*agentpkg.Request) (any, error) { ran = true; return "ok", nil },
	}
	res := engine.New(e, "", engine.Options{Runner: runner, Strict: true}).Run(context.Background())
	if res.CompletionReason != engine.StrictWarning || ran {
		t.Fatalf("ended %s, reviewer ran: %v", res.CompletionReason, ran)
	}
	// Without --strict the same run completes, with the warning.
	res = engine.New(e, "", engine.Options{Runner: runner}).Run(context.Background())
	if res.CompletionReason != engine.Completed || !ran || len(res.Warnings) != 1 {
		t.Fatalf("ended %s, warnings %+v", res.CompletionReason, res.Warnings)
	}
}

// A run with no missing read is not ended by --strict, and a read through
// ?. or ?? is none.
func TestStrictRunWithoutMisses(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `
name: t
agents:
  - name: get_diff
    script: x.sh
  - name: reviewer
    script: x.sh
    dependencies:
      - agent_name: get_diff
        condition: "context.get_diff?.nope == nil && (context.get_diff.nope2 ?? true)"
    when: "context.author?.x == nil"
    input: "{{ context.get_diff.diff }} {{ context.get_diff.other ?? '' }}"
  - name: author
    script: x.sh
    dependencies:
      - agent_name: get_diff
        condition: "false"
`)
	res := engine.New(e, "", engine.Options{Runner: diffRunner(), Strict: true}).Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Warnings) != 0 {
		t.Fatalf("ended %s, warnings %+v", res.CompletionReason, res.Warnings)
	}
}

// A fan-out's list and its instances' templates are read too: the miss of
// every instance is one warning.
func TestMissingReadsOfAFanOut(t *testing.T) {
	t.Parallel()
	const fan = `
name: fan
agents:
  - name: split
    script: x.sh
  - name: review
    script: x.sh
    dependencies: [split]
    fan_out:
      over: "OVER"
    input: "{{ item.pth }}"
`
	var n atomic.Int64 // the instances run at once
	runner := scripted{
		"split": func(*agentpkg.Request) (any, error) {
			return map[string]any{"files": []any{map[string]any{"path": "a"}, map[string]any{"path": "b"}, map[string]any{"path": "c"}}}, nil
		},
		"review": func(*agentpkg.Request) (any, error) { n.Add(1); return "ok", nil },
	}
	e := loadYAML(t, strings.Replace(fan, "OVER", "context.split.fils ?? context.split.file", 1))
	res := engine.New(e, "", engine.Options{Runner: runner}).Run(context.Background())
	// over's right side reads file: no list, the agent fails, no instance runs.
	if n.Load() != 0 || len(res.Warnings) != 1 || res.Warnings[0].Path != "context.split.file" || res.Warnings[0].Suggestion != "files" ||
		!strings.HasPrefix(res.Warnings[0].Message, "fan_out.over of review (context.split.fils ?? context.split.file) reads context.split.file") {
		t.Fatalf("warnings %+v", res.Warnings)
	}
	e = loadYAML(t, strings.Replace(fan, "OVER", "context.split.files", 1))
	res = engine.New(e, "", engine.Options{Runner: runner}).Run(context.Background())
	if n.Load() != 3 || len(res.Warnings) != 1 || res.Warnings[0].AgentName != "review" || res.Warnings[0].Path != "item.pth" || res.Warnings[0].Suggestion != "path" {
		t.Fatalf("%d instances, warnings %+v", n.Load(), res.Warnings)
	}
}
