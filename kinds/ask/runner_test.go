package ask

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/runners"
)

func askAgent(name, question string, deps ...string) *ensemble.Agent {
	a := &ensemble.Agent{Name: name, Kind: Kind{}, Spec: &Spec{Question: question}}
	for _, d := range deps {
		a.Dependencies = append(a.Dependencies, &ensemble.Dependency{AgentName: d, RequiresAll: true})
	}
	return a
}

// testEnsemble builds an ensemble of agents by hand.
func testEnsemble(t *testing.T, agents ...*ensemble.Agent) *ensemble.Ensemble {
	t.Helper()
	e := &ensemble.Ensemble{Name: "test", Dir: t.TempDir(), Agents: agents,
		Models: map[string]*ensemble.ModelProfile{"efficient": {Name: "efficient", Provider: "openai", Model: "m"}}}
	e.Index()
	return e
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAskReadsAnswers(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t,
		&ensemble.Agent{Name: "writer"},
		&ensemble.Agent{Name: "analyzer"},
		askAgent("clarify", "The analyzer needs clarification.", "analyzer", "writer"),
	)
	var out syncBuffer
	ask := &Runner{In: strings.NewReader("  Q3 only, EMEA region  \n{\"approved\": true, \"n\": 2}\n\nlast line without newline"), Out: &out, Interactive: true}
	req := &agent.Request{
		Ensemble: e, Agent: e.Agent("clarify"), Turn: 2, Execution: 1,
		Dependencies:      map[string]any{"writer": "a draft\non two lines", "analyzer": map[string]any{"question": "Which quarter?"}},
		Fresh:             []string{"analyzer"},
		RequestParameters: map[string]any{"topic": "sales"},
	}
	wants := []any{"Q3 only, EMEA region", map[string]any{"approved": true, "n": 2.0}, "", "last line without newline"}
	for i, want := range wants {
		req.Execution = i + 1
		res := ask.Run(context.Background(), req)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if !reflect.DeepEqual(res.Output, want) {
			t.Errorf("answer %d = %#v, want %#v", i+1, res.Output, want)
		}
	}
	shown := out.String()
	for _, want := range []string{
		"clarify asks (turn 2)",
		"The analyzer needs clarification.",
		"analyzer (new):\n  {\n    \"question\": \"Which quarter?\"\n  }",
		"writer:\n  a draft\n  on two lines",
		"request parameters:",
		"Your answer (one line): ",
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("prompt lacks %q:\n%s", want, shown)
		}
	}
	// Dependencies in declaration order: analyzer before writer.
	if strings.Index(shown, "analyzer (new):") > strings.Index(shown, "writer:") {
		t.Errorf("dependencies out of order:\n%s", shown)
	}
	res := ask.Run(context.Background(), req)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "input ended") {
		t.Errorf("after the input ended: err = %v", res.Err)
	}
}

func TestAskNonInteractive(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, askAgent("x", "Approve?"))
	for _, ask := range []*Runner{
		{In: strings.NewReader("yes\n"), Interactive: false},
		{Interactive: true}, // no reader at all
	} {
		res := ask.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("x"), Turn: 1, Execution: 1})
		want := `agent "x" asks a human but there is no terminal; add --state FILE to wait for the answer, or inject a response with --responses`
		if res.Err == nil || res.Err.Error() != want {
			t.Errorf("err = %v, want %q", res.Err, want)
		}
	}
}

func TestAskConcurrentAsksDoNotInterleave(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, askAgent("a", "Question A?"), askAgent("b", "Question B?"))
	var out syncBuffer
	ask := &Runner{In: strings.NewReader("first\nsecond\n"), Out: &out, Interactive: true}
	results := map[string]*agent.Result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			res := ask.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent(name), Turn: 1, Execution: 1})
			mu.Lock()
			results[name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	shown := out.String()
	ia, ib := strings.Index(shown, "Question A?"), strings.Index(shown, "Question B?")
	if ia < 0 || ib < 0 {
		t.Fatalf("prompts missing:\n%s", shown)
	}
	firstAgent, secondAgent := "a", "b"
	if ib < ia {
		firstAgent, secondAgent = "b", "a"
	}
	if results[firstAgent].Output != "first" || results[secondAgent].Output != "second" {
		t.Errorf("answers crossed: %s got %#v, %s got %#v", firstAgent, results[firstAgent].Output, secondAgent, results[secondAgent].Output)
	}
	// Each prompt is written whole, one after the other.
	reqFor := func(name string) *agent.Request {
		return &agent.Request{Ensemble: e, Agent: e.Agent(name), Turn: 1, Execution: 1}
	}
	if want := FormatAsk(reqFor(firstAgent)) + FormatAsk(reqFor(secondAgent)); shown != want {
		t.Errorf("prompts interleaved:\n%q\nwant\n%q", shown, want)
	}
}

func TestAskCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, askAgent("x", "Approve?"))
	pr, pw := io.Pipe()
	ask := &Runner{In: pr, Out: io.Discard, Interactive: true}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res := ask.Run(ctx, &agent.Request{Ensemble: e, Agent: e.Agent("x"), Turn: 1, Execution: 1})
	if !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", res.Err)
	}
	// The line typed afterwards answers the next question.
	go func() { _, _ = io.WriteString(pw, "later\n") }()
	res = ask.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("x"), Turn: 2, Execution: 2})
	if res.Err != nil || res.Output != "later" {
		t.Errorf("next ask: %#v %v", res.Output, res.Err)
	}
}

func TestAskTimeout(t *testing.T) {
	t.Parallel()
	a := askAgent("x", "Approve?")
	a.Timeout = 100 * time.Millisecond
	e := testEnsemble(t, a)
	pr, _ := io.Pipe()
	ask := &Runner{In: pr, Interactive: true}
	res := ask.Run(context.Background(), &agent.Request{Ensemble: e, Agent: a, Turn: 1, Execution: 1})
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "timeout") || !strings.Contains(res.Err.Error(), "100ms") {
		t.Errorf("err = %v", res.Err)
	}
}

// fakeTTY is what a terminal in raw mode gives the line editor: the keys
// typed, and what the editor echoes.
type fakeTTY struct {
	keys io.Reader
	echo bytes.Buffer
}

func (f *fakeTTY) Read(p []byte) (int, error)  { return f.keys.Read(p) }
func (f *fakeTTY) Write(p []byte) (int, error) { return f.echo.Write(p) }

// TestAskLineEditor: at a terminal the answer is edited as typed: two
// Left-arrows move the cursor back, and X lands between a and b.
func TestAskLineEditor(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, askAgent("clarify", "Which quarter?"))
	tty := &fakeTTY{keys: strings.NewReader("abc\x1b[D\x1b[DX\r{\"ok\": \x7f\x7f\x7f\x7f\x7f\x7f\x7ftrue\r")}
	var out syncBuffer
	ask := &Runner{Out: &out, Interactive: true, In: tty, read: lineEditor(tty)}
	for i, want := range []any{"aXbc", true} {
		res := ask.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("clarify"), Turn: 1, Execution: i + 1})
		if res.Err != nil || !reflect.DeepEqual(res.Output, want) {
			t.Fatalf("answer %d: %#v, %v; want %#v", i+1, res.Output, res.Err, want)
		}
	}
	if !strings.Contains(tty.echo.String(), askPrompt) {
		t.Errorf("the editor did not show the prompt: %q", tty.echo.String())
	}
}

// TestAskDevNullIsNotATerminal: /dev/null is a character device but not a
// terminal: answers are read from it as from a pipe (here: none).
func TestAskDevNullIsNotATerminal(t *testing.T) {
	t.Parallel()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := testEnsemble(t, askAgent("clarify", "Which quarter?"))
	ask := &Runner{In: f, Interactive: true}
	res := ask.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("clarify"), Turn: 1, Execution: 1})
	if ask.tty != nil || res.Err == nil || !strings.Contains(res.Err.Error(), "the input ended before an answer") {
		t.Fatalf("tty %v, err %v", ask.tty, res.Err)
	}
}

