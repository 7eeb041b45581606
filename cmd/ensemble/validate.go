package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/session"
)

func newValidateCmd(io *stdio) *cobra.Command {
	var profiles []string
	var output string
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate FILE|DIR|-...",
		Short: "Check ensemble files without running them (exit 0 or 2)",
		Long: `Check ensemble files without running them: exit 0 when all are valid, 2 otherwise.

A directory stands for every ensemble file under it: the .yaml and .yml files
whose top level has an "agents" key (other YAML, such as responses and profiles
files, is skipped), in every subdirectory but hidden ones, testdata, vendor
and node_modules.
"-" reads an ensemble from standard input, named <stdin> in errors; its scripts
resolve against the current directory.

Warnings (a join inside a loop that would pair new and old outputs) are
printed as FILE:LINE:COL: warning: message and do not fail the check;
--strict counts them as errors.`,
		Args: io.args(1, -1, "at least one ensemble FILE, DIR, or - (standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(validateOutputs, output) {
				return usageErr("--output must be text or json, got %q", output)
			}
			paths, err := ensembleFiles(args)
			if err != nil {
				return err
			}
			if output == "json" {
				return validateJSON(io, paths, profiles, strict)
			}
			failed := false
			for _, path := range paths {
				e, err := loadArg(io, path, profiles)
				if err != nil {
					io.printError(err)
					failed = true
					continue
				}
				if strict && len(e.Warnings) > 0 {
					list := ensemble.ErrorList(e.Warnings)
					io.printError(&list)
					failed = true
					continue
				}
				for _, w := range e.Warnings {
					io.printWarning(w)
				}
				fmt.Fprintf(io.out, "%s: ok%s\n", displayName(path), treeNote(e))
			}
			if failed {
				return &exitError{code: engine.ExitUsage}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&profiles, "profiles", nil, "model profiles `FILE` (repeatable)")
	cmd.Flags().BoolVar(&strict, "strict", false, "count warnings as errors (exit 2)")
	cmd.Flags().StringVar(&output, "output", "text", "the output `FORMAT`: text or json (json: a list of {file, line, column, severity, message} on stdout, [] when there is none)")
	return cmd
}

// stdinName names the ensemble read from standard input.
const stdinName = "<stdin>"

func displayName(path string) string {
	if path == "-" {
		return stdinName
	}
	return path
}

// ensembleFiles expands the arguments of validate (ensemble.Expand).
func ensembleFiles(args []string) ([]string, error) {
	paths, err := ensemble.Expand(args)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return paths, nil
}

// treeNote is what `validate` adds to a valid file's ok: how many child
// ensembles were validated with it.
func treeNote(e *ensemble.Ensemble) string {
	files := map[*ensemble.Ensemble]bool{}
	agent.Walk(e, func(c *ensemble.Ensemble, _ *ensemble.Agent) { files[c] = true })
	delete(files, e)
	switch len(files) {
	case 0:
		return ""
	case 1:
		return " (with 1 child ensemble)"
	}
	return fmt.Sprintf(" (with %d child ensembles)", len(files))
}

// validateJSON prints every problem of every file as one JSON list on
// stdout, and nothing else: exit 2 when there is an error among them.
func validateJSON(io *stdio, paths, profiles []string, strict bool) error {
	problems := []ensemble.Problem{}
	failed := false
	for _, path := range paths {
		e, err := loadArg(io, path, profiles)
		for _, p := range ensemble.Problems(displayName(path), e, err, strict) {
			problems = append(problems, p)
			failed = failed || p.Severity == "error"
		}
	}
	enc := json.NewEncoder(io.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // <stdin> as it is
	if err := enc.Encode(problems); err != nil {
		return err
	}
	if failed {
		return &exitError{code: engine.ExitUsage}
	}
	return nil
}

// loadArg is loadEnsemble for an argument of validate: "-" is an ensemble
// on standard input, named stdinName, whose scripts resolve against the
// current directory.
func loadArg(io *stdio, path string, profiles []string) (*ensemble.Ensemble, error) {
	if path != "-" {
		return loadEnsemble(io, path, profiles)
	}
	in := io.in
	if in == nil {
		in = strings.NewReader("")
	}
	data, err := ensemble.ReadAll(stdinName, in)
	if err != nil {
		return nil, err
	}
	return load(io, stdinName, data, profiles)
}

// loadEnsemble loads and validates an ensemble with the profiles from
// --profiles and $ENSEMBLE_PROFILES: the file's own models win on a name
// clash, then the --profiles files in order, then $ENSEMBLE_PROFILES.
func loadEnsemble(io *stdio, path string, profiles []string) (*ensemble.Ensemble, error) {
	if path == "-" { // a run keeps its ensemble's path: its scripts, resume
		return nil, errors.New("-: this command reads its ensemble from a FILE, not from standard input (validate - does); save it to a file")
	}
	if err := folderGiven(path); err != nil {
		return nil, err
	}
	return load(io, path, nil, profiles)
}

// folderGiven is the error of a folder given for an ensemble FILE (run
// my-ensemble, after init my-ensemble), naming the ensemble files right in
// it (not below: the folder may be a large tree); nil for anything else.
func folderGiven(path string) error {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil // not a folder, or not readable: the load says why
	}
	var found []string
	for _, d := range entries {
		if ext := filepath.Ext(d.Name()); d.Type().IsRegular() && (ext == ".yaml" || ext == ".yml") {
			p := filepath.Join(path, d.Name())
			if data, err := ensemble.ReadFile(p); err == nil && ensemble.LooksLikeEnsemble(data) {
				found = append(found, p)
			}
		}
	}
	switch len(found) {
	case 0:
		return fmt.Errorf("%s is a folder: name an ensemble FILE", path)
	case 1:
		return fmt.Errorf("%s is a folder: name its ensemble file, %s", path, found[0])
	case 2, 3, 4:
		return fmt.Errorf("%s is a folder: name one of its ensemble files: %s", path, strings.Join(found, ", "))
	default:
		return fmt.Errorf("%s is a folder: name one of its ensemble files: %s and %d more", path, strings.Join(found[:3], ", "), len(found)-3)
	}
}

// load is loadEnsemble of data, or of the file at path when data is nil.
func load(io *stdio, path string, data []byte, profiles []string) (*ensemble.Ensemble, error) {
	e, err := session.Load(path, data, session.LoadOptions{Profiles: profiles, LookupEnv: io.lookupEnv})
	if err != nil {
		return nil, err
	}
	io.redactKeysOf(e)
	return e, nil
}

// redactKeysOf redacts, in what the command prints from now on, the keys
// of e's profiles.
func (s *stdio) redactKeysOf(e *ensemble.Ensemble) { s.secrets = secrets.OfEnsemble(e, s.lookupEnv) }
