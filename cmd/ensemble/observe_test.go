package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/internal/fakemodel"
)

// toolEnsemble is an ensemble whose LLM agent calls a tool twice (in one
// reply), then answers in two lines; its model is fakeModel.
const toolEnsemble = `name: tool-run
input: Which region leads?
models:
  fake:
    provider: openai
    model: fake-model
    base_url: ${FAKE_MODEL_URL}
tools:
  - name: lookup
    description: Sales of one region
    parameters: {type: object, properties: {region: {type: string}}, required: [region]}
    script: lookup.sh
agents:
  - name: prep
    script: prep.sh
  - name: analyst
    model_profile: fake
    prompt: Find the leading region.
    tools: [lookup]
    dependencies: [prep]
`

const answer = "EMEA leads with 1.24M.\nAPAC shrank."

// fakeModel speaks Chat Completions, plain or streamed as the request asks:
// a reply with two tool calls, then, once the conversation holds tool
// results, the answer (streamed in three pieces).
func fakeModel(t *testing.T) *fakemodel.Server {
	return fakemodel.New(t, func(r fakemodel.Request) fakemodel.Reply {
		if r.Last().Role == "tool" {
			return fakemodel.Reply{Text: answer, Chunks: []string{"EMEA leads", " with 1.24M.\nAPAC", " shrank."}}
		}
		return fakemodel.Reply{Calls: []fakemodel.Call{
			{ID: "call_1", Name: "lookup", Args: `{"region":"EMEA"}`},
			{ID: "call_2", Name: "lookup", Args: `{"region":"APAC"}`}}}
	}, fakemodel.WithUsage(100, 20))
}

// toolRun writes toolEnsemble and its scripts in a new folder, and runs it
// with args, where $DIR stands for that folder.
func toolRun(t *testing.T, args ...string) (outcome, string) {
	t.Helper()
	srv := fakeModel(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"ensemble.yaml": toolEnsemble,
		"prep.sh":       "#!/bin/sh\necho '{\"regions\": [\"EMEA\", \"APAC\"]}'\n",
		"lookup.sh":     "#!/bin/sh\necho \"sales of $(cat)\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$DIR", dir)
	}
	o := ensembleEnv(t, map[string]string{"FAKE_MODEL_URL": srv.URL()},
		append([]string{"run", filepath.Join(dir, "ensemble.yaml")}, args...)...)
	return o, dir
}

type jsonlRun struct {
	events []map[string]any
	counts map[string]int
	result struct {
		TurnCount           int              `json:"turn_count"`
		CompletionReason    string           `json:"completion_reason"`
		ConversationHistory []map[string]any `json:"conversation_history"`
		Warnings            []any            `json:"warnings"`
		FinalState          map[string]any   `json:"final_state"`
		Usage               struct {
			Requests     int `json:"requests"`
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
}

// parseJSONL checks the stream line by line and that its counts match the
// result carried by the last event.
func parseJSONL(t *testing.T, stdout string) *jsonlRun {
	t.Helper()
	known := map[string]bool{}
	for _, ty := range events.Types {
		known[string(ty)] = true
	}
	r := &jsonlRun{counts: map[string]int{}}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d is not one JSON object: %v\n%s", i+1, err, l)
		}
		ty, _ := ev["type"].(string)
		if !known[ty] {
			t.Fatalf("line %d: unknown type %q", i+1, ty)
		}
		ts, _ := ev["timestamp"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
			t.Fatalf("line %d: timestamp %q: %v", i+1, ts, err)
		}
		r.counts[ty]++
		r.events = append(r.events, ev)
	}
	first, last := r.events[0], r.events[len(r.events)-1]
	if first["type"] != "run_started" || last["type"] != "run_completed" || r.counts["run_started"] != 1 || r.counts["run_completed"] != 1 {
		t.Fatalf("the stream runs from %v to %v: %v", first["type"], last["type"], r.counts)
	}
	b, _ := json.Marshal(last["result"])
	if err := json.Unmarshal(b, &r.result); err != nil {
		t.Fatal(err)
	}
	res := &r.result
	// A resumed run's stream starts after the turns it resumed from
	// (run_started's turn); its counts match the rest of the result.
	from, _ := first["turn"].(float64)
	history, turns := 0, res.TurnCount-int(from)
	toolResults := 0
	for _, rec := range res.ConversationHistory {
		if rec["turn_number"].(float64) <= from {
			continue
		}
		history += 1 + childRecords(rec) // a child ensemble's agents report their events too
		msgs, _ := rec["input_data"].([]any)
		for _, m := range msgs {
			if m, _ := m.(map[string]any); m["role"] == "tool" {
				toolResults++
			}
		}
	}
	warnings := 0
	for _, w := range res.Warnings {
		if w.(map[string]any)["turn_number"].(float64) > from {
			warnings++
		}
	}
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"agent_completed + agent_failed = history records", r.counts["agent_completed"] + r.counts["agent_failed"], history},
		{"agent_started = history records", r.counts["agent_started"], history},
		{"agent_finished = history records", r.counts["agent_finished"], history},
		{"turn_started = turn_count", r.counts["turn_started"], turns},
		{"turn_completed = turn_count", r.counts["turn_completed"], turns},
		{"warning = warnings", r.counts["warning"], warnings},
		{"tool_call_started = tool results in the history", r.counts["tool_call_started"], toolResults},
		{"tool_call_completed = tool results in the history", r.counts["tool_call_completed"], toolResults},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	return r
}

