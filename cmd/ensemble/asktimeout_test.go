package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
)

// An ask agent's timeout: through the CLI (docs/semantics.md#answers-that-time-out):
// the deadline is saved with the suspension, resume applies on_timeout once
// it has passed, and an answer given before wins.

// timeoutEnsemble writes an ensemble whose approver waits (ask_mode:
// suspend) with the timeout: and on_timeout: given, between a writer
// and a publisher.
func timeoutEnsemble(t *testing.T, fields string) string {
	t.Helper()
	dir := t.TempDir()
	y := "name: timed\ninput: draft\nagents:\n  - name: writer\n    script: write.sh\n" +
		"  - name: approver\n    ask: \"Publish it?\"\n    ask_mode: suspend\n    dependencies: [writer]\n" + fields +
		"  - name: publisher\n    script: write.sh\n    dependencies: [approver]\n"
	if err := os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "write.sh"), []byte("#!/bin/sh\necho \"$ENSEMBLE_AGENT done\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "ensemble.yaml")
}

func TestAskTimeoutOnResume(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, fields, state string
		answer              []string
		code                int
		approver            any    // its output in the final state
		errs                string // the result's one error, if any
		onTimeout           bool   // the input_timed_out event and answered_on_timeout
	}{
		{"answer", "    timeout: 0.001\n    on_timeout: {answer: {approved: false}}\n", "runs.db", nil, 0, map[string]any{"approved": false}, "", true},
		{"answer, JSON state file", "    timeout: 0.001\n    on_timeout: {answer: \"no\"}\n", "runs.json", nil, 0, "no", "", true},
		{"fail", "    timeout: 0.001\n    on_timeout: fail\n", "runs.db", nil, 1, nil, `ask_timeout: agent "approver" had no answer by `, true},
		{"fail by default", "    timeout: 1ms\n", "runs.db", nil, 1, nil, `(timeout: 1ms)`, true},
		{"an answer given wins", "    timeout: 0.001\n    on_timeout: {answer: \"no\"}\n", "runs.db", []string{"--answer", "approver=yes"}, 0, "yes", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := timeoutEnsemble(t, c.fields)
			db := filepath.Join(t.TempDir(), c.state)
			o := ensembleCmd(t, "", "run", file, "--state", db, "--output", "json")
			res := result(t, o)
			if o.code != 5 || len(res.PendingInput) != 1 || res.PendingInput[0].Deadline == nil {
				t.Fatalf("run: exit %d, pending %+v\n%s", o.code, res.PendingInput, o.stderr)
			}
			o = ensembleCmd(t, "", append([]string{"resume", db, "--output", "jsonl"}, c.answer...)...)
			if o.code != c.code || strings.Contains(o.stdout, `"type":"input_timed_out"`) != c.onTimeout {
				t.Fatalf("resume: exit %d, want %d\n%s\n%s", o.code, c.code, o.stdout, o.stderr)
			}
			res = result(t, ensembleCmd(t, "", "state", "show", db, "--output", "json"))
			if res.CompletionReason != engine.Completed || !reflect.DeepEqual(res.FinalState["approver"], c.approver) {
				t.Fatalf("%s, approver %#v, want %#v", res.CompletionReason, res.FinalState["approver"], c.approver)
			}
			var errs []string
			for _, e := range res.Errors {
				errs = append(errs, e.Message)
			}
			if c.errs == "" && len(errs) > 0 || c.errs != "" && (len(errs) != 1 || !strings.Contains(errs[0], c.errs)) {
				t.Errorf("errors %q, want %q", errs, c.errs)
			}
			var rec map[string]any
			for _, r := range res.ConversationHistory {
				if r.AgentName == "approver" {
					rec = r.InputData.(map[string]any)
				}
			}
			if (rec["answered_on_timeout"] == true) != (c.onTimeout && c.code == 0) {
				t.Errorf("approver's input data %v", rec)
			}
			// Applied once: the run waits for nobody now.
			if o := ensembleCmd(t, "", "resume", db, "--answer", "approver=late"); o.code != 2 || !strings.Contains(o.stderr, "not waiting for input") {
				t.Errorf("a late answer: exit %d %s", o.code, o.stderr)
			}
		})
	}
}

