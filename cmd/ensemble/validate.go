package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/bdd"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/kinds"
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
		Args: cobra.MinimumNArgs(1),
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
	cmd.Flags().StringVar(&output, "output", "text", "text|json (json: a list of {file, line, column, severity, message} on stdout, [] when there is none)")
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

// ensembleFiles expands the arguments of validate: a directory becomes the
// ensemble files under it, in lexical order (with those whose "agents" key
// is misspelt, see ensembleLike); files and "-" stay as they are. A
// directory with no ensemble file is an error: validating nothing must not
// pass.
func ensembleFiles(args []string) ([]string, error) {
	var paths []string
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if arg == "-" || err != nil || !fi.IsDir() {
			paths = append(paths, arg) // a missing file is reported by the load
			continue
		}
		n := len(paths)
		err = filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && path != arg && bdd.SkippedDir(d.Name()):
				return filepath.SkipDir
			case d.IsDir():
				return nil
			}
			if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
				return nil
			}
			data, err := ensemble.ReadFile(path)
			if err != nil {
				paths = append(paths, path) // loading it again reports why
				return nil
			}
			if ensembleLike(data, true) {
				paths = append(paths, path)
			}
			return nil
		})
		if err != nil {
			return nil, usageErr("%v", err)
		}
		if len(paths) == n {
			return nil, usageErr("%s: no ensemble file in this directory (a .yaml or .yml file with an \"agents\" key)", arg)
		}
		paths = append(paths[:n], withoutIncluded(paths[n:])...)
	}
	return paths, nil
}

// topLevelAgents finds an "agents" key at the top level of a YAML file
// that does not parse.
var topLevelAgents = regexp.MustCompile(`(?m)^["']?agents["']?[ \t]*:`)

// isEnsemble reports whether data is an ensemble file rather than some
// other YAML (responses, profiles) or JSON: its top level has an "agents"
// key. A file too broken to parse counts when a line starts with "agents:".
func isEnsemble(data []byte) bool { return ensembleLike(data, false) }

// ensembleLike is isEnsemble, and with misspelt also true for a file that
// looks like an ensemble whose "agents" key is misspelt ("agent",
// "agnets"): a top-level "name" that is a text (in a responses file, every
// key holds a list) and a key close to "agents". Validating a folder loads
// such a file, so that the typo is reported rather than the file skipped
// as some other YAML.
func ensembleLike(data []byte, misspelt bool) bool {
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return topLevelAgents.Match(data)
	}
	if _, ok := top["agents"]; ok || !misspelt {
		return ok
	}
	if _, ok := top["name"].(string); !ok {
		return false
	}
	for k := range top {
		if ensemble.Suggest(k, []string{"agents"}) != "" {
			return true
		}
	}
	return false
}

// problem is one entry of validate --output json. line and column are
// 1-based, 0 when unknown (a file that cannot be read).
type problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Severity string `json:"severity"` // "error", or "warning" (an error with --strict)
	Message  string `json:"message"`
}

// validateJSON prints every problem of every file as one JSON list on
// stdout, and nothing else: exit 2 when the list is not empty.
func validateJSON(io *stdio, paths, profiles []string, strict bool) error {
	problems := []problem{}
	failed := false
	for _, path := range paths {
		ens, err := loadArg(io, path, profiles)
		var list *ensemble.ErrorList
		switch {
		case err == nil:
			severity := "warning"
			if strict {
				severity = "error"
			}
			for _, w := range ens.Warnings {
				problems = append(problems, problem{w.File, w.Line, w.Column, severity, w.Message})
				failed = failed || strict
			}
		case errors.As(err, &list):
			for _, e := range *list {
				problems = append(problems, problem{e.File, e.Line, e.Column, "error", e.Message})
			}
			failed = true
		default:
			problems = append(problems, problem{File: displayName(path), Severity: "error", Message: err.Error()})
			failed = true
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
	return load(io, path, nil, profiles)
}

// load is loadEnsemble of data, or of the file at path when data is nil.
func load(io *stdio, path string, data []byte, profiles []string) (*ensemble.Ensemble, error) {
	files := slices.Clone(profiles)
	if env, ok := io.lookupEnv("ENSEMBLE_PROFILES"); ok && env != "" {
		files = append(files, env)
	}
	opts := kinds.Builtin().Load(ensemble.LoadOptions{ProfileFiles: files, LookupEnv: io.lookupEnv})
	var e *ensemble.Ensemble
	var err error
	if data == nil {
		e, err = ensemble.Load(path, opts)
	} else {
		e, err = ensemble.LoadBytes(path, data, opts)
	}
	if err != nil {
		var list *ensemble.ErrorList
		if errors.As(err, &list) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	io.secrets = secrets.Of(e.Models, io.lookupEnv)
	return e, nil
}
