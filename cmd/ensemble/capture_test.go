package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// captured runs an example with --state (and args: its responses file, a
// recording), captures the run into a folder and returns the folder and
// the captured files.
func captured(t *testing.T, dir, ex string, args ...string) (out string, files map[string]string) {
	t.Helper()
	db := filepath.Join(dir, "runs.db")
	run := append([]string{"run", filepath.Join("..", "..", "examples", ex, "ensemble.yaml"), "--state", db, "--no-input"}, args...)
	if o := ensembleCmd(t, "", run...); o.code != 0 && o.code != 3 && o.code != 5 {
		t.Fatalf("%s: run: exit %d\n%s", ex, o.code, o.stderr)
	}
	out = filepath.Join(dir, "captured")
	if o := ensembleCmd(t, "", "test", "capture", db, "--out", out); o.code != 0 {
		t.Fatalf("%s: test capture: exit %d\n%s%s", ex, o.code, o.stdout, o.stderr)
	}
	return out, readDir(t, out)
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func fileEnding(files map[string]string, suffix string) (string, bool) {
	for p := range files {
		if strings.HasSuffix(p, suffix) {
			return p, true
		}
	}
	return "", false
}

// changeLastReply changes the last reply of the first agent of a
// responses file: what a model that now answers otherwise would do.
func changeLastReply(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	list := doc.Content[0].Content[1]
	last := list.Content[len(list.Content)-1]
	switch last.Kind {
	case yaml.ScalarNode:
		last.Value += " (changed)"
		last.Style = yaml.DoubleQuotedStyle
	case yaml.MappingNode:
		last.Content = append(last.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "changed"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "yes"})
	default:
		t.Fatalf("%s: cannot change a reply of kind %v", path, last.Kind)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

var ranTimes = regexp.MustCompile(`ran (\d+) times?`)

// A run saved with --state becomes a test that replays it offline: the
// test passes, calling no model (test refuses to reach one: an LLM agent
// without a captured reply would fail), and fails when the ensemble's
// behaviour changes (a model that answers otherwise, an agent that runs
// another number of times).
func TestCaptureReplaysTheRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ex   string
		args []string
		want []string // in the feature or the responses file
	}{
		// An LLM agent that loops, and an ask agent answered by the responses.
		{"iterative-analysis", []string{"--responses", "../../examples/iterative-analysis/responses.yaml"},
			[]string{`agent "llm_analyzer" ran 2 times`, "user_clarification:\n  - Q3 only, EMEA region"}},
		// A fan-out: its instances' replies in order.
		{"map-reduce", []string{"--responses", "../../examples/map-reduce/responses.yaml"},
			[]string{"summarize:\n  - Ensemble runs YAML"}},
		// A dispatch's child ensemble: its agents by path.
		{"routing", []string{"--responses", "../../examples/routing/responses.yaml"}, []string{`agent "route/`}},
		// A child ensemble in a loop: its earlier rounds' replies come from
		// the run's own responses file.
		{"build-loop", []string{"--responses", "../../examples/build-loop/responses.yaml"},
			[]string{"build_loop/coder:", `agent "build_loop/coder" ran 2 times`}},
		// A run stopped by its turn limit.
		{"runaway-loop", []string{"--responses", "../../examples/runaway-loop/responses.yaml"}, nil},
		{"writer-reviewer", []string{"--responses", "../../examples/writer-reviewer/responses.yaml"}, nil},
		{"guarded-join", []string{"--responses", "../../examples/guarded-join/responses.yaml"}, nil},
		// A recorded run: its recording is copied, and answers the model.
		{"local-ollama", []string{"--replay", "../../examples/local-ollama/recording"},
			[]string{`And the recording "`, `agent "inventory_assistant" ran 2 times`}},
	}
	for _, c := range cases {
		t.Run(c.ex, func(t *testing.T) {
			t.Parallel()
			out, files := captured(t, t.TempDir(), c.ex, c.args...)
			feature, ok := fileEnding(files, ".feature")
			if !ok {
				t.Fatalf("no .feature written: %v", files)
			}
			all := ""
			for _, s := range files {
				all += s
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("the capture has no %q:\n%s", w, all)
				}
			}
			if o := ensembleCmd(t, "", "test", out); o.code != 0 {
				t.Fatalf("test of the capture: exit %d\n%s%s", o.code, o.stdout, o.stderr)
			}

			// The ensemble's behaviour changes: the test fails.
			if resp, ok := fileEnding(files, ".responses.yaml"); ok && c.ex != "local-ollama" {
				changeLastReply(t, resp)
				if o := ensembleCmd(t, "", "test", out); o.code != 1 {
					t.Errorf("test after a reply changed: exit %d, want 1\n%s", o.code, o.stdout)
				}
				if err := os.WriteFile(resp, []byte(files[resp]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			text := files[feature]
			m := ranTimes.FindStringSubmatchIndex(text)
			n, _ := strconv.Atoi(text[m[2]:m[3]])
			changed := text[:m[2]] + strconv.Itoa(n+1) + text[m[3]:]
			if err := os.WriteFile(feature, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			if o := ensembleCmd(t, "", "test", out); o.code != 1 || !strings.Contains(o.stdout, "want "+strconv.Itoa(n+1)) {
				t.Errorf("test after an execution count changed: exit %d, want 1\n%s", o.code, o.stdout)
			}
		})
	}
}

// A run that waits for a person is captured waiting; once answered and
// finished, its capture has the answer: a capture of the same run that
// differs is refused unless --force.
func TestCaptureOfARunThatWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, files := captured(t, dir, "approval")
	feature, _ := fileEnding(files, ".feature")
	for _, w := range []string{`Then the completion reason is "awaiting_input"`, `And the run is waiting for input from "approver"`, `And agent "publisher" did not run`} {
		if !strings.Contains(files[feature], w) {
			t.Errorf("the capture of a waiting run has no %q:\n%s", w, files[feature])
		}
	}
	if o := ensembleCmd(t, "", "test", out); o.code != 0 {
		t.Fatalf("test of the capture: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	db := filepath.Join(dir, "runs.db")
	if o := ensembleCmd(t, "", "resume", db, "--answer", `approver={"approved": true}`); o.code != 0 {
		t.Fatalf("resume: exit %d\n%s", o.code, o.stderr)
	}
	o := ensembleCmd(t, "", "test", "capture", db, "--out", out)
	if o.code != 2 || !strings.Contains(o.stderr, "exists and differs from the capture") || !strings.Contains(o.stderr, "--force") {
		t.Fatalf("a second capture of the run over the first: exit %d\n%s", o.code, o.stderr)
	}
	if o := ensembleCmd(t, "", "test", "capture", db, "--out", out, "--force"); o.code != 0 {
		t.Fatalf("capture --force: exit %d\n%s", o.code, o.stderr)
	}
	files = readDir(t, out)
	resp, ok := fileEnding(files, ".responses.yaml")
	if !ok || !strings.Contains(files[resp], "approver:\n  - approved: true") {
		t.Fatalf("the answer is not among the captured replies:\n%v", files)
	}
	if !strings.Contains(files[feature], `Then the completion reason is "completed"`) {
		t.Errorf("the capture of the finished run:\n%s", files[feature])
	}
	if o := ensembleCmd(t, "", "test", out); o.code != 0 {
		t.Fatalf("test of the capture: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	// The same capture again is no change: nothing is refused.
	if o := ensembleCmd(t, "", "test", "capture", db, "--out", out); o.code != 0 {
		t.Fatalf("the same capture again: exit %d\n%s", o.code, o.stderr)
	}
}

// What cannot be captured is refused with the reason, exit 2; a JSON state
// file is captured like a run of a database.
func TestCaptureRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	ens := "../../examples/hello-scripts/ensemble.yaml"
	for _, id := range []string{"one", "two"} {
		if o := ensembleCmd(t, "", "run", ens, "--state", db, "--run-id", id); o.code != 0 {
			t.Fatalf("run: exit %d\n%s", o.code, o.stderr)
		}
	}
	export := ensembleCmd(t, "", "state", "export", db, "--run-id", "one")
	if export.code != 0 {
		t.Fatalf("state export: exit %d\n%s", export.code, export.stderr)
	}
	js := filepath.Join(dir, "run.json")
	unfinished := filepath.Join(dir, "unfinished.json")
	if err := os.WriteFile(js, []byte(export.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	cut := strings.Replace(export.stdout, `"completion_reason": "completed"`, `"completion_reason": ""`, 1)
	if cut == export.stdout {
		t.Fatal("the export has no completion reason to remove")
	}
	if err := os.WriteFile(unfinished, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{db}, "needs --out DIR"},
		{[]string{db, "--out", out}, "holds 2 runs; name one with --run-id"},
		{[]string{db, "--out", out, "--run-id", "three"}, `holds no run "three"`},
		{[]string{unfinished, "--out", out}, "it is unfinished"},
		{[]string{js, "--out", out, "--run-id", "one"}, "JSON state file, which holds one run"},
	} {
		o := ensembleCmd(t, "", append([]string{"test", "capture"}, c.args...)...)
		if o.code != 2 || !strings.Contains(o.stderr, c.want) {
			t.Errorf("test capture %s: exit %d, want 2 and %q\n%s", strings.Join(c.args, " "), o.code, c.want, o.stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused capture wrote %s", out)
	}
	if o := ensembleCmd(t, "", "test", "capture", js, "--out", out); o.code != 0 {
		t.Fatalf("capture of a JSON state file: exit %d\n%s", o.code, o.stderr)
	}
	files := readDir(t, out)
	feature, _ := fileEnding(files, "hello-scripts.feature")
	if !strings.Contains(files[feature], `Given the ensemble "../../../`) {
		t.Errorf("the ensemble is not named relative to the folder:\n%s", files[feature])
	}
	if _, ok := fileEnding(files, ".responses.yaml"); ok {
		t.Errorf("a run of scripts alone has no replies to capture: %v", files)
	}
	if o := ensembleCmd(t, "", "test", out); o.code != 0 {
		t.Fatalf("test of the capture: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}

// A run made with --record (a tool loop, a fan-out, a child ensemble and a
// simulated user, against a model server) is captured with its recording:
// the test replays it with the server gone, and holds no key.
func TestCaptureOfARecordedRun(t *testing.T) {
	t.Parallel()
	srv := recordingServer(t)
	dir, path := writeRecordingEnsemble(t)
	key := "sk-recording-secret-123"
	env := map[string]string{"TEST_LLM_URL": srv.URL(), "TEST_LLM_KEY": key}
	db := filepath.Join(dir, "runs.db")
	o := ensembleEnv(t, env, "run", path, "--responses", filepath.Join(dir, "sim.yaml"), "--live-all",
		"--record", filepath.Join(dir, "recording"), "--record-tools", "--state", db)
	if o.code != 0 {
		t.Fatalf("record: exit %d: %s", o.code, o.stderr)
	}
	srv.Close()
	recorded := srv.Count()
	out := filepath.Join(dir, "captured")
	if o := ensembleCmd(t, "", "test", "capture", db, "--out", out); o.code != 0 {
		t.Fatalf("test capture: exit %d\n%s", o.code, o.stderr)
	}
	files := readDir(t, out)
	feature, _ := fileEnding(files, ".feature")
	for p, s := range files {
		if strings.Contains(s, key) {
			t.Errorf("%s holds the key", p)
		}
	}
	for _, w := range []string{"review.critic.yaml", "summarize[1].yaml", "approve.yaml"} {
		if _, ok := fileEnding(files, ".recording/"+w); !ok {
			t.Errorf("the recording's %s was not copied", w)
		}
	}
	// The recording answers the models; the simulated user's answer is
	// injected (its recording is of a model a test does not simulate).
	if resp, ok := fileEnding(files, ".responses.yaml"); !ok || !strings.Contains(files[resp], "approve:\n  - 'You are the manager.") || strings.Contains(files[resp], "critic") {
		t.Errorf("the responses file should hold the answer of approve alone:\n%s", files[resp])
	}
	for _, w := range []string{`agent "researcher" ran 1 time`, `agent "review/critic" ran 1 time`, `the output of agent "approve" is:`} {
		if !strings.Contains(files[feature], w) {
			t.Errorf("the capture has no %q:\n%s", w, files[feature])
		}
	}
	if o := ensembleCmd(t, "", "test", out); o.code != 0 {
		t.Fatalf("test of the capture: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if srv.Count() != recorded {
		t.Fatal("the test of the capture reached the model server")
	}
	// The model's recorded reply to the critic changes: the test fails.
	critic, _ := fileEnding(files, ".recording/review.critic.yaml")
	changed := strings.Replace(files[critic], "Criticise.", "Criticise!", 1)
	if changed == files[critic] {
		t.Fatalf("no prompt to change in\n%s", files[critic])
	}
	if err := os.WriteFile(critic, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := ensembleCmd(t, "", "test", out); o.code != 1 {
		t.Errorf("test after the recording changed: exit %d, want 1\n%s", o.code, o.stdout)
	}
}

// Replies and inputs that a responses file or a doc string would read
// otherwise (text that is JSON, doc string delimiters, blank lines) are
// written so that they read back the same.
func TestCaptureKeepsAwkwardText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"ensemble.yaml": `name: awkward
models:
  m: {provider: openai, model: x, base_url: "http://127.0.0.1:9/v1", api_key_env: NO_SUCH_KEY}
agents:
  - name: number
    model_profile: m
    prompt: Say a number.
  - name: quotes
    model_profile: m
    prompt: Quote.
    dependencies: [number]
  - name: windows
    model_profile: m
    prompt: Answer with CRLF line ends.
    dependencies: [quotes]
`,
		"responses.yaml": "number:\n  - '\"42\"'\nquotes:\n  - \"a doc string:\\n\\\"\\\"\\\"\\nand a fence ```\\n\\n  indented\"\nwindows:\n  - \"line one\\r\\nline two\\r\\n\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "runs.db")
	input := "first line\n\n  \"\"\" and ``` both\nlast"
	if o := ensembleCmd(t, "", "run", filepath.Join(dir, "ensemble.yaml"), "--responses", filepath.Join(dir, "responses.yaml"), "--state", db, "--input", input); o.code != 0 {
		t.Fatalf("run: exit %d\n%s", o.code, o.stderr)
	}
	out := filepath.Join(dir, "captured")
	if o := ensembleCmd(t, "", "test", "capture", db, "--out", out); o.code != 0 {
		t.Fatalf("test capture: exit %d\n%s", o.code, o.stderr)
	}
	got := readDir(t, out)
	resp, _ := fileEnding(got, ".responses.yaml")
	if !strings.Contains(got[resp], `'"42"'`) {
		t.Errorf("the string 42 is not written as JSON text:\n%s", got[resp])
	}
	if o := ensembleCmd(t, "", "test", out); o.code != 0 {
		t.Fatalf("test of the capture: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	// The expected text is checked: another one fails.
	feature, _ := fileEnding(got, ".feature")
	changed := strings.Replace(got[feature], "and a fence", "and no fence", 1)
	if err := os.WriteFile(feature, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := ensembleCmd(t, "", "test", out); o.code != 1 {
		t.Fatalf("test after an output changed: exit %d, want 1\n%s", o.code, o.stdout)
	}
}
