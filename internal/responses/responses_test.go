package responses

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/runners"
)

const specResponses = `# the example of docs/testing.md#the-responses-file
user_clarification: ["Q3 only, EMEA region"]
llm_analyzer:
  - {needs_clarification: true, question: "Which quarter?"}
  - {needs_clarification: false, analysis: "EMEA grew 12%", count: 2, ratio: 0.5, tags: [a, 1, null], when: 2024-01-02}
  - "42"
  - 42
  - '{"from": "text"}'
  - {success: false, error: "just data"}
`

// analysisEnsemble has the agents of the iterative-analysis example.
func analysisEnsemble(t *testing.T) *ensemble.Ensemble {
	t.Helper()
	return testEnsemble(t,
		scriptAgent("data_extractor", "echo.py", map[string]any{"k": "v"}),
		&ensemble.Agent{Name: "llm_analyzer", Kind: llmKind{}, Spec: "json"},
		&ensemble.Agent{Name: "writer", Kind: llmKind{}},
		askAgent("user_clarification", "Clarify?", "llm_analyzer"),
	)
}

func TestParseResponsesValues(t *testing.T) {
	t.Parallel()
	r, err := ParseResponses("responses.yaml", []byte(specResponses))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Agents(); !reflect.DeepEqual(got, []string{"user_clarification", "llm_analyzer"}) {
		t.Errorf("agents %q", got)
	}
	uc := r.Entry("user_clarification")
	if uc.File != "responses.yaml" || uc.Pos != (ensemble.Pos{Line: 2, Column: 1}) {
		t.Errorf("entry position %s:%+v", uc.File, uc.Pos)
	}
	want := []any{
		map[string]any{"needs_clarification": true, "question": "Which quarter?"},
		map[string]any{"needs_clarification": false, "analysis": "EMEA grew 12%", "count": 2.0, "ratio": 0.5,
			"tags": []any{"a", 1.0, nil}, "when": "2024-01-02"},
		"42",
		42.0,
		`{"from": "text"}`,
		map[string]any{"success": false, "error": "just data"},
	}
	if got := r.Entry("llm_analyzer").Values; !reflect.DeepEqual(got, want) {
		t.Errorf("values\n got %#v\nwant %#v", got, want)
	}
}

