package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	agentpkg "github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/kinds"
)

// loadYAML loads an ensemble of script agents from its text; the scripts
// never run (the tests answer for them).
func loadYAML(t *testing.T, yaml string) *ensemble.Ensemble {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := ensemble.LoadBytes(dir+"/ensemble.yaml", []byte(yaml), kinds.Builtin().Load(ensemble.LoadOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

const guardedJoin = `
name: guarded
agents:
  - name: router
    script: x.sh
  - name: bugfix
    script: x.sh
    dependencies: [router]
    when: "context.router.route == 'bug'"
  - name: feature
    script: x.sh
    dependencies: [router]
    when: "context.router.route == 'feature'"
  - name: notify
    script: x.sh
    dependencies: [feature]
  - name: join
    script: x.sh
    dependencies: [bugfix, feature]
    trigger: all
`

// A false guard skips its agent: a record marked skipped, an
// agent_skipped event, no execution; a join runs with what the other
// branch delivered, and null for the skipped one; a skip propagates to an
// agent whose required dependencies were all skipped.
func TestGuardSkipsAndJoinRuns(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, guardedJoin)
	var mu sync.Mutex
	var skipped []string
	sink := func(ev events.Event) {
		if ev.Type == events.AgentSkipped {
			mu.Lock()
			skipped = append(skipped, ev.Agent+": "+ev.Message)
			mu.Unlock()
		}
	}
	var joined map[string]any
	run := scripted{
		"router":  func(*agentpkg.Request) (any, error) { return map[string]any{"route": "bug"}, nil },
		"feature": func(*agentpkg.Request) (any, error) { t.Error("feature ran"); return nil, nil },
		"notify":  func(*agentpkg.Request) (any, error) { t.Error("notify ran"); return nil, nil },
		"join":    func(req *agentpkg.Request) (any, error) { joined = req.Dependencies; return "joined", nil },
	}
	r := engine.New(e, "", engine.Options{Runner: run, Events: sink})
	res := r.Run(context.Background())
	if res.CompletionReason != engine.Completed || len(res.Errors) != 0 {
		t.Fatalf("%s %v", res.CompletionReason, res.Errors)
	}
	if got := strings.Join(order(res), " "); got != "1:router 2:bugfix 2:feature 3:notify 3:join" {
		t.Fatalf("order %s", got)
	}
	if joined["bugfix"] != "bugfix#1" || joined["feature"] != nil || len(joined) != 2 {
		t.Fatalf("join was given %v, want bugfix's output and feature null", joined)
	}
	for _, rec := range res.ConversationHistory {
		wantSkip := rec.AgentName == "feature" || rec.AgentName == "notify"
		if rec.Skipped != wantSkip || wantSkip && (rec.Execution != 0 || rec.OutputData != nil || rec.Error != nil) {
			t.Fatalf("record %+v", rec)
		}
	}
	if res.AgentExecutionCount["feature"] != 0 || res.AgentExecutionCount["join"] != 1 {
		t.Fatalf("counts %v", res.AgentExecutionCount)
	}
	want := []string{"feature: when (context.router.route == 'feature') is false", "notify: its dependencies were skipped: feature"}
	if strings.Join(skipped, "|") != strings.Join(want, "|") {
		t.Fatalf("agent_skipped events %q, want %q", skipped, want)
	}
	if res.ExitCode() != 0 {
		t.Fatalf("exit %d", res.ExitCode())
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil || !strings.Contains(buf.String(), `"skipped": true`) ||
		!strings.Contains(buf.String(), `"skipped_because": "when"`) {
		t.Fatalf("JSON result (%v): %s", err, buf.String())
	}

	// The state file keeps the skips, and a resumed run finds nothing to do.
	f := saveLoad(t, r, res.CompletionReason)
	if f.State.Skips("feature") != 1 || f.State.Executions("feature") != 0 {
		t.Fatalf("reloaded: %d skips, %d executions", f.State.Skips("feature"), f.State.Executions("feature"))
	}
	res2 := engine.Resume(e, f.State, engine.Options{Runner: run}).Run(context.Background())
	if res2.CompletionReason != engine.Completed || len(res2.ConversationHistory) != len(res.ConversationHistory) {
		t.Fatalf("resumed: %s, %d records", res2.CompletionReason, len(res2.ConversationHistory))
	}
}

// The guard sees what conditions see; in a loop it is evaluated again on
// each new output, and a skip ends the round.
func TestGuardInLoopRound(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `
name: loop
agents:
  - name: start
    script: x.sh
  - name: writer
    script: x.sh
    dependencies: [start, {agent_name: reviewer, requires_all: false}]
    conversation: {max_turns: 5}
  - name: reviewer
    script: x.sh
    dependencies: [writer]
    when: "executions.writer < 3 && len(history) > 0"
    conversation: {max_turns: 5}
`)
	res := engine.New(e, "", engine.Options{Runner: scripted{}}).Run(context.Background())
	got := strings.Join(order(res), " ")
	if got != "1:start 2:writer 3:reviewer 4:writer 5:reviewer 6:writer 7:reviewer" {
		t.Fatalf("order %s", got)
	}
	last := res.ConversationHistory[len(res.ConversationHistory)-1]
	if !last.Skipped || res.AgentExecutionCount["reviewer"] != 2 || res.AgentExecutionCount["writer"] != 3 {
		t.Fatalf("last %+v, counts %v", last, res.AgentExecutionCount)
	}
}

// An on: always edge delivers the dependency's output or its error,
// whichever came; a failure it delivers to an agent that succeeds is
// handled.
func TestOnAlwaysDeliversOutputOrError(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `
name: always
agents:
  - name: fetch
    script: x.sh
  - name: report
    script: x.sh
    dependencies: [{agent_name: fetch, on: always}]
`)
	for _, fail := range []bool{false, true} {
		var got any
		run := scripted{
			"fetch": func(*agentpkg.Request) (any, error) {
				if fail {
					return nil, errString("unreachable")
				}
				return "page", nil
			},
			"report": func(req *agentpkg.Request) (any, error) { got = req.Dependencies["fetch"]; return "ok", nil },
		}
		res := engine.New(e, "", engine.Options{Runner: run}).Run(context.Background())
		want := `"page"`
		if fail {
			want = `{"agent":"fetch","error":"unreachable","execution":1}`
		}
		if s := mustJSON(t, got); s != want {
			t.Fatalf("fail=%v: report was given %s, want %s", fail, s, want)
		}
		if res.ExitCode() != 0 {
			t.Fatalf("fail=%v: exit %d, errors %v", fail, res.ExitCode(), res.Errors)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// An ask agent whose guard is false is skipped, not waited for.
func TestGuardedAskAgentDoesNotWait(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `
name: approve
agents:
  - name: writer
    script: x.sh
  - name: approver
    ask: "Publish?"
    ask_mode: suspend
    dependencies: [writer]
    when: "context.writer == 'needs approval'"
`)
	r := engine.New(e, "", engine.Options{Runner: scripted{}})
	if reason := r.Step(context.Background()); reason != "" || len(r.PendingInput()) != 0 {
		t.Fatalf("after the writer: %q, pending %v", reason, r.PendingInput())
	}
	res := r.Run(context.Background())
	if res.CompletionReason != engine.Completed {
		t.Fatalf("%s", res.CompletionReason)
	}
	if got := strings.Join(order(res), " "); got != "1:writer 2:approver" || !res.ConversationHistory[1].Skipped {
		t.Fatalf("order %s", got)
	}
}

// An agent held back by a limit it reached through skips is named with
// the limit that held it and its skips, as the resolver counts them.
func TestHeldBackCountsSkips(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `
name: held
conversation_limits:
  max_agent_executions: {a: 2, c: 2, b: 1}
agents:
  - name: s
    script: x.sh
  - name: a
    script: x.sh
    conversation: {max_turns: 5}
    dependencies: [{agent_name: s, requires_all: false}, {agent_name: c, requires_all: false}]
  - name: c
    script: x.sh
    conversation: {max_turns: 5}
    dependencies: [a]
  - name: b
    script: x.sh
    conversation: {max_turns: 5}
    dependencies: [a]
    when: "false"
`)
	res := engine.New(e, "", engine.Options{Runner: scripted{}}).Run(context.Background())
	var b *engine.HeldBack
	for i := range res.HeldBack {
		if res.HeldBack[i].AgentName == "b" {
			b = &res.HeldBack[i]
		}
	}
	if b == nil || b.Limit != "conversation_limits.max_agent_executions" || b.Skips != 1 || b.Executions != 0 {
		t.Fatalf("held back %+v", res.HeldBack)
	}
}
