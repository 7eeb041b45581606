package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// skeleton is the ensemble `ensemble init` writes: a script agent, an LLM
// agent that depends on it, its injected replies and a feature file. It is
// a working ensemble in the repository too (`ensemble test` runs it).
//
//go:embed skeleton
var skeleton embed.FS

func newInitCmd(io *stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter ensemble (a script, an LLM agent, its replies, a test) to DIR",
		Long: `Writes a small working ensemble to DIR (default: the current folder):
ensemble.yaml (a script agent and an LLM agent that depends on it),
responses.yaml (the LLM agent's replies, so that no model is called),
scripts/gather.py (python3) and ensemble.feature (a test with the built-in
steps). Nothing is overwritten: when one of these files exists, init lists
them and exits 2.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return initEnsemble(io, dir)
		},
	}
}

func initEnsemble(io *stdio, dir string) error {
	files, err := skeletonFiles()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return usageErr("init: %s is a file, not a folder: name a folder (a new one is made)", dir)
	}
	var exist []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if _, err := os.Lstat(p); err == nil {
			exist = append(exist, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return usageErr("init: %v", err)
		}
	}
	if len(exist) > 0 {
		return usageErr("init: these files exist, and init does not overwrite files:\n  %s", strings.Join(exist, "\n  "))
	}
	for _, f := range files {
		data, err := skeleton.ReadFile("skeleton/" + f)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(f))
		mode := os.FileMode(0o644)
		if strings.HasPrefix(f, "scripts/") {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		// O_EXCL: a file created since the check is not overwritten either.
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		_, err = fh.Write(data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		fmt.Fprintf(io.out, "created %s\n", p)
	}
	ens, resp := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "responses.yaml")
	fmt.Fprintf(io.out, "\nTry it (no model is called; the script needs python3):\n  %[1]s run %[2]s --responses %[3]s\n  %[1]s test %[4]s\n",
		io.program(), shellQuote(ens), shellQuote(resp), shellQuote(dir))
	return nil
}

// skeletonFiles lists the skeleton's files, relative to it, with slashes.
func skeletonFiles() ([]string, error) {
	var files []string
	err := fs.WalkDir(skeleton, "skeleton", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, "skeleton/"))
		}
		return err
	})
	return files, err
}
