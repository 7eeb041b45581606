package graph

import (
	"fmt"
	"io"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// DefaultDepth is how many levels of child ensembles a drawing shows unless
// told otherwise.
const DefaultDepth = 1

// WriteDepth is Write drawing depth levels of child ensembles (0: none).
func WriteDepth(w io.Writer, e *ensemble.Ensemble, format string, depth int) error {
	switch format {
	case "mermaid", "":
		return mermaid(w, e, depth)
	case "dot":
		return dot(w, e, depth)
	}
	return Write(w, e, format)
}

// child is one child ensemble to draw: the agent running it (its node id),
// and the prefix of its agents' ids.
type child struct {
	parentID string
	prefix   string
	e        *ensemble.Ensemble
}

// childrenOf are the child ensembles of e's agents, ids prefixed with
// prefix; id maps an agent of e to its node id.
func childrenOf(e *ensemble.Ensemble, id func(string) string, prefix string, depth int) []child {
	var out []child
	if depth < 1 {
		return nil
	}
	for _, a := range e.Agents {
		// The child ensembles an agent may run (agent.Parent) are drawn as
		// subgraphs (Mermaid) or clusters (DOT) beside it.
		kids := agent.Children(a)
		for _, c := range kids {
			p := prefix + a.Name + "/"
			if len(kids) > 1 { // a dispatch's cases
				p += c.Name + "/"
			}
			out = append(out, child{parentID: id(a.Name), prefix: p, e: c})
		}
	}
	return out
}

// levels is, for each child ensemble within depth levels of e, the
// shallowest level it is run at (1: by an agent of e), found breadth first.
// A file run by several agents is drawn once, at its first reference, as
// deep as its shallowest reference needs: a later reference, however deep,
// shows nothing the drawing lacks.
func levels(e *ensemble.Ensemble, depth int) map[*ensemble.Ensemble]int {
	level := map[*ensemble.Ensemble]int{}
	next := []*ensemble.Ensemble{e}
	for l := 1; l <= depth && len(next) > 0; l++ {
		var found []*ensemble.Ensemble
		for _, p := range next {
			for _, a := range p.Agents {
				for _, c := range agent.Children(a) {
					if _, seen := level[c]; !seen && c != e {
						level[c] = l
						found = append(found, c)
					}
				}
			}
		}
		next = found
	}
	return level
}

// drawnFold is where a child ensemble was drawn: its subgraph or cluster id
// and the id of its first agent's node.
type drawnFold struct {
	sub, first string
}

// mermaidChildren writes the subgraphs of the children of e's agents, down
// to depth levels, and returns the ids of their nodes by kind; link counts
// the links written, failure collects the failure edges' numbers. Each file
// is drawn once: a later agent running it is linked to the same subgraph,
// with the label "same file", so that the drawing grows with the files and
// their agents, not with the paths through them.
func mermaidChildren(p func(string, ...any), e *ensemble.Ensemble, ids map[string]string, depth int, link *int, failure *[]string) map[ensemble.Kind][]string {
	classes := map[ensemble.Kind][]string{}
	level := levels(e, depth)
	drawn := map[*ensemble.Ensemble]drawnFold{}
	var walk func(c child)
	n := 0
	walk = func(c child) {
		if d, ok := drawn[c.e]; ok {
			p("    %s -. same file .- %s\n", c.parentID, d.sub)
			*link++
			return
		}
		n++
		sub := fmt.Sprintf("c%d", n)
		drawn[c.e] = drawnFold{sub: sub}
		cid := map[string]string{}
		for i, a := range c.e.Agents {
			cid[a.Name] = fmt.Sprintf("%s_%d", sub, i+1)
		}
		p("    subgraph %s[\"%s\"]\n", sub, mermaidText([]string{strings.TrimSuffix(c.prefix, "/") + ": " + c.e.Name}))
		for _, a := range c.e.Agents {
			s := shape(a.Kind).Mermaid
			p("        %s%s\"%s\"%s\n", cid[a.Name], s[0], mermaidText(nodeLines(c.e, a)), s[1])
			classes[a.Kind] = append(classes[a.Kind], cid[a.Name])
		}
		p("    end\n")
		p("    %s -.- %s\n", c.parentID, sub)
		*link++
		mermaidEdges(p, c.e, cid, link, failure)
		if left := depth - level[c.e]; left > 0 {
			for _, g := range childrenOf(c.e, func(s string) string { return cid[s] }, c.prefix, left) {
				walk(g)
			}
		}
	}
	for _, c := range childrenOf(e, func(s string) string { return ids[s] }, "", depth) {
		walk(c)
	}
	return classes
}

// dotChildren writes the clusters of the children of e's agents, down to
// depth levels: node ids are paths (review_round/critic), and a dotted line
// joins an agent to the first agent of each child it runs. Each file is
// drawn once, as mermaidChildren does: a later agent running it gets a
// dotted line labelled "same file" to the first agent of its cluster.
func dotChildren(p func(string, ...any), e *ensemble.Ensemble, depth int) {
	level := levels(e, depth)
	drawn := map[*ensemble.Ensemble]drawnFold{}
	n := 0
	var walk func(c child, indent string)
	walk = func(c child, indent string) {
		if d, ok := drawn[c.e]; ok {
			if d.first != "" {
				p("%s%s -> %s [style=dotted, arrowhead=none, label=\"same file\"];\n", indent, dotString(c.parentID), dotString(d.first))
			}
			return
		}
		n++
		d := drawnFold{sub: fmt.Sprintf("cluster_%d", n)}
		if len(c.e.Agents) > 0 {
			d.first = c.prefix + c.e.Agents[0].Name
		}
		drawn[c.e] = d
		p("%ssubgraph %s {\n", indent, dotString(d.sub))
		p("%s  label=%s;\n%s  style=dashed;\n%s  color=\"#3b5b92\";\n", indent, dotString(strings.TrimSuffix(c.prefix, "/")+": "+c.e.Name), indent, indent)
		for _, a := range c.e.Agents {
			p("%s  %s [label=%s, class=%s, %s];\n", indent, dotString(c.prefix+a.Name), dotLabel(nodeLines(c.e, a)), dotString(kindName(a.Kind)), dotNodeShape(a))
		}
		for _, a := range c.e.Agents {
			for _, d := range a.Dependencies {
				var attrs []string
				if lines := edgeLines(d); len(lines) > 0 {
					attrs = append(attrs, "label="+dotLabel(lines))
				}
				if !d.RequiresAll {
					attrs = append(attrs, "style=dashed")
				}
				p("%s  %s -> %s", indent, dotString(c.prefix+d.AgentName), dotString(c.prefix+a.Name))
				if len(attrs) > 0 {
					p(" [%s]", strings.Join(attrs, ", "))
				}
				p(";\n")
			}
		}
		if left := depth - level[c.e]; left > 0 {
			for _, g := range childrenOf(c.e, func(s string) string { return c.prefix + s }, c.prefix, left) {
				walk(g, indent+"  ")
			}
		}
		p("%s}\n", indent)
		if d.first != "" {
			p("%s%s -> %s [style=dotted, arrowhead=none];\n", indent, dotString(c.parentID), dotString(d.first))
		}
	}
	for _, c := range childrenOf(e, func(s string) string { return s }, "", depth) {
		walk(c, "  ")
	}
}
