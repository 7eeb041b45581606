// Package graph draws an ensemble's dependency graph as Mermaid (a
// flowchart) or Graphviz DOT.
//
// An edge goes from a dependency to the agent that depends on it, the way
// outputs flow. Required edges are solid, optional ones (requires_all:
// false) dashed; a condition and max_executions label the edge. Agent kinds
// have their own shapes and colours: scripts are boxes, LLM agents rounded,
// ask (human) agents parallelograms. Each node says what the agent runs and
// its limits (max_turns, max_agent_executions), its state_key when it has
// one, and whether it may request other agents.
//
// The package writes drawings and nothing else: what the user should know
// about a drawing (Warnings) is for the caller to show.
//
// An agent with a fan_out is a stacked node (Mermaid's stacked rectangle,
// DOT's box3d) whose label says what it fans out over.
package graph

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// Formats lists the formats Write knows.
var Formats = []string{"mermaid", "dot"}

// Write writes e's graph in format ("mermaid" or "dot").
func Write(w io.Writer, e *ensemble.Ensemble, format string) error {
	switch format {
	case "mermaid", "":
		return mermaid(w, e, DefaultDepth)
	case "dot":
		return dot(w, e, DefaultDepth)
	}
	return fmt.Errorf("unknown graph format %q: use mermaid or dot", format)
}

// MermaidMaxEdges is Mermaid's default limit on a flowchart's edges: with
// more, Mermaid (GitHub, mermaid-cli, mermaid.live) refuses to draw it
// unless the diagram raises the limit.
const MermaidMaxEdges = 500

// Warnings are what the user should know about e's drawing in format, one
// sentence each; none for most graphs.
func Warnings(e *ensemble.Ensemble, format string) []string {
	if n := edgeCount(e); n > MermaidMaxEdges && format != "dot" {
		return []string{fmt.Sprintf("the graph has %d edges, more than Mermaid's default limit of %d: "+
			"the drawing raises it with %%%%{init: {\"maxEdges\": %d}}%%%%, which a renderer may ignore; "+
			"so large a flowchart is also slow to lay out: --format dot suits it better", n, MermaidMaxEdges, mermaidMaxEdges(n))}
	}
	return nil
}

func edgeCount(e *ensemble.Ensemble) int {
	n := 0
	for _, a := range e.Agents {
		n += len(a.Dependencies)
	}
	return n
}

// mermaidMaxEdges is the limit a drawing of n edges asks for: the next
// thousand above n, room for a few more edges when the file grows.
func mermaidMaxEdges(n int) int { return (n/1000 + 1) * 1000 }

// nodeLines are the lines of an agent's label: its name, what it runs, its
// limits.
func nodeLines(e *ensemble.Ensemble, a *ensemble.Agent) []string {
	lines := []string{a.Name}
	if k, ok := a.Kind.(agent.Describer); ok {
		lines = append(lines, k.Describe(e, a)...)
	}
	var limits []string
	if a.Conversation.MaxTurns > 1 {
		limits = append(limits, fmt.Sprintf("max_turns %d", a.Conversation.MaxTurns))
	}
	if n, ok := e.Limits.MaxAgentExecutions[a.Name]; ok && n > 0 {
		limits = append(limits, fmt.Sprintf("max_agent_executions %d", n))
	}
	if len(limits) > 0 {
		lines = append(lines, strings.Join(limits, ", "))
	}
	if a.Conversation.StateKey != "" {
		lines = append(lines, "state_key: "+a.Conversation.StateKey)
	}
	if a.Conversation.TriggersConversation {
		lines = append(lines, "may request agents")
	}
	if a.TriggerAll {
		lines = append(lines, "trigger: all")
	}
	if w := strings.Join(strings.Fields(a.When), " "); w != "" {
		lines = append(lines, "when "+w)
	}
	return append(lines, fanOutLines(a)...)
}

// edgeLines are the lines of an edge's label: its condition, its
// max_executions and its select; none for a plain edge.
func edgeLines(d *ensemble.Dependency) []string {
	var lines []string
	if d.OnFailure {
		lines = append(lines, "on failure")
	}
	if d.OnAlways {
		lines = append(lines, "on always")
	}
	if c := strings.Join(strings.Fields(d.Condition), " "); c != "" {
		lines = append(lines, c)
	}
	if d.MaxExecutions > 0 {
		lines = append(lines, fmt.Sprintf("max_executions %d", d.MaxExecutions))
	}
	if s := strings.Join(strings.Fields(d.Select), " "); s != "" {
		lines = append(lines, "select "+s)
	}
	return lines
}

