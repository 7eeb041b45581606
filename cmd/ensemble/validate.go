package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
)

func newValidateCmd(io *stdio) *cobra.Command {
	var profiles []string
	var output string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check ensemble files without running them (exit 0 or 2)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "text":
			case "json":
				return validateJSON(io, args, profiles)
			default:
				return usageErr("--output must be text or json, got %q", output)
			}
			failed := false
			for _, path := range args {
				if _, err := loadEnsemble(io, path, profiles); err != nil {
					io.printError(err)
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
	cmd.Flags().StringVar(&output, "output", "text", "text|json (json: a list of {file, line, column, message} on stdout, [] when all are valid)")
	return cmd
}

// problem is one entry of validate --output json. line and column are
// 1-based, 0 when unknown (a file that cannot be read).
type problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// validateJSON prints every problem of every file as one JSON list on
// stdout, and nothing else: exit 2 when the list is not empty.
func validateJSON(io *stdio, paths, profiles []string) error {
	problems := []problem{}
	for _, path := range paths {
		_, err := loadEnsemble(io, path, profiles)
		var list *ensemble.ErrorList
		switch {
		case err == nil:
		case errors.As(err, &list):
			for _, e := range *list {
				problems = append(problems, problem{e.File, e.Line, e.Column, e.Message})
			}
		default:
			problems = append(problems, problem{File: path, Message: err.Error()})
		}
	}
	enc := json.NewEncoder(io.out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(problems); err != nil {
		return err
	}
	if len(problems) > 0 {
		return &exitError{code: engine.ExitUsage}
	}
	return nil
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