// Answers are capped in nesting like every other output.
func TestAskAnswerDepthIsCapped(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, askAgent("x", "Data?"))
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	ask := &Runner{In: strings.NewReader(deep(512) + "\n" + deep(513) + "\n"), Out: io.Discard, Interactive: true}
	for n, tooDeep := range []bool{false, true} {
		res := ask.Run(context.Background(), &agent.Request{Ensemble: e, Agent: e.Agent("x"), Turn: 1, Execution: n + 1})
		if tooDeep != errors.Is(res.Err, runners.ErrTooDeep) || (!tooDeep && !reflect.DeepEqual(res.Output, nested(512))) {
			t.Errorf("answer %d: err = %v", n+1, res.Err)
		}
	}
}

// nested is n arrays, each in the next.
func nested(n int) any {
	var v any = []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}

// A durable run waits for the answer instead of failing: at no terminal, or
// always with ask_mode: suspend; answers given to resume are taken once.
func TestAskSuspendsAndTakesAnswers(t *testing.T) {
	t.Parallel()
	suspendMode := askAgent("s", "Sure?")
	suspendMode.Spec.(*Spec).Mode = ModeSuspend
	e := testEnsemble(t, askAgent("x", "Approve?"), suspendMode)
	req := func(name string) *agent.Request {
		return &agent.Request{Ensemble: e, Agent: e.Agent(name), Turn: 1, Execution: 1}
	}
	cases := []struct {
		name   string
		runner *Runner
		agent  string
		want   string // the error, or "" for an answer read at the terminal
	}{
		{"no terminal, durable", &Runner{Suspend: true}, "x", "waiting"},
		{"no terminal, not durable", &Runner{}, "x", "add --state FILE"},
		{"suspend mode at a terminal, durable", &Runner{In: strings.NewReader("yes\n"), Interactive: true, Suspend: true}, "s", "waiting"},
		{"suspend mode, not durable", &Runner{In: strings.NewReader("yes\n"), Interactive: true}, "s", "ask_mode: suspend"},
		{"--no-input at a terminal, durable", &Runner{In: strings.NewReader("yes\n"), Interactive: true, NoInput: true, Suspend: true}, "x", "waiting"},
		{"--no-input at a terminal, not durable", &Runner{In: strings.NewReader("yes\n"), Interactive: true, NoInput: true}, "x", "--no-input was given; add --state FILE"},
		{"a batch: no terminal", &Runner{Batch: true}, "x", "batch never ask (nor wait, even with --state): inject its answer with --responses"},
		{"a batch, suspend mode", &Runner{Batch: true}, "s", "batch never ask"},
		{"a terminal, durable: asks", &Runner{In: strings.NewReader("yes\n"), Interactive: true, Suspend: true}, "x", ""},
	}
	for _, c := range cases {
		res := c.runner.Run(context.Background(), req(c.agent))
		switch {
		case c.want == "" && (res.Err != nil || res.Output != "yes"):
			t.Errorf("%s: %v %v", c.name, res.Output, res.Err)
		case c.want == "waiting" && !errors.Is(res.Err, agent.ErrAwaitingInput):
			t.Errorf("%s: err = %v, want ErrAwaitingInput", c.name, res.Err)
		case c.want != "" && c.want != "waiting" && (res.Err == nil || errors.Is(res.Err, agent.ErrAwaitingInput) || !strings.Contains(res.Err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, res.Err, c.want)
		}
	}

	r := &Runner{Suspend: true}
	answers := agent.Services{Answers: agent.NewAnswers(map[string]string{"x": `{"approved": true}`, "s": "plain"})}
	answered := func(name string) *agent.Request {
		rq := req(name)
		rq.Services = answers
		return rq
	}
	res := r.Run(context.Background(), answered("x"))
	if res.Err != nil || !reflect.DeepEqual(res.Output, map[string]any{"approved": true}) || res.InputData.(map[string]any)["answered_on_resume"] != true {
		t.Fatalf("answered: %#v %v %v", res.Output, res.Err, res.InputData)
	}
	if res := r.Run(context.Background(), answered("s")); res.Err != nil || res.Output != "plain" {
		t.Fatalf("answered s: %#v %v", res.Output, res.Err)
	}
	if res := r.Run(context.Background(), answered("x")); !errors.Is(res.Err, agent.ErrAwaitingInput) {
		t.Fatalf("an answer is taken once: %v %v", res.Output, res.Err)
	}
}