// --- Mermaid ---

// kindsOf are the kinds e was loaded with, or for an ensemble built by
// hand the kinds of its agents, in order.
func kindsOf(e *ensemble.Ensemble) []ensemble.Kind {
	if len(e.Kinds) > 0 {
		return e.Kinds
	}
	var kinds []ensemble.Kind
	for _, a := range e.Agents {
		if a.Kind != nil && !slices.Contains(kinds, a.Kind) {
			kinds = append(kinds, a.Kind)
		}
	}
	return kinds
}

// kindName names k, "unknown" when an agent built by hand has none.
func kindName(k ensemble.Kind) string {
	if k == nil {
		return "unknown"
	}
	return k.String()
}

// shape is the shape of a's kind; a kind without one is drawn as a box.
func shape(k ensemble.Kind) agent.Shape {
	if s, ok := k.(agent.Shaper); ok {
		return s.Shape()
	}
	return agent.Shape{Mermaid: [2]string{"[", "]"}, DOT: "shape=box"}
}

// Mermaid writes e as a Mermaid flowchart, top to bottom. Node ids are
// generated (a1, a2, ...: agent names such as "end" or "o-x" would confuse
// Mermaid's parser); labels are quoted, with every character that Mermaid
// or HTML would read written as an entity.
func Mermaid(w io.Writer, e *ensemble.Ensemble) error { return mermaid(w, e, DefaultDepth) }

func mermaid(w io.Writer, e *ensemble.Ensemble, depth int) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("---\ntitle: %s\n---\n", e.Name) // names are [a-z0-9_-]+
	// The directive comes after the front matter, which must open the text.
	if n := edgeCount(e); n > MermaidMaxEdges {
		p("%%%%{init: {\"maxEdges\": %d}}%%%%\n", mermaidMaxEdges(n))
	}
	p("flowchart TD\n")
	ids := map[string]string{}
	for i, a := range e.Agents {
		ids[a.Name] = fmt.Sprintf("a%d", i+1)
	}
	for _, a := range e.Agents {
		if a.FanOut != nil {
			p("    %s\n", mermaidFanOut(ids[a.Name], nodeLines(e, a)))
			continue
		}
		shape := shape(a.Kind).Mermaid
		p("    %s%s\"%s\"%s\n", ids[a.Name], shape[0], mermaidText(nodeLines(e, a)), shape[1])
	}
	var failureLinks []string // Mermaid numbers links in the order they are written
	link := 0
	mermaidEdges(p, e, ids, &link, &failureLinks)
	nested := mermaidChildren(p, e, ids, depth, &link, &failureLinks)
	if len(failureLinks) > 0 {
		p("    linkStyle %s stroke:#c5221f,color:#c5221f\n", strings.Join(failureLinks, ","))
	}
	kinds := kindsOf(e)
	for _, k := range kinds {
		if c := shape(k).MermaidClass; c != "" {
			p("    classDef %s %s\n", k, c)
		}
	}
	for _, k := range kinds {
		var of []string
		for _, a := range e.Agents {
			if a.Kind == k {
				of = append(of, ids[a.Name])
			}
		}
		of = append(of, nested[k]...)
		if len(of) > 0 {
			p("    class %s %s\n", strings.Join(of, ","), k)
		}
	}
	return bw.Flush()
}

// mermaidText escapes lines for a quoted Mermaid label: quotes, entity
// starts, HTML and markdown-string characters become entities; lines are
// joined with <br/>.
func mermaidText(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		var b strings.Builder
		for _, r := range l {
			switch r {
			case '"':
				b.WriteString("#quot;")
			case '#':
				b.WriteString("#35;")
			case '<':
				b.WriteString("#lt;")
			case '>':
				b.WriteString("#gt;")
			case '&':
				b.WriteString("#amp;")
			case '|':
				b.WriteString("#124;")
			case '`':
				b.WriteString("#96;")
			case '\\':
				b.WriteString("#92;")
			case '\n', '\r', '\t':
				b.WriteByte(' ')
			default:
				b.WriteRune(r)
			}
		}
		out[i] = b.String()
	}
	return strings.Join(out, "<br/>")
}

