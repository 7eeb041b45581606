package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// recordingServer is an OpenAI-compatible server whose replies follow the
// request: a tool result is answered with text quoting it, a request that
// offers tools with a call of the first one, any other with text quoting
// the start of the system prompt and the last user message.
func recordingServer(t *testing.T) *fakemodel.Server {
	return fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool":
			return fakemodel.Reply{Text: "the tool said " + last.Content}
		case len(r.Tools) > 0:
			return fakemodel.Reply{Calls: []fakemodel.Call{{Name: r.Tools[0], Args: `{"text": "hello"}`}}}
		}
		sys, _, _ := strings.Cut(r.System, "\n")
		return fakemodel.Reply{Text: fmt.Sprintf("%s / %s", sys, strings.ReplaceAll(last.Content, "\n", " "))}
	}, fakemodel.WithUsage(11, 4))
}

// writeRecordingEnsemble writes an ensemble with a tool loop whose tool
// prints something new every call, a fan-out, a child ensemble and a
// simulated user.
func writeRecordingEnsemble(t *testing.T) (dir, path string) {
	dir = t.TempDir()
	files := map[string]string{
		"ensemble.yaml": `name: rec
input: "the report"
models:
  m:
    provider: openai
    model: test-model
    base_url: ${TEST_LLM_URL:-http://127.0.0.1:9/v1}
    api_key_env: TEST_LLM_KEY
tools:
  - name: stamp
    description: Stamps a text.
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    script: stamp.sh
agents:
  - name: split
    script: split.sh
  - name: researcher
    model_profile: m
    prompt: Research with the tool.
    tools: [stamp]
  - name: summarize
    model_profile: m
    prompt: Summarize the part.
    fan_out: {over: "context.split.parts"}
    dependencies: [split]
  - name: review
    ensemble: child.yaml
    output: critic
    dependencies: [summarize]
  - name: approve
    ask: Do you approve?
    dependencies: [review, researcher]
`,
		"child.yaml": `name: child
agents:
  - name: critic
    model_profile: m
    prompt: Criticise.
`,
		"split.sh": "#!/bin/sh\ncat >/dev/null\necho '{\"success\": true, \"data\": {\"parts\": [\"one\", \"two\"]}}'\n",
		"stamp.sh": "#!/bin/sh\ncat >/dev/null\necho \"stamp $$-$(date +%s%N)\"\n",
		"sim.yaml": "approve:\n  simulate:\n    model_profile: m\n    prompt: You are the manager.\n",
	}
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "ensemble.yaml")
}

// volatile are the parts of a result that differ between runs.
var volatile = regexp.MustCompile(`"(timestamp|execution_time|started_at|ended_at|duration[a-z_]*|latency_ms)": [^,\n]*`)

func stable(s string) string { return volatile.ReplaceAllString(s, `"$1": X`) }

func TestRecordAndReplay(t *testing.T) {
	t.Parallel()
	srv := recordingServer(t)
	dir, path := writeRecordingEnsemble(t)
	rec := filepath.Join(dir, "recording")
	key := "sk-recording-secret-123"
	env := map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": key}
	sim := filepath.Join(dir, "sim.yaml")

	o := ensembleEnv(t, env, "run", path, "--responses", sim, "--live-all", "--record", rec, "--record-tools", "--output", "json")
	if o.code != 0 {
		t.Fatalf("record: exit %d: %s", o.code, o.stderr)
	}
	recorded := srv.Count()
	// researcher 2, summarize 2, critic 1, the simulated user 1
	if recorded != 6 {
		t.Fatalf("%d requests while recording, want 6", recorded)
	}
	var names []string
	entries, _ := os.ReadDir(rec)
	for _, e := range entries {
		names = append(names, e.Name())
		b, _ := os.ReadFile(filepath.Join(rec, e.Name()))
		if strings.Contains(string(b), key) {
			t.Fatalf("%s holds the key:\n%s", e.Name(), b)
		}
	}
	if got := strings.Join(names, " "); got != "approve.yaml researcher.yaml review.critic.yaml summarize[0].yaml summarize[1].yaml" {
		t.Fatalf("files %s", got)
	}

	// Two replays without a server or a key give the same result as each
	// other and as the recording run, timestamps and durations aside.
	srv.Close()
	var results []string
	for range 2 {
		o := ensembleEnv(t, nil, "run", path, "--responses", sim, "--replay", rec, "--output", "json")
		if o.code != 0 {
			t.Fatalf("replay: exit %d: %s", o.code, o.stderr)
		}
		results = append(results, stable(o.stdout))
	}
	if results[0] != results[1] {
		t.Fatalf("two replays differ:\n%s\n---\n%s", results[0], results[1])
	}
	if results[0] != stable(o.stdout) {
		t.Fatalf("the replay differs from the recording run:\n%s\n---\n%s", results[0], stable(o.stdout))
	}
	if srv.Count() != recorded {
		t.Fatal("the replay reached the server")
	}
}

