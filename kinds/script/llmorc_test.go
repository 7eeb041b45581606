package script

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

func llmOrcAgent() *ensemble.Agent {
	a := scriptAgent("reader", "llmorc_agent.py", map[string]any{"label": "L"})
	SpecOf(a).Protocol = ProtocolLLMOrc
	return a
}

// A script written for llm-orc runs unchanged with protocol: llm-orc: it
// finds input_data, each dependency's response as text (JSON text for an
// object) with its status, and its parameters in AGENT_PARAMETERS.
func TestLLMOrcProtocolScriptInput(t *testing.T) {
	t.Parallel()
	a := llmOrcAgent()
	a.Dependencies = []*ensemble.Dependency{{AgentName: "facts"}, {AgentName: "note"}}
	e := testEnsemble(t, a)
	req := scriptRequest(e, "reader")
	req.Dependencies = map[string]any{"facts": map[string]any{"region": "EMEA"}, "note": "plain text"}
	res := (&Runner{}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatalf("%v (stderr %s)", res.Err, res.Stderr)
	}
	want := map[string]any{"agent": "reader", "text": "the input", "env_text": "the input", "region": "EMEA",
		"note": "plain text", "status": "success", "label": "L"}
	if !reflect.DeepEqual(res.Output, want) {
		t.Errorf("output %#v\nwant %#v", res.Output, want)
	}
}

// A script agent without dependencies gets what llm-orc gives a root
// script: {"input", "parameters", "context"}, in that order, not the
// ScriptAgentInput of dependent scripts.
func TestLLMOrcProtocolRootScript(t *testing.T) {
	t.Parallel()
	a := scriptAgent("root", "llmorc_stdin.py", map[string]any{"label": "L"})
	SpecOf(a).Protocol = ProtocolLLMOrc
	e := testEnsemble(t, a)
	res := (&Runner{}).Run(context.Background(), scriptRequest(e, "root"))
	if res.Err != nil {
		t.Fatalf("%v (stderr %s)", res.Err, res.Stderr)
	}
	want := `{"input": "the input", "parameters": {"label": "L"}, "context": {}}`
	if got := res.Output.(map[string]any)["stdin"]; got != want {
		t.Errorf("stdin %s\nwant %s", got, want)
	}
	if got := res.Output.(map[string]any)["input_text"]; got != "the input" {
		t.Errorf("INPUT_TEXT %q", got)
	}
}

// A fan-out instance gets llm-orc's chunk: input, chunk_index,
// total_chunks, base_input, and agent_name with the index.
func TestLLMOrcProtocolFanOutChunk(t *testing.T) {
	t.Parallel()
	e := testEnsemble(t, llmOrcAgent())
	req := scriptRequest(e, "reader")
	req.Instance = &agent.Instance{Name: "reader[2]", Item: "third sentence.", Index: 2, Count: 3, Seq: 3}
	res := (&Runner{}).Run(context.Background(), req)
	if res.Err != nil {
		t.Fatalf("%v (stderr %s)", res.Err, res.Stderr)
	}
	want := map[string]any{"agent": "reader[2]", "chunk": "third sentence.", "index": 2.0, "total": 3.0,
		"base": "the input", "label": "L"}
	if !reflect.DeepEqual(res.Output, want) {
		t.Errorf("output %#v\nwant %#v", res.Output, want)
	}
}

// protocol is decoded: llm-orc and ensemble are its values, anything else
// is an error at the field.
func TestProtocolField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(p string) (*ensemble.Ensemble, error) {
		path := filepath.Join(dir, "e.yaml")
		src := "name: e\nagents:\n  - name: s\n    script: s.py\n" + p
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return ensemble.Load(path, ensemble.LoadOptions{Kinds: []ensemble.Kind{Kind{}}})
	}
	for p, want := range map[string]string{"": ProtocolEnsemble, "    protocol: llm-orc\n": ProtocolLLMOrc, "    protocol: ensemble\n": ProtocolEnsemble} {
		e, err := load(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if got := SpecOf(e.Agent("s")).Protocol; got != want {
			t.Errorf("%q: protocol %q, want %q", p, got, want)
		}
	}
	_, err := load("    protocol: llmorc\n")
	if err == nil || !strings.Contains(err.Error(), `e.yaml:5:15: agent "s": protocol must be "ensemble" or "llm-orc", not "llmorc"`) {
		t.Errorf("error %v", err)
	}
}