// --- DOT ---

// DOT writes e as a Graphviz digraph, top to bottom. Every id and label is
// a quoted string with backslashes and quotes escaped; lines are joined
// with \n. A back edge (one that closes a cycle) has constraint=false: it
// does not rank its ends, so it curves beside the forward edge between the
// same agents instead of lying on it.
func DOT(w io.Writer, e *ensemble.Ensemble) error { return dot(w, e, DefaultDepth) }

func dot(w io.Writer, e *ensemble.Ensemble, depth int) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("digraph %s {\n", dotString(e.Name))
	p("  label=%s;\n  labelloc=t;\n  rankdir=TB;\n", dotString(e.Name))
	p("  fontname=\"Helvetica\";\n  node [fontname=\"Helvetica\", style=filled];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, a := range e.Agents {
		p("  %s [label=%s, class=%s, %s];\n", dotString(a.Name), dotLabel(nodeLines(e, a)), dotString(kindName(a.Kind)), dotNodeShape(a))
	}
	back := backEdges(e)
	for _, a := range e.Agents {
		for _, d := range a.Dependencies {
			var attrs []string
			if lines := edgeLines(d); len(lines) > 0 {
				attrs = append(attrs, "label="+dotLabel(lines))
			}
			if !d.RequiresAll {
				attrs = append(attrs, "style=dashed")
			}
			if d.OnFailure {
				attrs = append(attrs, "color=\"#c5221f\"", "fontcolor=\"#c5221f\"")
			}
			if back[d] {
				attrs = append(attrs, "constraint=false")
			}
			p("  %s -> %s", dotString(d.AgentName), dotString(a.Name))
			if len(attrs) > 0 {
				p(" [%s]", strings.Join(attrs, ", "))
			}
			p(";\n")
		}
	}
	dotChildren(p, e, depth)
	p("}\n")
	return bw.Flush()
}

// backEdges are the edges that close a cycle: found by a depth-first
// search that takes agents, and the edges out of each, in file order, they
// are the edges to an agent whose search is still under way.
func backEdges(e *ensemble.Ensemble) map[*ensemble.Dependency]bool {
	type edge struct {
		to  string
		dep *ensemble.Dependency
	}
	out := map[string][]edge{}
	for _, a := range e.Agents {
		for _, d := range a.Dependencies {
			out[d.AgentName] = append(out[d.AgentName], edge{a.Name, d})
		}
	}
	const (
		onPath = 1
		done   = 2
	)
	state := map[string]int{}
	back := map[*ensemble.Dependency]bool{}
	var visit func(name string)
	visit = func(name string) {
		state[name] = onPath
		for _, ed := range out[name] {
			switch state[ed.to] {
			case onPath:
				back[ed.dep] = true
			case 0:
				visit(ed.to)
			}
		}
		state[name] = done
	}
	for _, a := range e.Agents {
		if state[a.Name] == 0 {
			visit(a.Name)
		}
	}
	return back
}

// dotString quotes s as a DOT string: backslash and quote escaped, line
// breaks as spaces.
func dotString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ", "\r", " ")
	return `"` + r.Replace(s) + `"`
}

// dotLabel quotes lines as one label, each line centred.
func dotLabel(lines []string) string {
	quoted := make([]string, len(lines))
	for i, l := range lines {
		q := dotString(l)
		quoted[i] = q[1 : len(q)-1]
	}
	return `"` + strings.Join(quoted, `\n`) + `"`
}

// mermaidEdges writes e's dependencies as links between the node ids of
// ids, counting them in *link (Mermaid numbers links in order) and adding
// the numbers of failure edges to *failure.
func mermaidEdges(p func(string, ...any), e *ensemble.Ensemble, ids map[string]string, link *int, failure *[]string) {
	for _, a := range e.Agents {
		for _, d := range a.Dependencies {
			arrow := "-->"
			if !d.RequiresAll {
				arrow = "-.->"
			}
			label := ""
			if lines := edgeLines(d); len(lines) > 0 {
				label = "|\"" + mermaidText(lines) + "\"|"
			}
			p("    %s %s%s %s\n", ids[d.AgentName], arrow, label, ids[a.Name])
			if d.OnFailure {
				*failure = append(*failure, fmt.Sprint(*link))
			}
			*link++
		}
	}
}
