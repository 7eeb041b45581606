package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/internal/importer/llmorc"
)

func newImportCmd(io *stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert another tool's project into ensemble files",
	}
	var out, pkg string
	llm := &cobra.Command{
		Use:   "llm-orc DIR --out DIR",
		Short: "Convert an llm-orc project's ensembles and profiles into ensemble files",
		Long: `Converts the llm-orc project at DIR (the folder holding .llm-orc, or .llm-orc
itself) into ensemble files in the --out folder: one file per llm-orc ensemble,
with the model profiles it uses, and the scripts it runs copied beside it
(script agents get protocol: llm-orc, so the scripts run unchanged). It prints
each file written, then each thing it could not convert, as
FILE:LINE: what (FILE under DIR's .llm-orc). Nothing is overwritten.
A symbolic link leading out of DIR is not followed: it is listed instead.
llm-orc's built-in primitives/ scripts are copied from its installed package
(--llm-orc-package, or the one python3 imports).
See docs/llm-orc.md.

Exit codes: 0 converted (problems may be listed); 2 bad input (no .llm-orc
folder, a config or profiles file that does not parse, an output file that
exists).`,
		Args: io.args(1, 1, "one llm-orc project folder"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr("import llm-orc: --out DIR is required")
			}
			res, err := llmorc.Import(llmorc.Options{Dir: args[0], Out: out, Package: pkg})
			var ie *llmorc.InputError
			if errors.As(err, &ie) {
				return usageErr("import llm-orc: %v", err)
			}
			if err != nil {
				return fmt.Errorf("import llm-orc: %w", err)
			}
			for _, w := range res.Written {
				fmt.Fprintf(io.out, "wrote %s\n", w)
			}
			if len(res.Problems) > 0 {
				fmt.Fprintf(io.out, "\nnot converted, or not exactly (%d):\n", len(res.Problems))
				for _, p := range res.Problems {
					fmt.Fprintf(io.out, "  %s\n", p)
				}
			}
			return nil
		},
	}
	llm.Flags().StringVar(&out, "out", "", "the `DIR` to write the ensemble files to (required)")
	llm.Flags().StringVar(&pkg, "llm-orc-package", "", "the `DIR` of the installed llm-orc Python package (llm_orc), whose primitives/ scripts are copied; default: the one python3 imports")
	cmd.AddCommand(llm)
	return io.group(cmd)
}
