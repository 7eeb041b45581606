package agent

import (
	"time"

	"github.com/ensemble-run/ensemble/ensemble"
)

// What the rest of the program asks of a kind, declared here once: a kind
// answers a question by having its method, and one that does not gets the
// default the function beside it gives. No package switches on kinds or
// declares these questions again; kinds/kinds_test.go checks which of them
// every built-in kind answers.
type (
	// Guarded kinds reach a model that costs money: --live and the tests
	// keep their agents offline unless told otherwise. Default: false.
	Guarded interface{ Guarded() bool }
	// JSONReplier kinds say whether a's reply text must be JSON (an
	// injected reply is then held to it). Default: false.
	JSONReplier interface{ JSONReply(a *ensemble.Agent) bool }
	// OutputRepairer kinds give a reply that fails a's output_schema this
	// many repair turns, which injected responses follow too. Default: 0.
	OutputRepairer interface{ OutputRepairs(a *ensemble.Agent) int }
	// InputDescriber kinds say what an execution answered by an injected
	// response records as its input data. Default: scriptexec.BaseInputData.
	InputDescriber interface {
		InputData(req *Request) map[string]any
	}
	// MemoryKeeper kinds keep a memory from one execution of an agent to
	// the next (Request.Memory), which a state file must hold a valid one
	// of. Default: false.
	MemoryKeeper interface{ KeepsMemory() bool }
	// HumanAsker kinds wait for a person: the progress line pauses for
	// them, a run can wait for their answer, and they take no fan_out nor
	// output_schema. Default: false.
	HumanAsker interface{ AsksHuman() bool }
	// AnswerTimer kinds stop waiting for a person's answer after a while
	// (an ask agent's timeout:): a run that waits for one of their agents
	// saves the deadline with its suspension. Default: 0, no deadline.
	AnswerTimer interface {
		AnswerTimeout(a *ensemble.Agent) time.Duration
	}
	// Questioner kinds have a question, which a simulated user is asked.
	// Default: "".
	Questioner interface {
		Question(a *ensemble.Agent) string
	}
	// ToolUser kinds have tools their model may call: script tools of the
	// file, and SERVER.TOOL of an MCP server. Default: none.
	ToolUser interface {
		Tools(a *ensemble.Agent) []string
	}
	// Parent kinds run child ensembles: the files a may run, for paths in
	// injected responses and steps, the MCP servers a run starts, and the
	// drawing's subgraphs. Default: none.
	Parent interface {
		Children(a *ensemble.Agent) []*ensemble.Ensemble
	}
	// ModelUser kinds call a model through a profile: the name of the one
	// a's executions use (before any fallback), whose key a run checks
	// before its first turn. Default: "".
	ModelUser interface {
		ModelProfile(a *ensemble.Agent) string
	}
	// Shaper kinds have a shape of their own in drawings. Default: a box.
	Shaper interface{ Shape() Shape }
	// Describer kinds say what an agent runs, in the lines of its label
	// after its name: "script: x.py", "llm: fast (gpt-4o)". Default: none.
	Describer interface {
		Describe(e *ensemble.Ensemble, a *ensemble.Agent) []string
	}
)

// Shape is how the agents of a kind are drawn.
type Shape struct {
	// Mermaid opens and closes a Mermaid node: "[" and "]" draw a box.
	Mermaid [2]string
	// MermaidClass is the style of the Mermaid class named after the kind.
	MermaidClass string
	// DOT is the attributes of a Graphviz node.
	DOT string
}

// IsGuarded reports whether k's agents reach a model that costs money.
func IsGuarded(k ensemble.Kind) bool {
	g, ok := k.(Guarded)
	return ok && g.Guarded()
}

// JSONReply reports whether a's reply text must be JSON.
func JSONReply(a *ensemble.Agent) bool {
	j, ok := a.Kind.(JSONReplier)
	return ok && j.JSONReply(a)
}

// OutputRepairs is how many repair turns a reply of a that fails its
// output_schema gets.
func OutputRepairs(a *ensemble.Agent) int {
	if o, ok := a.Kind.(OutputRepairer); ok {
		return o.OutputRepairs(a)
	}
	return 0
}

// KeepsMemory reports whether a's kind keeps a memory between executions.
func KeepsMemory(a *ensemble.Agent) bool {
	m, ok := a.Kind.(MemoryKeeper)
	return ok && m.KeepsMemory()
}

// AsksHuman reports whether a waits for a person.
func AsksHuman(a *ensemble.Agent) bool { return KindAsksHuman(a.Kind) }

// KindAsksHuman reports whether k's agents wait for a person.
func KindAsksHuman(k ensemble.Kind) bool {
	h, ok := k.(HumanAsker)
	return ok && h.AsksHuman()
}

// AnswerTimeout is how long a waits for a person's answer; 0: as long as
// it takes.
func AnswerTimeout(a *ensemble.Agent) time.Duration {
	if t, ok := a.Kind.(AnswerTimer); ok {
		return t.AnswerTimeout(a)
	}
	return 0
}

// Question is what a asks a person; "" when its kind asks none.
func Question(a *ensemble.Agent) string {
	if q, ok := a.Kind.(Questioner); ok {
		return q.Question(a)
	}
	return ""
}

// Tools are the tools a's model may call.
func Tools(a *ensemble.Agent) []string {
	if t, ok := a.Kind.(ToolUser); ok {
		return t.Tools(a)
	}
	return nil
}

// ModelProfile is the name of the model profile a calls; "" when its kind
// calls none.
func ModelProfile(a *ensemble.Agent) string {
	if m, ok := a.Kind.(ModelUser); ok {
		return m.ModelProfile(a)
	}
	return ""
}

// Children are the child ensembles a may run.
func Children(a *ensemble.Agent) []*ensemble.Ensemble {
	if p, ok := a.Kind.(Parent); ok {
		return p.Children(a)
	}
	return nil
}

// Walk calls f for every agent of e, then of its child ensembles (each
// file once, however many agents run it), depth first.
func Walk(e *ensemble.Ensemble, f func(e *ensemble.Ensemble, a *ensemble.Agent)) {
	seen := map[*ensemble.Ensemble]bool{}
	var walk func(*ensemble.Ensemble)
	walk = func(e *ensemble.Ensemble) {
		if e == nil || seen[e] {
			return
		}
		seen[e] = true
		for _, a := range e.Agents {
			f(e, a)
			for _, c := range Children(a) {
				walk(c)
			}
		}
	}
	walk(e)
}
