package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
)

func newValidateCmd(io *stdio) *cobra.Command {
	var profiles []string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check ensemble files without running them (exit 0 or 2)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			failed := false
			for _, path := range args {
				if _, err := loadEnsemble(io, path, profiles); err != nil {
					fmt.Fprintln(io.err, err)
					failed = true
					continue
				}
				fmt.Fprintf(io.out, "%s: ok\n", path)
			}
			if failed {
				return &exitError{code: engine.ExitUsage}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&profiles, "profiles", nil, "model profiles `FILE` (repeatable)")
	return cmd
}

// loadEnsemble loads and validates an ensemble with the profiles from
// --profiles and $ENSEMBLE_PROFILES: the file's own models win on a name
// clash, then the --profiles files in order, then $ENSEMBLE_PROFILES.
func loadEnsemble(io *stdio, path string, profiles []string) (*ensemble.Ensemble, error) {
	files := slices.Clone(profiles)
	if env, ok := io.lookupEnv("ENSEMBLE_PROFILES"); ok && env != "" {
		files = append(files, env)
	}
	e, err := ensemble.Load(path, ensemble.LoadOptions{ProfileFiles: files, LookupEnv: io.lookupEnv})
	if err != nil {
		var list *ensemble.ErrorList
		if errors.As(err, &list) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}
