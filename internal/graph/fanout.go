package graph

import (
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
)

// fanOutLines are the lines a fan-out agent's label adds: the expression
// it fans out over, and the options that differ from the defaults.
func fanOutLines(a *ensemble.Agent) []string {
	fo := a.FanOut
	if fo == nil {
		return nil
	}
	lines := []string{"fan_out over " + strings.Join(strings.Fields(fo.Over), " ")}
	var opts []string
	if fo.MaxParallel > 0 {
		opts = append(opts, fmt.Sprintf("max_parallel %d", fo.MaxParallel))
	}
	if fo.MaxItems != ensemble.DefaultMaxItems {
		opts = append(opts, fmt.Sprintf("max_items %d", fo.MaxItems))
	}
	if fo.FailOnError {
		opts = append(opts, "on_error fail")
	}
	if len(opts) > 0 {
		lines = append(lines, strings.Join(opts, ", "))
	}
	return lines
}

// mermaidFanOut is the node of a fan-out agent: Mermaid's stacked
// rectangle (shape procs, Mermaid 11.3 and later), whatever its kind; the
// kind's colour still tells which it is.
func mermaidFanOut(id string, lines []string) string {
	return fmt.Sprintf("%s@{ shape: procs, label: \"%s\" }", id, mermaidText(lines))
}

// dotNodeShape is the shape and colours of an agent's node: its kind's, a
// stack of boxes (box3d) for a fan-out.
func dotNodeShape(a *ensemble.Agent) string {
	shape := shape(a.Kind).DOT
	if a.FanOut == nil {
		return shape
	}
	shape = strings.Replace(shape, "shape=box, ", "shape=box3d, ", 1)
	return strings.Replace(shape, `style="rounded,filled", `, "", 1)
}