func TestParseResponsesSimulate(t *testing.T) {
	t.Parallel()
	r, err := ParseResponses("r.yaml", []byte("user_clarification:\n  simulate:\n    model_profile: local\n    prompt: You are a sales manager.\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Entry("user_clarification").Simulate
	if s == nil || s.ModelProfile != "local" || s.Prompt != "You are a sales manager." || s.Pos.Line != 3 {
		t.Fatalf("simulate %+v", s)
	}
	if err := r.Validate(analysisEnsemble(t)); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseResponsesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"syntax", "a: [1, 2\nb: c\n", []string{`r.yaml:1:4: this list is not closed: "]" is missing`}},
		// YAML errors read as in ensemble files (ensemble.ParseYAML).
		{"tab", "writer:\n\t- a\n", []string{"r.yaml:2:1: tab character used for indentation; YAML needs spaces"}},
		{"bad indentation", "writer:\n  - a\n - b\n", []string{"r.yaml:3:2: bad indentation"}},
		{"two documents", "writer: [a]\n---\nreviewer: [b]\n", []string{"r.yaml:3:1: only one YAML document is allowed per file"}},
		{"top level list", "- a\n- b\n", []string{"r.yaml:1:1: a responses file is a mapping"}},
		{"scalar entry", "writer: hello\n", []string{`r.yaml:1:9: responses for agent "writer" must be a list`}},
		{"plain object entry", "writer: {a: 1}\n", []string{`r.yaml:1:10: unknown key "a" for agent "writer"`}},
		{"duplicate agent", "writer: [a]\nwriter: [b]\n", []string{`r.yaml:2:1: agent "writer" is listed twice (first at line 1)`}},
		{"unknown simulate key", "x:\n  simulate: {model_profile: m, prompt: p, temperature: 1}\n",
			[]string{`r.yaml:2:43: unknown key "temperature" in simulate (known: model_profile, prompt)`}},
		{"simulate without prompt", "x:\n  simulate: {model_profile: m}\n", []string{"r.yaml:2:13: simulate needs a prompt"}},
		{"simulate not a mapping", "x: {simulate: small}\n", []string{"r.yaml:1:15: simulate must be a mapping"}},
		{"every problem", "a: 1\nb: 2\n", []string{`r.yaml:1:4: responses for agent "a"`, `r.yaml:2:4: responses for agent "b"`}},
		{"infinity", "x: [.inf]\n", []string{"r.yaml:1:5: .inf is not a JSON number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseResponses("r.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseResponsesEmptyAndAnchors(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"", "# nothing\n", "~\n"} {
		r, err := ParseResponses("r.yaml", []byte(src))
		if err != nil || len(r.Agents()) != 0 {
			t.Errorf("%q: %v %v", src, r.Agents(), err)
		}
	}
	r, err := ParseResponses("r.yaml", []byte("base: &b {kind: draft, n: 1}\nwriter:\n  - *b\n  - {<<: *b, n: 2}\n"))
	if err == nil {
		t.Fatalf("base is not a list, want an error")
	}
	r, err = ParseResponses("r.yaml", []byte("writer:\n  - &b {kind: draft, n: 1}\n  - {<<: *b, n: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{map[string]any{"kind": "draft", "n": 1.0}, map[string]any{"kind": "draft", "n": 2.0}}
	if got := r.Entry("writer").Values; !reflect.DeepEqual(got, want) {
		t.Errorf("values %#v", got)
	}
}

func TestLoadResponsesAndValidate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "responses.yaml")
	src := "writer: [draft]\nghost: [boo]\nuser_clarification:\n  simulate: {model_profile: nope, prompt: p}\nllm_analyzr: [x]\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LoadResponses(path)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Validate(analysisEnsemble(t))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		path + `:2:1: unknown agent "ghost" in responses` + "\n",
		path + `:5:1: unknown agent "llm_analyzr" in responses; did you mean "llm_analyzer"?`,
		path + `:4:29: agent "user_clarification": simulate uses unknown model profile "nope"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := LoadResponses(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file: no error")
	}

	// Added in code: no position.
	r = NewResponses()
	r.AddText("ghost", "x")
	if err := r.Validate(analysisEnsemble(t)); err == nil || err.Error() != `injected responses: unknown agent "ghost" in responses` {
		t.Errorf("err = %v", err)
	}
}

// countingRunner counts the executions it is handed.
type countingRunner struct{ n atomic.Int32 }

func (c *countingRunner) Run(ctx context.Context, req *agent.Request) *agent.Result {
	c.n.Add(1)
	return &agent.Result{Output: "ran " + req.Agent.Name}
}

func TestInjectedRunner(t *testing.T) {
	t.Parallel()
	e := analysisEnsemble(t)
	r, err := ParseResponses("responses.yaml", []byte(specResponses+
		"writer: ['plain reply', '{\"a\": [1, 2]}', '```json\n{\"fenced\": true}\n```']\n"+
		"data_extractor: [{rows: 3}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	next := &countingRunner{}
	inj := Injected(r, next)
	run := func(name string, execution int) *agent.Result {
		return inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent(name), Input: "in", Turn: execution, Execution: execution,
			Dependencies: map[string]any{"x": 1.0}})
	}
	tests := []struct {
		agent     string
		execution int
		want      any
		wantErr   string
	}{
		{"llm_analyzer", 1, map[string]any{"needs_clarification": true, "question": "Which quarter?"}, ""},
		{"llm_analyzer", 3, 42.0, ""}, // a string for a json agent: parsed as JSON
		{"llm_analyzer", 4, 42.0, ""},
		{"llm_analyzer", 5, map[string]any{"from": "text"}, ""},
		{"llm_analyzer", 6, map[string]any{"success": false, "error": "just data"}, ""}, // data, not a failure
		{"llm_analyzer", 7, nil, `agent "llm_analyzer": injected responses exhausted after 6`},
		{"user_clarification", 1, "Q3 only, EMEA region", ""},
		{"user_clarification", 2, nil, `agent "user_clarification": injected responses exhausted after 1`},
		{"writer", 1, "plain reply", ""},
		{"writer", 2, map[string]any{"a": []any{1.0, 2.0}}, ""},
		{"writer", 3, "```json {\"fenced\": true} ```", ""}, // text agent: fences are text (YAML folded the newlines)
		{"data_extractor", 1, map[string]any{"rows": 3.0}, ""},
	}
	for _, tt := range tests {
		res := run(tt.agent, tt.execution)
		if tt.wantErr != "" {
			if res.Err == nil || !strings.Contains(res.Err.Error(), tt.wantErr) {
				t.Errorf("%s #%d: err = %v, want %q", tt.agent, tt.execution, res.Err, tt.wantErr)
			}
			continue
		}
		if res.Err != nil {
			t.Errorf("%s #%d: %v", tt.agent, tt.execution, res.Err)
			continue
		}
		if !reflect.DeepEqual(res.Output, tt.want) {
			t.Errorf("%s #%d: output %#v, want %#v", tt.agent, tt.execution, res.Output, tt.want)
		}
		in := res.InputData.(map[string]any)
		if in["injected_response"] != tt.execution || in["input"] != "in" || in["dependencies"] == nil {
			t.Errorf("%s #%d: input_data %#v", tt.agent, tt.execution, in)
		}
	}
	if next.n.Load() != 0 {
		t.Errorf("an injected agent reached the next runner")
	}
	// The output is a copy: changing it leaves the responses alone.
	res := run("llm_analyzer", 1)
	res.Output.(map[string]any)["question"] = "changed"
	if again := run("llm_analyzer", 1); again.Output.(map[string]any)["question"] != "Which quarter?" {
		t.Error("outputs share memory with the responses")
	}
	// Script agents' input data carries their parameters.
	if in := run("data_extractor", 1).InputData.(map[string]any); !reflect.DeepEqual(in["parameters"], map[string]any{"k": "v"}) {
		t.Errorf("script input_data %#v", in)
	}
	// Agents without an entry run for real.
	e2 := testEnsemble(t, scriptAgent("other", "echo.py", nil))
	if res := inj.Run(context.Background(), &agent.Request{Ensemble: e2, Agent: e2.Agent("other"), Execution: 1}); res.Output != "ran other" || next.n.Load() != 1 {
		t.Errorf("delegation: %#v", res)
	}
}

func TestInjectedJSONAgentRejectsNonJSONText(t *testing.T) {
	t.Parallel()
	e := analysisEnsemble(t)
	r := NewResponses()
	r.AddText("llm_analyzer", "Sure! Here you go: not json")
	r.AddText("llm_analyzer", "Here it is:\n```json\n{\"needs_clarification\": false}\n```\nAnything else?")
	inj := Injected(r, nil)
	res := inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("llm_analyzer"), Execution: 1})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "output_format is json") {
		t.Errorf("err = %v", res.Err)
	}
	res = inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("llm_analyzer"), Execution: 2})
	if res.Err != nil || !reflect.DeepEqual(res.Output, map[string]any{"needs_clarification": false}) {
		t.Errorf("fenced: %#v %v", res.Output, res.Err)
	}
}

