package main

import (
	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/internal/bdd"
	"github.com/ensemble-run/ensemble/internal/graph"
)

// runOutputs are the values of --output of run and resume.
var runOutputs = []string{"text", "json", "jsonl"}

// validateOutputs are the values of --output of validate.
var validateOutputs = []string{"text", "json"}

// completions are what shell completion (ensemble completion SHELL) offers,
// per command: the values of its enum flags, and the file extensions of its
// arguments and of its file flags.
var completions = map[string]struct {
	enums map[string][]string // flag → values
	args  []string            // extensions of the arguments
	files map[string][]string // flag → extensions (nil: any file)
}{
	"run": {
		enums: map[string][]string{"output": runOutputs},
		args:  yamlExt,
		files: map[string][]string{"responses": yamlExt, "profiles": yamlExt, "state": nil, "report": {"md"}, "input-file": nil},
	},
	"resume": {
		enums: map[string][]string{"output": runOutputs},
		args:  nil, // state files have any name: run.state, run.json
		files: map[string][]string{"responses": yamlExt, "profiles": yamlExt, "report": {"md"}, "answers": yamlExt},
	},
	"batch": {
		args:  yamlExt,
		files: map[string][]string{"inputs": {"jsonl"}, "out": {"jsonl"}, "responses": yamlExt, "profiles": yamlExt, "state": nil, "resume": nil},
	},
	"validate": {
		enums: map[string][]string{"output": validateOutputs},
		args:  yamlExt,
		files: map[string][]string{"profiles": yamlExt},
	},
	"graph": {
		enums: map[string][]string{"format": graph.Formats},
		args:  yamlExt,
		files: map[string][]string{"profiles": yamlExt},
	},
	"serve": {
		args:  nil, // ensemble files, or folders of them
		files: map[string][]string{"profiles": yamlExt, "state": nil, "token-file": nil},
	},
	"test": {
		enums: map[string][]string{"format": bdd.Formats},
		args:  []string{"feature"},
		files: map[string][]string{"profiles": yamlExt, "out": nil},
	},
}

var yamlExt = []string{"yaml", "yml"}

// addCompletions registers the completions of the subcommands of root.
func addCompletions(root *cobra.Command) {
	for _, cmd := range root.Commands() {
		c, ok := completions[cmd.Name()]
		if !ok {
			continue
		}
		for flag, values := range c.enums {
			_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
		for flag, exts := range c.files {
			_ = cmd.MarkFlagFilename(flag, exts...)
		}
		exts := c.args
		cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			if exts == nil {
				return nil, cobra.ShellCompDirectiveDefault // any file
			}
			return exts, cobra.ShellCompDirectiveFilterFileExt
		}
	}
}
