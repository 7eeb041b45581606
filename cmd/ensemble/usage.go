package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The sections of a command's flags in --help, in this order: the flags
// of flagSection go under their section's title, the others under
// "Flags:" first (run has thirty flags; in one list the Temporal ones
// were mixed in with the rest).
var flagSections = []struct {
	title string
	flags []string
}{
	{"Output flags:", []string{"output", "quiet", "verbose", "stream", "report", "otel"}},
	{"Limit flags:", []string{"max-turns", "timeout", "parallel", "max-tokens", "max-requests", "max-cost"}},
	{"Testing flags:", []string{"responses", "live", "live-all", "record", "replay", "record-missing", "record-tools"}},
	{"Temporal flags:", []string{"temporal", "namespace", "task-queue", "blobs"}},
}

func init() {
	cobra.AddTemplateFunc("flagSections", sectionedFlags)
}

// sectionedFlags is the "Flags:" part of c's usage and the sections of
// flagSections that c has flags of.
func sectionedFlags(c *cobra.Command) string {
	sets := make([]*pflag.FlagSet, len(flagSections)+1)
	for i := range sets {
		sets[i] = pflag.NewFlagSet("", pflag.ContinueOnError)
	}
	section := map[string]int{}
	for i, s := range flagSections {
		for _, name := range s.flags {
			section[name] = i + 1
		}
	}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) { sets[section[f.Name]].AddFlag(f) })
	var b strings.Builder
	for i, set := range sets {
		if !set.HasAvailableFlags() {
			continue
		}
		title := "Flags:"
		if i > 0 {
			title = flagSections[i-1].title
		}
		b.WriteString("\n\n" + title + "\n" + strings.TrimRight(set.FlagUsages(), " \n"))
	}
	return b.String()
}

// usageTemplate is cobra's, but for the flags, in sections. Its command
// lines start with the program's name, ensemble, whatever path started
// it: --help describes the program (the messages' commands to type start
// as the user runs it, see programName).
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}

Available Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}{{flagSections .}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`

// exitCodesHelp ends the help of run and resume: the exit codes of a run
// (docs/cli.md#exit-codes; a test checks that both list the same codes).
const exitCodesHelp = `Exit codes:
  0    completed, and every failed execution (if any) was handled by an on: failure edge
  1    completed, but an execution failed unhandled (see the result's errors)
  2    nothing ran: bad usage, or an invalid ensemble, responses, profiles or state file
  3    stopped by max_total_turns while agents were still ready
  4    the run's timeout passed
  5    waiting for input: an ask agent waits for an answer given to resume --answer
  6    a budget was spent (max_tokens, max_requests or max_cost)
  7    --strict, and an expression read a key its value does not have
  8    completed, but an expectation (expect:, --expect) is false
  130  interrupted (SIGINT, SIGTERM or SIGHUP)`