func TestResponsesAddNormalizes(t *testing.T) {
	t.Parallel()
	e := analysisEnsemble(t)
	r := NewResponses()
	r.Add("writer", map[string]any{"count": 2, "nested": []int{1, 2}})
	r.Add("writer", struct {
		Name string `json:"name"`
	}{"x"})
	r.AddText("writer", `{"count": 2}`)
	want := []any{
		map[string]any{"count": 2.0, "nested": []any{1.0, 2.0}},
		map[string]any{"name": "x"},
		`{"count": 2}`,
	}
	if got := r.Entry("writer").Values; !reflect.DeepEqual(got, want) {
		t.Errorf("values %#v", got)
	}
	inj := Injected(r, nil)
	res := inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("writer"), Execution: 3})
	if !reflect.DeepEqual(res.Output, map[string]any{"count": 2.0}) {
		t.Errorf("text reply parsed to %#v", res.Output)
	}
	// An empty list: the first execution already fails.
	r2, err := ParseResponses("r.yaml", []byte("writer: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	res = Injected(r2, nil).Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("writer"), Execution: 1})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "exhausted after 0") {
		t.Errorf("err = %v", res.Err)
	}
}

func TestResponsesMerge(t *testing.T) {
	t.Parallel()
	file, err := ParseResponses("r.yaml", []byte("writer: [one]\nuser_clarification: {simulate: {model_profile: local, prompt: p}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewResponses()
	r.AddText("writer", "zero")
	r.Merge(file)
	r.AddText("writer", "two")
	if got := r.Entry("writer").Values; !reflect.DeepEqual(got, []any{"zero", "one", "two"}) {
		t.Errorf("merged %#v", got)
	}
	if r.Entry("user_clarification").Simulate == nil {
		t.Error("simulation lost")
	}
	if got := file.Entry("writer").Values; len(got) != 1 {
		t.Errorf("Merge changed its argument: %#v", got)
	}

	// A merged entry is reported where the file names it, line shown.
	ghost, err := ParseResponses("g.yaml", []byte("ghost: [boo]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r = NewResponses()
	r.Merge(ghost)
	var list *ensemble.ErrorList
	if err := r.Validate(analysisEnsemble(t)); !errors.As(err, &list) || len(*list) != 1 ||
		(*list)[0].Line != 1 || (*list)[0].Source != "ghost: [boo]" {
		t.Errorf("merged entry: err = %#v", err)
	}
}

func TestInjectedSimulate(t *testing.T) {
	t.Parallel()
	e := analysisEnsemble(t)
	r := NewResponses()
	r.SetSimulate("user_clarification", "local", "You are a sales manager.")
	inj := Injected(r, nil)
	req := &agent.Request{Ensemble: e, Agent: e.Agent("user_clarification"), Execution: 1}
	res := inj.Run(context.Background(), req)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "no provider is available yet") || !strings.Contains(res.Err.Error(), `"local"`) {
		t.Errorf("err = %v", res.Err)
	}
	inj.Simulate = func(ctx context.Context, req *agent.Request, profile, prompt string) *agent.Result {
		return &agent.Result{Output: profile + ": " + prompt}
	}
	if res := inj.Run(context.Background(), req); res.Err != nil || res.Output != "local: You are a sales manager." {
		t.Errorf("simulated: %#v", res)
	}
}

func TestParseJSONReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text    string
		want    any
		wantErr bool
	}{
		{`{"a": 1}`, map[string]any{"a": 1.0}, false},
		{"  [1, 2] \n", []any{1.0, 2.0}, false},
		{"```json\n{\"a\": true}\n```", map[string]any{"a": true}, false},
		{"Here:\n```JSON\n{\"a\": 2}\n```\nDone.", map[string]any{"a": 2.0}, false},
		{"```\n{\"plain\": 1}\n```", map[string]any{"plain": 1.0}, false},
		{"```python\nx = 1\n```\n```json\n{\"b\": 1}\n```", map[string]any{"b": 1.0}, false},
		{"```json\n{\"truncated\": 1}", map[string]any{"truncated": 1.0}, false},
		{"```json {\"inline\": 1} ```", map[string]any{"inline": 1.0}, false},
		{"```{\"inline\": 2}```", map[string]any{"inline": 2.0}, false},
		{"text ```json\n[1]\n``` more ```json\n[2]\n```", []any{1.0}, false},
		{"no json here", nil, true},
		{"", nil, true},
		{"```json\n{bad}\n```", nil, true},
	}
	for _, tt := range tests {
		got, err := runners.ParseJSONReply(tt.text)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v", tt.text, err)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %#v, want %#v", tt.text, got, tt.want)
		}
	}
}

