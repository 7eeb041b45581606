package ensemble_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/responses"
)

// jitter delays every fan-out instance a random moment before handing it
// on, so that a fan-out's instances ask for their responses in an order
// that changes from run to run.
type jitter struct{ next agent.Runner }

func (j jitter) Run(ctx context.Context, req *agent.Request) *agent.Result {
	if req.Instance != nil {
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
	}
	return j.next.Run(ctx, req)
}

// fanChild is a child ensemble whose summarize fans out over the four
// chunks split gives.
const fanChild = `name: mr
agents:
  - name: split
    script: noop.sh
  - name: summarize
    script: noop.sh
    input: "{{ item }}"
    fan_out: {over: "context.split.chunks"}
    dependencies: [split]
`

// TestChildFanOutResponsesByInstance: the instances of a fan-out inside a
// child ensemble take their injected responses by their place in item
// order, whatever order they run in (docs/testing.md#the-responses-file):
// in a child run once, in each iteration of a loop over the child
// (continuing where the last iteration stopped), and in the child of each
// instance of a fan-out, from the instance's own list. Each case runs many
// times with the instances' start delayed at random.
func TestChildFanOutResponsesByInstance(t *testing.T) {
	t.Parallel()
	chunks := map[string]any{"chunks": []any{"a", "b", "c", "d"}}
	for _, tc := range []struct {
		name, parent string
		plays        map[string][]any
		responses    map[string][]string
		key          string // the final state key to check
		want         string // its value as JSON
		check        func(t *testing.T, res *engine.Result)
	}{
		{
			name: "child",
			parent: `name: nested
agents:
  - name: inner
    ensemble: child.yaml
    output: summarize
`,
			plays:     map[string][]any{"inner/split": {chunks}},
			responses: map[string][]string{"inner/summarize": {"r1", "r2", "r3", "r4"}},
			key:       "inner", want: `["r1","r2","r3","r4"]`,
		},
		{
			name: "loop",
			parent: `name: looping
agents:
  - name: inner
    ensemble: child.yaml
    output: summarize
    loop:
      until: "false"
      max_iterations: 2
      on_exhausted: succeed
      carry: "output"
`,
			plays:     map[string][]any{"inner/split": {chunks}},
			responses: map[string][]string{"inner/summarize": {"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"}},
			key:       "inner", want: `["r5","r6","r7","r8"]`,
			check: func(t *testing.T, res *engine.Result) {
				// The second iteration's input is the first one's output.
				split := res.ConversationHistory[0].Child().ConversationHistory[0]
				if in := split.InputData.(map[string]any)["input"]; in != `["r1","r2","r3","r4"]` {
					t.Errorf("first iteration's output %v", in)
				}
			},
		},
		{
			name: "fan-out child",
			parent: `name: fans
agents:
  - name: lister
    script: noop.sh
  - name: analyst
    ensemble: child.yaml
    output: summarize
    fan_out: {over: "context.lister.items"}
    dependencies: [lister]
`,
			plays: map[string][]any{"lister": {map[string]any{"items": []any{"x", "y"}}},
				"analyst[0]/split": {chunks}, "analyst[1]/split": {chunks}},
			responses: map[string][]string{"analyst[0]/summarize": {"a1", "a2", "a3", "a4"}, "analyst[1]/summarize": {"b1", "b2", "b3", "b4"}},
			key:       "analyst", want: `[["a1","a2","a3","a4"],["b1","b2","b3","b4"]]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "ensemble.yaml"), tc.parent)
			writeFile(t, filepath.Join(dir, "child.yaml"), fanChild)
			writeFile(t, filepath.Join(dir, "noop.sh"), "cat >/dev/null\necho '\"noop\"'\n")
			e, err := load(t, filepath.Join(dir, "ensemble.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			resp := responses.NewResponses()
			for agent, list := range tc.responses {
				for _, v := range list {
					resp.Add(agent, v)
				}
			}
			if err := resp.Validate(e); err != nil {
				t.Fatal(err)
			}
			wrong := 0
			for i := range 30 {
				r := jitter{next: runner(newFake(tc.plays), resp)}
				res := engine.New(e, "in", engine.Options{Runner: r, Parallel: 4}).Run(context.Background())
				if len(res.Errors) != 0 {
					t.Fatalf("run %d: %s", i, failures(res))
				}
				if got := jsonvalue.Text(res.FinalState[tc.key]); got != tc.want {
					if wrong++; wrong == 1 {
						t.Errorf("run %d: %s is %s, want %s", i, tc.key, got, tc.want)
					}
					continue
				}
				if tc.check != nil {
					tc.check(t, res)
				}
			}
			if wrong > 0 {
				t.Errorf("%d of 30 runs gave the instances other responses", wrong)
			}
		})
	}
}

// TestSharedEntryRefusesAChildFanOut: an entry shared by every instance's
// child (`analyst/summarize`) answers one execution per instance, so a
// fan-out of several items in the child is refused, in every run alike.
func TestSharedEntryRefusesAChildFanOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ensemble.yaml"), `name: fans
agents:
  - name: lister
    script: noop.sh
  - name: analyst
    ensemble: child.yaml
    output: summarize
    fan_out: {over: "context.lister.items"}
    dependencies: [lister]
`)
	writeFile(t, filepath.Join(dir, "child.yaml"), fanChild)
	writeFile(t, filepath.Join(dir, "noop.sh"), "cat >/dev/null\necho '\"noop\"'\n")
	e, err := load(t, filepath.Join(dir, "ensemble.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resp := responses.NewResponses()
	for _, v := range []string{"s1", "s2", "s3", "s4"} {
		resp.Add("analyst/summarize", v)
	}
	plays := map[string][]any{"lister": {map[string]any{"items": []any{"x", "y"}}},
		"analyst[0]/split": {map[string]any{"chunks": []any{"a", "b"}}}, "analyst[1]/split": {map[string]any{"chunks": []any{"c"}}}}
	for i := range 10 {
		r := jitter{next: runner(newFake(plays), resp)}
		res := engine.New(e, "in", engine.Options{Runner: r, Parallel: 4}).Run(context.Background())
		const want = `agent "analyst[0]/summarize[1]": "analyst/summarize" answers each instance's child once, in item order, and "summarize" has more than one instance there: give this instance's executions their own list, under "analyst[0]/summarize"`
		if got := failures(res); !strings.Contains(got, want) {
			t.Fatalf("run %d: errors\n%s\nwant %s", i, got, want)
		}
	}
}

// TestResumedChildFanOutGoesOn: a run resumed over a history in which a
// child's fan-out took responses (InjectedRunner.Resume) gives the next
// run of the child the responses after them, each instance by its place.
func TestResumedChildFanOutGoesOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ensemble.yaml"), "name: nested\nagents:\n  - name: inner\n    ensemble: child.yaml\n    output: summarize\n")
	writeFile(t, filepath.Join(dir, "child.yaml"), fanChild)
	writeFile(t, filepath.Join(dir, "noop.sh"), "cat >/dev/null\necho '\"noop\"'\n")
	e, err := load(t, filepath.Join(dir, "ensemble.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resp := responses.NewResponses()
	for i := range 8 {
		resp.Add("inner/summarize", fmt.Sprintf("r%d", i+1))
	}
	plays := map[string][]any{"inner/split": {map[string]any{"chunks": []any{"a", "b", "c", "d"}}}}
	first := engine.New(e, "in", engine.Options{Runner: runner(newFake(plays), resp)}).Run(context.Background())
	if got := jsonvalue.Text(first.FinalState["inner"]); got != `["r1","r2","r3","r4"]` || len(first.Errors) != 0 {
		t.Fatalf("first run: %s %s", got, failures(first))
	}
	for i := range 20 {
		ir := runner(newFake(plays), resp).(*responses.InjectedRunner)
		ir.Resume(first.ConversationHistory)
		res := engine.New(e, "in", engine.Options{Runner: jitter{next: ir}, Parallel: 4}).Run(context.Background())
		if got := jsonvalue.Text(res.FinalState["inner"]); got != `["r5","r6","r7","r8"]` || len(res.Errors) != 0 {
			t.Fatalf("run %d after the history: inner is %s, want [r5 … r8] %s", i, got, failures(res))
		}
	}
}

// TestChildFanOutInstanceEntry: an entry for one instance of a child's
// fan-out is refused at load, naming the agent's list to write instead.
func TestChildFanOutInstanceEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ensemble.yaml"), "name: nested\nagents:\n  - name: inner\n    ensemble: child.yaml\n")
	writeFile(t, filepath.Join(dir, "child.yaml"), fanChild)
	writeFile(t, filepath.Join(dir, "noop.sh"), "cat >/dev/null\necho '\"noop\"'\n")
	e, err := load(t, filepath.Join(dir, "ensemble.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resp := responses.NewResponses()
	resp.Add("inner/summarize[1]", "x")
	want := `"inner/summarize[1]" in responses names an instance of a fan-out in a child ensemble, which takes its responses from its agent's list, in item order: write them under "inner/summarize"`
	if err := resp.Validate(e); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate: %v\nwant %s", err, want)
	}
}
