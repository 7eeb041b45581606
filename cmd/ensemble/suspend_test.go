package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
)

// Ask agents that wait (docs/semantics.md#ask-agents-that-wait), through
// the CLI: run → exit 5 → state show → resume --answer.

// waitEnsemble writes an ensemble whose writer (a shell script) runs with
// the ask agents named, all in one turn after it.
func waitEnsemble(t *testing.T, mode string, askers ...string) string {
	t.Helper()
	dir := t.TempDir()
	y := "name: wait\ninput: draft\nagents:\n  - name: writer\n    script: write.sh\n"
	for _, a := range askers {
		y += "  - name: " + a + "\n    ask: \"Approve as " + a + "?\"\n    dependencies: [writer]\n"
		if mode != "" {
			y += "    ask_mode: " + mode + "\n"
		}
	}
	y += "  - name: counter\n    script: write.sh\n    dependencies: [writer]\n"
	y += "  - name: publisher\n    script: write.sh\n    dependencies: [" + strings.Join(askers, ", ") + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "write.sh"), []byte("#!/bin/sh\necho \"$ENSEMBLE_AGENT done\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "ensemble.yaml")
}

// runTTY runs the command with stdin taken for a terminal (or not).
func runTTY(t *testing.T, tty bool, stdin string, args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	std := &stdio{in: strings.NewReader(stdin), out: &out, err: &errb, inTTY: tty,
		getenv: func(k string) (string, bool) {
			if k == "ENSEMBLE_PROFILES" {
				return "", false
			}
			return os.LookupEnv(k)
		}}
	code := run(context.Background(), args, std)
	return outcome{code, out.String(), errb.String()}
}

func result(t *testing.T, o outcome) *engine.Result {
	t.Helper()
	var res engine.Result
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, o.stdout, o.stderr)
	}
	return &res
}

func TestSuspendAtATerminalOrNot(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mode   string
		tty    bool
		state  bool
		extra  []string
		code   int
		reason string
	}{
		{"a terminal asks", "", true, true, nil, 0, "completed"},
		{"a terminal asks, not durable", "", true, false, nil, 0, "completed"},
		{"no terminal waits", "", false, true, nil, 5, "awaiting_input"},
		{"no terminal, not durable: fails", "", false, false, nil, 1, "completed"},
		{"--no-input at a terminal waits", "", true, true, []string{"--no-input"}, 5, "awaiting_input"},
		{"ask_mode: suspend at a terminal waits", "suspend", true, true, nil, 5, "awaiting_input"},
		{"ask_mode: terminal at a terminal asks", "terminal", true, true, nil, 0, "completed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := waitEnsemble(t, c.mode, "reviewer")
			args := append([]string{"run", file, "--output", "json"}, c.extra...)
			if c.state {
				args = append(args, "--state", filepath.Join(t.TempDir(), "runs.db"))
			}
			o := runTTY(t, c.tty, "looks good\n", args...)
			res := result(t, o)
			if o.code != c.code || res.CompletionReason != c.reason {
				t.Fatalf("exit %d reason %q, want %d %q\nstderr: %s", o.code, res.CompletionReason, c.code, c.reason, o.stderr)
			}
			switch c.code {
			case 0:
				if res.FinalState["reviewer"] != "looks good" {
					t.Errorf("final state %v", res.FinalState)
				}
			case 1:
				if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "add --state FILE") {
					t.Errorf("errors %v", res.Errors)
				}
			case 5:
				// The turn's other agent ran and committed.
				want := []engine.PendingInput{{Agent: "reviewer", Question: "Approve as reviewer?", Dependencies: map[string]any{"writer": "writer done"}, Turn: 3}}
				if !reflect.DeepEqual(res.PendingInput, want) || res.FinalState["counter"] != "counter done" || res.TurnCount != 2 {
					t.Errorf("pending %+v, state %v, turns %d", res.PendingInput, res.FinalState, res.TurnCount)
				}
			}
		})
	}
}