func TestResponseErrorsAreLoaderErrors(t *testing.T) {
	t.Parallel()
	_, err := ParseResponses("f.yaml", []byte("b: [ok]\na: 1\n"))
	var list *ensemble.ErrorList
	if !errors.As(err, &list) || len(*list) != 1 {
		t.Fatalf("err = %#v", err)
	}
	e := (*list)[0]
	if e.File != "f.yaml" || e.Line != 2 || e.Column != 4 || e.Source != "a: 1" {
		t.Errorf("error %#v", e)
	}
	if !strings.Contains(e.Pretty(), "a: 1\n") {
		t.Errorf("pretty:\n%s", e.Pretty())
	}
}

// TestInjectedLiveGuardsTheModels: with Live set, an LLM agent without an
// entry fails with Live's error and never reaches the next runner, unless
// Live lets it through; an entry that simulates or is an empty list counts as
// an entry; script and ask agents without an entry run for real.
func TestInjectedLiveGuardsTheModels(t *testing.T) {
	t.Parallel()
	llmAgent := func(name string) *ensemble.Agent {
		return &ensemble.Agent{Name: name, Kind: llmKind{}}
	}
	e := testEnsemble(t, llmAgent("covered"), llmAgent("empty"), llmAgent("simulated"), llmAgent("uncovered"),
		llmAgent("let_through"), scriptAgent("script", "echo.py", nil), askAgent("asker", "?"))
	r, err := ParseResponses("r.yaml", []byte("covered: [hi]\nempty: []\nsimulated:\n  simulate: {model_profile: local, prompt: p}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reached := map[string]bool{}
	inj := Injected(r, agent.RunnerFunc(func(_ context.Context, req *agent.Request) *agent.Result {
		mu.Lock()
		defer mu.Unlock()
		reached[req.Agent.Name] = true
		return &agent.Result{Output: "real"}
	}))
	inj.Simulate = func(_ context.Context, req *agent.Request, profile, _ string) *agent.Result {
		return &agent.Result{Output: "simulated by " + profile}
	}
	inj.Live = func(agent string) error {
		if agent == "let_through" {
			return nil
		}
		return fmt.Errorf("agent %q would call the real model", agent)
	}
	tests := []struct {
		agent, want, wantErr string
	}{
		{agent: "covered", want: "hi"},
		{agent: "empty", wantErr: `agent "empty": injected responses exhausted after 0 (execution 1 has none)`},
		{agent: "simulated", want: "simulated by local"},
		{agent: "uncovered", wantErr: `agent "uncovered" would call the real model`},
		{agent: "let_through", want: "real"},
		{agent: "script", want: "real"},
		{agent: "asker", want: "real"},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			t.Parallel()
			res := inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent(tt.agent), Turn: 1, Execution: 1})
			if tt.wantErr != "" {
				if res.Err == nil || res.Err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", res.Err, tt.wantErr)
				}
				return
			}
			if res.Err != nil || res.Output != tt.want {
				t.Fatalf("output %#v, err %v; want %q", res.Output, res.Err, tt.want)
			}
		})
	}
	t.Cleanup(func() {
		if reached["uncovered"] || reached["empty"] {
			t.Errorf("a guarded agent reached the real runner: %v", reached)
		}
	})
}

