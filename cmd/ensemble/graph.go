package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/graph"
)

func newGraphCmd(io *stdio) *cobra.Command {
	var format string
	var profiles []string
	var depth int
	cmd := &cobra.Command{
		Use:   "graph FILE",
		Short: "Print the dependency graph as Mermaid (default) or Graphviz DOT",
		Long: `Print an ensemble's dependency graph: a Mermaid flowchart (paste it into a
Markdown file on GitHub, or mermaid.live), or with --format dot a Graphviz graph
(graph FILE --format dot | dot -Tsvg > graph.svg).

Edges go from a dependency to the agent that depends on it. Required edges are
solid, optional ones (requires_all: false) dashed; conditions and max_executions
label the edges. Script agents are boxes, LLM agents rounded boxes, ask agents
parallelograms, ensemble agents double-sided boxes and dispatch agents hexagons;
the child ensembles they run are drawn beside them as subgraphs (clusters in
DOT), --depth levels deep; a file run by several agents is drawn once, the
later agents joined to it by a dotted line labelled "same file".`,
		Args: io.args(1, 1, "one ensemble FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(graph.Formats, format) {
				return usageErr("--format must be mermaid or dot, got %q", format)
			}
			e, err := loadEnsemble(io, args[0], profiles)
			if err != nil {
				return &exitError{code: engine.ExitUsage, err: err}
			}
			for _, w := range graph.Warnings(e, format) {
				fmt.Fprintf(io.err, "ensemble: warning: %s\n", w)
			}
			if depth < 0 {
				return usageErr("--depth must be at least 0, got %d", depth)
			}
			return graph.WriteDepth(io.stdout(), e, format, depth)
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "draw in `FORMAT`: mermaid or dot")
	cmd.Flags().IntVar(&depth, "depth", graph.DefaultDepth, "draw `N` levels of child ensembles (0: none)")
	cmd.Flags().StringArrayVar(&profiles, "profiles", nil, "model profiles `FILE` (repeatable)")
	return cmd
}
