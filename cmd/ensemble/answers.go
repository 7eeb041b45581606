package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/state"
)

// Answers to ask agents that wait (docs/semantics.md#ask-agents-that-wait):
// `ensemble resume FILE --answer AGENT=TEXT` (repeatable) or `--answers
// FILE.yaml`; each answers the agent's next execution, once, and is read
// as any output is (JSON text is JSON).

// answerFlags are the flags of resume that answer questions.
type answerFlags struct {
	answer  []string // --answer AGENT=TEXT
	answers string   // --answers FILE
}

func (a *answerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&a.answer, "answer", nil, "answer the question `AGENT=TEXT` of an agent the run waits for (repeatable; JSON text is read as JSON)")
	fl.StringVar(&a.answers, "answers", "", "answers from a YAML `FILE` mapping agents to answers")
}

// parse returns the answers by agent; nil when none was given.
func (a *answerFlags) parse() (map[string]string, error) {
	out := map[string]string{}
	if a.answers != "" {
		data, err := os.ReadFile(a.answers)
		if err != nil {
			return nil, usageErr("--answers: %v", err)
		}
		if err := readAnswers(a.answers, data, out); err != nil {
			return nil, err
		}
	}
	for _, kv := range a.answer {
		name, text, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, usageErr("--answer %q: give AGENT=TEXT", kv)
		}
		if _, dup := out[name]; dup {
			return nil, usageErr("--answer: %q is answered twice", name)
		}
		out[name] = text
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// readAnswers reads an answers file into out: one YAML document mapping
// agents to answers, read like the project's other YAML files (errors at
// FILE:LINE:COL in plain words, a second document refused). A string is the
// answer's text; any other YAML value is the output itself, given as JSON.
func readAnswers(file string, data []byte, out map[string]string) error {
	root, err := ensemble.ParseYAML(file, data)
	if err != nil {
		return usageErr("--answers: %v", err)
	}
	if root == nil || root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return usageErr("--answers %s: no answer in it: map each agent to its answer (approver: yes)", file)
	}
	at := func(n *yaml.Node, format string, args ...any) error {
		return usageErr("--answers: %s:%d:%d: %s", file, n.Line, n.Column, fmt.Sprintf(format, args...))
	}
	if root.Kind != yaml.MappingNode {
		return at(root, "an answers file maps each agent to its answer (approver: yes)")
	}
	lines := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" && k.ShortTag() != "!!int" {
			return at(k, "expected an agent name")
		}
		if first, dup := lines[k.Value]; dup {
			return at(k, "agent %q is answered twice (first at line %d)", k.Value, first)
		}
		lines[k.Value] = k.Line
		var x any
		if err := v.Decode(&x); err != nil {
			return at(v, "the answer of %q: %v", k.Value, err)
		}
		s, ok := x.(string)
		if !ok { // a YAML value is the output itself: give it as JSON
			b, err := json.Marshal(x)
			if err != nil {
				return at(v, "the answer of %q: %v", k.Value, err)
			}
			s = string(b)
		}
		out[k.Value] = s
	}
	return nil
}

// checkAnswers refuses answers for agents the saved run does not wait for.
func checkAnswers(e *ensemble.Ensemble, f *state.File, answers map[string]string) error {
	if len(answers) == 0 {
		return nil
	}
	// A run that was resumed with answers and then interrupted before its
	// turn committed waits for them still: any run that resume continues.
	var waiting []string
	if f.Resumable() {
		for _, p := range engine.FromFile(e, f, engine.Options{}).PendingInput() {
			waiting = append(waiting, p.Agent)
		}
	}
	names := make([]string, 0, len(answers))
	for name := range answers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.Contains(waiting, name) {
			continue
		}
		why := "the run is not waiting for input"
		if len(waiting) > 0 {
			why = "the run waits for " + strings.Join(waiting, ", ")
		}
		if e.Agent(name) == nil {
			return usageErr("--answer: unknown agent %q%s (%s)", name, ensemble.Suggest(name, e.AgentNames()), why)
		}
		return usageErr("--answer: agent %q is not waiting for input (%s)", name, why)
	}
	return nil
}

// pendingNotice says, after a run that ends waiting for input, what it waits
// for and how to answer.
func pendingNotice(res *engine.Result, resume string) string {
	var b strings.Builder
	for _, p := range res.PendingInput {
		fmt.Fprintf(&b, "ensemble: %s waits for an answer: %s\n", p.Agent, oneLine(p.Question))
	}
	if resume != "" && len(res.PendingInput) > 0 {
		// Every agent that waits: answering only some makes the run wait again.
		fmt.Fprintf(&b, "ensemble: answer with: %s", resume)
		for _, p := range res.PendingInput {
			fmt.Fprintf(&b, " --answer %s='...'", p.Agent)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