func TestSuspendResumeWithAnswers(t *testing.T) {
	t.Parallel()
	file := waitEnsemble(t, "", "legal", "editor")
	db := filepath.Join(t.TempDir(), "runs.db")
	o := ensembleCmd(t, "", "run", file, "--state", db, "--output", "jsonl")
	if o.code != 5 || !strings.Contains(o.stdout, `"type":"input_requested"`) {
		t.Fatalf("exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	var requested []string
	for _, line := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		var ev struct {
			Type, Agent, Question string
			Turn                  int
			Dependencies          map[string]any
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "input_requested" {
			requested = append(requested, ev.Agent)
			if ev.Turn != 3 || ev.Question != "Approve as "+ev.Agent+"?" || ev.Dependencies["writer"] != "writer done" {
				t.Errorf("event %+v", ev)
			}
		}
	}
	if !reflect.DeepEqual(requested, []string{"legal", "editor"}) {
		t.Fatalf("input_requested for %v", requested)
	}

	// state show says what is pending.
	show := ensembleCmd(t, "", "state", "show", db, "--output", "text")
	if show.code != 0 || !strings.Contains(show.stdout, "legal waits for an answer: Approve as legal?") ||
		!strings.Contains(show.stdout, "editor waits for an answer") || !strings.Contains(show.stdout, "--answer legal='...' --answer editor='...'\n") {
		t.Fatalf("state show: %d\n%s\n%s", show.code, show.stdout, show.stderr)
	}
	if res := result(t, ensembleCmd(t, "", "state", "show", db, "--output", "json")); len(res.PendingInput) != 2 {
		t.Fatalf("state show json pending %+v", res.PendingInput)
	}

	// Answers for agents that do not wait are usage errors; nothing runs.
	for _, bad := range [][]string{{"--answer", "publisher=yes"}, {"--answer", "legl=yes"}, {"--answer", "legal"}} {
		o := ensembleCmd(t, "", append([]string{"resume", db}, bad...)...)
		if o.code != 2 {
			t.Fatalf("%v: exit %d\n%s", bad, o.code, o.stderr)
		}
	}
	o = ensembleCmd(t, "", "resume", db, "--answer", "publisher=yes")
	if !strings.Contains(o.stderr, `cannot answer agent "publisher": it is not waiting for input (the run waits for legal, editor)`) {
		t.Errorf("stderr: %s", o.stderr)
	}
	if o := ensembleCmd(t, "", "resume", db, "--answer", "legl=yes"); !strings.Contains(o.stderr, `did you mean "legal"`) {
		t.Errorf("stderr: %s", o.stderr)
	}

	// One JSON answer: the run goes on and waits again for the other.
	o = ensembleCmd(t, "", "resume", db, "--answer", `legal={"approved": true}`, "--output", "json")
	res := result(t, o)
	if o.code != 5 || len(res.PendingInput) != 1 || res.PendingInput[0].Agent != "editor" ||
		!reflect.DeepEqual(res.FinalState["legal"], map[string]any{"approved": true}) {
		t.Fatalf("exit %d pending %+v state %v\n%s", o.code, res.PendingInput, res.FinalState, o.stderr)
	}
	// The last answer from a file: a YAML value is the output itself.
	answers := filepath.Join(t.TempDir(), "answers.yaml")
	if err := os.WriteFile(answers, []byte("editor: {approved: true, note: fine}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o = ensembleCmd(t, "", "resume", db, "--answers", answers, "--output", "json")
	res = result(t, o)
	if o.code != 0 || res.CompletionReason != "completed" || res.FinalState["publisher"] != "publisher done" ||
		!reflect.DeepEqual(res.FinalState["editor"], map[string]any{"approved": true, "note": "fine"}) {
		t.Fatalf("exit %d %q state %v\n%s", o.code, res.CompletionReason, res.FinalState, o.stderr)
	}
	// A finished run waits for nothing.
	if o := ensembleCmd(t, "", "resume", db, "--answer", "legal=again"); o.code != 2 || !strings.Contains(o.stderr, "the run is not waiting for input") {
		t.Fatalf("after completion: exit %d %s", o.code, o.stderr)
	}
}

// The text view says what the run waits for and how to answer.
func TestSuspendTextSaysHowToAnswer(t *testing.T) {
	t.Parallel()
	file := waitEnsemble(t, "suspend", "reviewer")
	db := filepath.Join(t.TempDir(), "runs.json")
	o := ensembleCmd(t, "", "run", file, "--state", db, "--output", "text")
	if o.code != 5 || !strings.Contains(o.stdout, "awaiting_input") ||
		!strings.Contains(o.stderr, "reviewer waits for an answer: Approve as reviewer?") ||
		!strings.Contains(o.stderr, "answer with: ensemble resume "+db+" --run-id ") || !strings.Contains(o.stderr, " --answer reviewer=") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
}

// A JSON state file waits as a database does; a run resumed with its
// answers and interrupted before its turn committed takes them again.
func TestSuspendJSONStateFileAndInterruptedResume(t *testing.T) {
	t.Parallel()
	file := waitEnsemble(t, "", "reviewer")
	db := filepath.Join(t.TempDir(), "runs.db")
	if o := ensembleCmd(t, "", "run", file, "--state", db, "--output", "json"); o.code != 5 {
		t.Fatalf("run: exit %d %s", o.code, o.stderr)
	}
	exp := ensembleCmd(t, "", "state", "export", db)
	if exp.code != 0 {
		t.Fatalf("export: %d %s", exp.code, exp.stderr)
	}
	// As the run's file would be after a resume cut short by Ctrl-C.
	js := strings.Replace(exp.stdout, `"completion_reason": "awaiting_input"`, `"completion_reason": "cancelled"`, 1)
	if js == exp.stdout {
		t.Fatalf("no completion_reason in the export:\n%s", exp.stdout)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	o := ensembleCmd(t, "", "resume", path, "--answer", "reviewer=ok", "--output", "json")
	res := result(t, o)
	if o.code != 0 || res.FinalState["reviewer"] != "ok" || res.FinalState["publisher"] != "publisher done" {
		t.Fatalf("exit %d state %v\n%s", o.code, res.FinalState, o.stderr)
	}
}