// A question that waits again keeps its deadline; state show shows it;
// an answer before it is the answer.
func TestAskTimeoutKeepsItsDeadline(t *testing.T) {
	t.Parallel()
	file := timeoutEnsemble(t, "    timeout: 24h\n    on_timeout: fail\n")
	db := filepath.Join(t.TempDir(), "runs.db")
	first := result(t, ensembleCmd(t, "", "run", file, "--state", db, "--output", "json"))
	if len(first.PendingInput) != 1 || first.PendingInput[0].Deadline == nil {
		t.Fatalf("pending %+v", first.PendingInput)
	}
	at := *first.PendingInput[0].Deadline
	o := ensembleCmd(t, "", "resume", db, "--output", "json")
	again := result(t, o)
	if o.code != 5 || len(again.PendingInput) != 1 || again.PendingInput[0].Deadline == nil || !again.PendingInput[0].Deadline.Equal(at) {
		t.Fatalf("resumed without an answer: exit %d pending %+v, want the deadline %v", o.code, again.PendingInput, at)
	}
	if show := ensembleCmd(t, "", "state", "show", db, "--output", "json"); !strings.Contains(show.stdout, `"deadline": "`+at.Format("2006-01-02T15:04:05")) {
		t.Errorf("state show:\n%s", show.stdout)
	}
	if show := ensembleCmd(t, "", "state", "show", db, "--output", "text"); !strings.Contains(show.stdout+show.stderr, "approver waits until "+at.UTC().Format(time.RFC3339)+"; then its on_timeout applies") {
		t.Errorf("state show text:\n%s\n%s", show.stdout, show.stderr)
	}
	o = ensembleCmd(t, "", "resume", db, "--answer", "approver=yes", "--output", "json")
	if res := result(t, o); o.code != 0 || res.FinalState["approver"] != "yes" || len(res.Errors) > 0 {
		t.Fatalf("answered: exit %d %v %v", o.code, res.FinalState, res.Errors)
	}
}

// At a terminal the prompt waits at most the timeout, then applies
// on_timeout.
func TestAskTimeoutAtTheTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	y := "name: prompt\nagents:\n  - name: approver\n    ask: \"Publish it?\"\n    timeout: 0.2\n    on_timeout: {answer: later}\n"
	file := filepath.Join(dir, "ensemble.yaml")
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	in, w := io.Pipe() // nobody types
	defer w.Close()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", file, "--output", "json"},
		&stdio{in: in, out: &out, err: &errb, inTTY: true, getenv: func(string) (string, bool) { return "", false }})
	if code != 0 || !strings.Contains(out.String(), `"approver": "later"`) || !strings.Contains(errb.String(), "with no answer by then the answer is \"later\"") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// validate rejects a bad timeout:, on_timeout: without it, and an answer
// that no answer can be, naming the file, the line and the agent.
func TestAskTimeoutValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ fields, want string }{
		{"    timeout: 1d\n", `ensemble.yaml:10:14: agent "approver": timeout must be a positive duration`},
		{"    on_timeout: fail\n", `ensemble.yaml:10:17: agent "approver": on_timeout needs timeout`},
		{"    timeout: 1h\n    on_timeout: {answer: .nan}\n", `ensemble.yaml:11:26: on_timeout of agent "approver": answer holds .inf or .nan`},
		{"    timeout: 1h\n    on_timeout: {answer: null}\n", `on_timeout of agent "approver": answer must not be empty`},
	} {
		file := timeoutEnsemble(t, c.fields)
		if o := ensembleCmd(t, "", "validate", file); o.code != 2 || !strings.Contains(o.stderr+o.stdout, c.want) {
			t.Errorf("%q: exit %d\n%s%s\nwant %q", c.fields, o.code, o.stdout, o.stderr, c.want)
		}
	}
	if o := ensembleCmd(t, "", "validate", timeoutEnsemble(t, "    timeout: 24h\n    on_timeout: {answer: {approved: false}}\n")); o.code != 0 {
		t.Errorf("a good file: exit %d %s", o.code, o.stderr)
	}
}