func TestReplayMissShowsTheFirstDifference(t *testing.T) {
	t.Parallel()
	srv := recordingServer(t)
	dir, path := writeRecordingEnsemble(t)
	rec := filepath.Join(dir, "recording")
	env := map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": "sk-recording-secret-123"}
	sim := filepath.Join(dir, "sim.yaml")

	// Without --record-tools the tool runs again on replay, and prints
	// something new: the researcher's second request differs.
	if o := ensembleEnv(t, env, "run", path, "--responses", sim, "--live-all", "--record", rec, "--output", "json"); o.code != 0 {
		t.Fatalf("record: exit %d: %s", o.code, o.stderr)
	}
	o := ensembleEnv(t, nil, "run", path, "--responses", sim, "--replay", rec, "--output", "json")
	if o.code == 0 {
		t.Fatal("the replay passed though the tool's result changed")
	}
	for _, want := range []string{
		`replay: model request 2 of agent \"researcher\" is not in`,
		`message 3 (tool) differs from the closest recorded request's (exchange 2)`,
		`- stamp `, `+ stamp `,
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("the result lacks %q:\n%s", want, o.stdout)
		}
	}

	// An edited prompt: the miss shows the line that changed.
	child := filepath.Join(dir, "child.yaml")
	cb, _ := os.ReadFile(child)
	if err := os.WriteFile(child, []byte(strings.Replace(string(cb), "Criticise.", "Criticise harshly.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	o = ensembleEnv(t, nil, "run", path, "--responses", sim, "--replay", rec, "--output", "json")
	want := "the system prompt differs from the closest recorded request's (exchange 1):\\n- Criticise.\\n+ Criticise harshly.\\n"
	if o.code == 0 || !strings.Contains(o.stdout, want) {
		t.Fatalf("exit %d, want %q in:\n%s", o.code, want, o.stdout)
	}

	// --record-missing sends only what is missing, and then replays.
	before := srv.Count()
	o = ensembleEnv(t, env, "run", path, "--responses", sim, "--live-all", "--replay", rec, "--record-missing", "--record-tools", "--output", "json")
	if o.code != 0 {
		t.Fatalf("record-missing: exit %d: %s\n%s", o.code, o.stderr, o.stdout)
	}
	// The critic, the researcher's second request (its tool result is
	// new) and the simulated user (who sees both new outputs): 3 requests;
	// the summaries are replayed.
	if n := srv.Count() - before; n != 3 {
		t.Fatalf("%d requests with --record-missing, want 3", n)
	}
	o = ensembleEnv(t, nil, "run", path, "--responses", sim, "--replay", rec, "--output", "json")
	if o.code != 0 {
		t.Fatalf("replay after record-missing: exit %d: %s\n%s", o.code, o.stderr, o.stdout)
	}
}

func TestRecordingFlags(t *testing.T) {
	t.Parallel()
	_, path := writeRecordingEnsemble(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--record", "a", "--replay", "b"}, "--record and --replay are mutually exclusive"},
		{[]string{"--record-missing"}, "--record-missing needs --replay DIR"},
		{[]string{"--record-tools"}, "--record-tools needs --record DIR or --record-missing"},
		{[]string{"--replay", "/nonexistent-recording"}, "--replay /nonexistent-recording: the recording folder does not exist"},
		{[]string{"--replay", path}, "--replay " + path + ": not a folder"},
		{[]string{"--record", path}, "--record " + path + ": not a folder"},
		{[]string{"--replay", path + "/x", "--record-missing"}, "--replay " + path + "/x: not a folder"},
	} {
		o := ensembleEnv(t, nil, append([]string{"run", path}, tc.args...)...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, o.code, o.stderr, tc.want)
		}
	}
}

// TestRecordedAnswersReplayWithoutATerminal: what a person typed is
// recorded, and a replay answers with it where there is no terminal.
func TestRecordedAnswersReplayWithoutATerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ensemble.yaml")
	ens := "name: asks\ninput: a draft\nagents:\n  - name: approver\n    ask: Publish it?\n"
	if err := os.WriteFile(path, []byte(ens), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "recording")
	o := runTTY(t, true, "yes, ship it\n", "run", path, "--record", rec, "--output", "json")
	if o.code != 0 {
		t.Fatalf("record: exit %d: %s", o.code, o.stderr)
	}
	o = runTTY(t, false, "", "run", path, "--replay", rec, "--output", "json")
	if o.code != 0 || result(t, o).FinalState["approver"] != "yes, ship it" {
		t.Fatalf("replay: exit %d: %s\n%s", o.code, o.stderr, o.stdout)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(ens, "Publish it?", "Publish it now?", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	o = runTTY(t, false, "", "run", path, "--replay", rec, "--output", "json")
	if o.code != 1 || !strings.Contains(o.stdout, `- Publish it?\n+ Publish it now?`) {
		t.Fatalf("a changed question: exit %d:\n%s", o.code, o.stdout)
	}
}

// TestResumeKeepsTheRecording: a durable run keeps its recording folder
// and mode, so that ensemble resume goes on recording into the same files
// (adding to what the first part recorded) or goes on replaying (never
// calling a model).
func TestResumeKeepsTheRecording(t *testing.T) {
	t.Parallel()
	srv := recordingServer(t)
	dir, path := writeRecordingEnsemble(t)
	rec := filepath.Join(dir, "recording")
	env := map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": "sk-test"}
	sim := filepath.Join(dir, "sim.yaml")
	db := filepath.Join(dir, "runs.db")

	// Recorded in two parts: two turns, then the rest by resume.
	o := ensembleEnv(t, env, "run", path, "--responses", sim, "--live-all", "--record", rec, "--record-tools",
		"--state", db, "--max-turns", "2", "--output", "json")
	if o.code != engine.ExitMaxTurns || o.stderr != "" {
		t.Fatalf("first part: exit %d: %s", o.code, o.stderr)
	}
	first := srv.Count()
	o = ensembleEnv(t, env, "resume", db, "--live-all", "--max-turns", "10", "--output", "json")
	if o.code != 0 {
		t.Fatalf("resume: exit %d: %s", o.code, o.stderr)
	}
	if srv.Count() != 6 || first == 0 || first == 6 {
		t.Fatalf("%d requests in the first part, %d in all, want 6 in all", first, srv.Count())
	}

	// The recording holds both parts: a whole run replays from it alone.
	srv.Close()
	o = ensembleEnv(t, nil, "run", path, "--responses", sim, "--replay", rec, "--output", "json")
	if o.code != 0 {
		t.Fatalf("replaying the run recorded in two parts: exit %d: %s", o.code, o.stdout+o.stderr)
	}

	// Replayed in two parts: the resumed part replays too (the server is
	// gone: a request sent to it would fail the run).
	db2 := filepath.Join(dir, "replayed.db")
	o = ensembleEnv(t, nil, "run", path, "--responses", sim, "--replay", rec, "--state", db2, "--max-turns", "2", "--output", "json")
	if o.code != engine.ExitMaxTurns {
		t.Fatalf("replayed first part: exit %d: %s", o.code, o.stderr)
	}
	o = ensembleEnv(t, nil, "resume", db2, "--max-turns", "10", "--output", "json")
	if o.code != 0 || !strings.Contains(o.stdout, `"completion_reason": "completed"`) {
		t.Fatalf("replayed resume: exit %d: %s", o.code, o.stdout+o.stderr)
	}
	if srv.Count() != 6 {
		t.Fatal("the replay reached the server")
	}
}