// Injected responses are capped in nesting like every other output: reply
// text (for text and json agents) and structured values.
func TestInjectedOutputDepthIsCapped(t *testing.T) {
	t.Parallel()
	e := analysisEnsemble(t)
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, name := range []string{"writer", "llm_analyzer"} { // text, then output_format json
		r := NewResponses()
		r.AddText(name, deep(512))
		r.AddText(name, deep(513))
		r.Add(name, nested(512))
		r.Add(name, nested(513))
		inj := Injected(r, nil)
		for n, tooDeep := range []bool{false, true, false, true} {
			res := inj.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent(name), Execution: n + 1})
			if tooDeep != errors.Is(res.Err, runners.ErrTooDeep) || (!tooDeep && !reflect.DeepEqual(res.Output, nested(512))) {
				t.Errorf("%s #%d: err = %v", name, n+1, res.Err)
			}
		}
	}
}

// A responses file larger than MaxResponsesFile is refused from its size,
// before anything is read.
func TestLoadResponsesRefusesAHugeFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxResponsesFile + 1); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	if _, err := LoadResponses(path); err == nil || !strings.Contains(err.Error(), path+": larger than 1GiB") {
		t.Errorf("err %v", err)
	}
}

// An alias bomb (each level ten aliases of the one before) is refused once
// the file's values would outgrow a few times the file, wherever its
// aliases are used: one budget for the whole file, not one per response.
func TestResponsesAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("bomb:\n  - {l0: &l0 [x, x, x, x, x, x, x, x, x, x]}\n")
	for i := 1; i <= 4; i++ { // l4: 100,000 values
		fmt.Fprintf(&b, "  - {l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]}\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("agent:\n")
	for range 200 {
		b.WriteString("  - *l4\n") // each 100,000 values: under a per-response budget
	}
	_, err := ParseResponses("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "too large (too many aliases?)") {
		t.Fatalf("err %v", err)
	}
}

// LoadResponsesFor reports a file's malformed entries and its unknown
// agents and profiles in one list, in file order: a user fixes them all
// at once, not one kind after another.
func TestLoadResponsesForReportsEverything(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.yaml")
	body := "writer: just a string\nnobody: [x]\nuser_clarification:\n  simulate: {model_profile: ghost, prompt: hi}\nllm_analyzer: [{a: 1}]\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadResponsesFor(path, analysisEnsemble(t))
	want := path + `:1:9: responses for agent "writer" must be a list (put [ ] around a single response) or {simulate: {model_profile, prompt}}
` + path + `:2:1: unknown agent "nobody" in responses
` + path + `:4:29: agent "user_clarification": simulate uses unknown model profile "ghost"`
	if err == nil || err.Error() != want {
		t.Fatalf("err:\n%v\nwant:\n%s", err, want)
	}
	if err := os.WriteFile(path, []byte("llm_analyzer: [{a: 1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := LoadResponsesFor(path, analysisEnsemble(t)); err != nil || r.Entry("llm_analyzer") == nil {
		t.Fatalf("r %v err %v", r, err)
	}
}

// A bomb of nested merge keys (each level merging the one before twice)
// is measured, not expanded, and refused.
func TestResponsesMergeBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("x:\n  - &l0 {a: 1}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "  - &l%d {<<: [*l%d, *l%d], k%d: %d}\n", i, i-1, i-1, i, i)
	}
	_, err := ParseResponses("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "bomb.yaml:1:1: response is too large (too many aliases?)") {
		t.Fatalf("err %v", err)
	}
}