func TestJSONLinesCountsMatchTheResult(t *testing.T) {
	t.Parallel()
	for _, ex := range []string{"iterative-analysis", "writer-reviewer", "runaway-loop", "local-ollama", "build-loop", "routing"} {
		t.Run(ex, func(t *testing.T) {
			t.Parallel()
			dir := "../../examples/" + ex + "/"
			o := ensembleCmd(t, "", "run", dir+"ensemble.yaml", "--responses", dir+"responses.yaml", "--output", "jsonl")
			if o.code != 0 && o.code != 3 {
				t.Fatalf("exit %d: %s", o.code, o.stderr)
			}
			r := parseJSONL(t, o.stdout)
			if r.result.TurnCount == 0 {
				t.Fatal("nothing ran")
			}
		})
	}
}

func TestJSONLinesWithToolCalls(t *testing.T) {
	t.Parallel()
	o, _ := toolRun(t, "--output", "jsonl")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	r := parseJSONL(t, o.stdout)
	if r.counts["tool_call_completed"] != 2 || r.counts["text_delta"] != 0 {
		t.Fatalf("counts %v", r.counts)
	}
	if u := r.result.Usage; u.Requests != 2 || u.InputTokens != 200 || u.OutputTokens != 40 {
		t.Fatalf("usage %+v", u)
	}
	for _, ev := range r.events {
		if ev["type"] == "tool_call_completed" && (ev["agent"] != "analyst" || ev["turn"] != 2.0 ||
			!strings.HasPrefix(ev["output"].(string), "sales of {\"region\":")) {
			t.Fatalf("tool call event %v", ev)
		}
	}
}

func TestStreamTurnsTextIntoEvents(t *testing.T) {
	t.Parallel()
	o, _ := toolRun(t, "--output", "jsonl", "--stream")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	r := parseJSONL(t, o.stdout)
	var text strings.Builder
	for _, ev := range r.events {
		if ev["type"] == "text_delta" {
			if ev["agent"] != "analyst" || ev["turn"] != 2.0 {
				t.Fatalf("delta %v", ev)
			}
			text.WriteString(ev["message"].(string))
		}
	}
	if text.String() != answer || r.result.FinalState["analyst"] != answer || r.counts["tool_call_completed"] != 2 {
		t.Fatalf("streamed %q, output %q, counts %v", text.String(), r.result.FinalState["analyst"], r.counts)
	}
}

func TestTextProgressShowsToolsAndStreamedText(t *testing.T) {
	t.Parallel()
	o, _ := toolRun(t, "--output", "text", "--stream")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	for _, want := range []string{
		"turn 2: analyst\n",
		`    → analyst: lookup {"region":"EMEA"}` + "\n",
		`    ← analyst: lookup (`,
		"    │ analyst: EMEA leads with 1.24M.\n    │ analyst: APAC shrank.\n",
		"  ✓ analyst (",
		"requests  in tokens  out tokens",
		"usage: 2 requests, 200 input tokens, 40 output tokens",
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "\x1b[") {
		t.Error("terminal control codes without a terminal")
	}
	// Without --stream, no streamed text.
	if o, _ := toolRun(t, "--output", "text"); strings.Contains(o.stdout, "│") {
		t.Errorf("streamed text without --stream:\n%s", o.stdout)
	}
}

// normalizeReport replaces what changes from run to run in a report.
func normalizeReport(s string) string {
	for _, r := range []struct{ re, repl string }{
		{`\| started \| [^|]+ \|`, `| started | T |`},
		{`started [0-9:.]+`, `started T`},
		{`[0-9]+\.[0-9]{2}s|[0-9]+m[0-9]{2}s`, `Ns`},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.repl)
	}
	return s
}

func TestReportGolden(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.md")
	o := ensembleCmd(t, "", "run", example+"ensemble.yaml", "--responses", example+"responses.yaml", "--output", "json", "--report", path)
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatalf("--report changed stdout: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report-iterative-analysis.md", normalizeReport(string(b)))
}

func TestReportHasToolCalls(t *testing.T) {
	t.Parallel()
	o, dir := toolRun(t, "--output", "json", "--report", "$DIR/report.md")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []string{
		"**Tool call 1: `lookup`**", "**Tool call 2: `lookup`**", `Arguments: ` + "`" + `{"region":"APAC"}` + "`",
		"sales of {\"region\":\"EMEA\"}", "| `analyst` | llm | 1 | 0 |", "| usage | 2 requests, 200 input tokens, 40 output tokens |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

func TestReportPathIsCheckedBeforeRunning(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "run", example+"ensemble.yaml", "--responses", example+"responses.yaml", "--report", "/nonexistent/dir/r.md")
	if o.code != 2 || !strings.Contains(o.stderr, "--report") || o.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
}

// childRecords counts the records of the child ensembles run by the
// execution of rec, every loop iteration and every level.
func childRecords(rec map[string]any) int {
	child, _ := rec["child"].(map[string]any)
	if child == nil {
		return 0
	}
	runs := []map[string]any{child}
	earlier, _ := child["earlier_iterations"].([]any)
	for _, e := range earlier {
		runs = append(runs, e.(map[string]any))
	}
	n := 0
	for _, run := range runs {
		recs, _ := run["conversation_history"].([]any)
		for _, r := range recs {
			n += 1 + childRecords(r.(map[string]any))
		}
	}
	return n
}
