package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
)

// commandLine is the command that runs c, as the user runs this binary:
// "bin/ensemble state show" (see programName).
func (s *stdio) commandLine(c *cobra.Command) string {
	_, sub, _ := strings.Cut(c.CommandPath(), " ")
	if sub == "" {
		return s.program()
	}
	return s.program() + " " + sub
}

// helpHint is the end of a usage error: where to read how c is used.
func (s *stdio) helpHint(c *cobra.Command) string {
	help := s.commandLine(c) + " --help"
	if strings.Contains(help, "'") { // a quoted program name
		return "see: " + help
	}
	return "see '" + help + "'"
}

// args is the Args validator of a command that takes from min to max
// arguments (max < 0: any number), which what names after "needs" and
// "takes" ("one ensemble FILE"): a missing or extra argument is a usage
// error that says what the command wants, rather than cobra's count.
func (s *stdio) args(min, max int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		name := strings.TrimPrefix(s.commandLine(c), s.program()+" ")
		switch {
		case len(args) < min:
			return usageErr("%s needs %s; %s", name, what, s.helpHint(c))
		case max >= 0 && len(args) > max:
			return usageErr("%s takes %s, got %s; %s", name, what, quoteArgs(args), s.helpHint(c))
		}
		return nil
	}
}

// noArgs is the Args validator of a command that takes no argument.
func (s *stdio) noArgs() cobra.PositionalArgs { return s.args(0, 0, "no argument") }

// quoteArgs lists args for a message: `2: "a.yaml" "b.yaml"`.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("%d: %s", len(args), strings.Join(q, " "))
}

// flagError is every command's error for a flag it cannot parse: a usage
// error, with the closest flag for one it does not know (a flag typed
// with one dash, -input, too), and where to read the command's flags.
func (s *stdio) flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if m, ok := invalidValue(err); ok {
		msg = m
	}
	if ne, ok := errors.AsType[*pflag.NotExistError](err); ok {
		typed := ne.GetSpecifiedName()
		if group := ne.GetSpecifiedShortnames(); len(group) > 1 {
			typed = group // -input: a long flag with one dash
		} else if len(typed) == 1 {
			typed = "" // no single letter is close to anything
		}
		if typed != "" {
			var names []string
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					names = append(names, "--"+f.Name)
				}
			})
			msg += didYouMean("--"+typed, names)
		}
	}
	return &exitError{code: engine.ExitUsage, err: fmt.Errorf("%s; %s", msg, s.helpHint(c))}
}

// didYouMean is ` (did you mean "x"?)` for the candidate closest to s,
// or "" when none is close (ensemble.Suggest, in parentheses, as a usage
// error goes on after it).
func didYouMean(s string, candidates []string) string {
	if sug := ensemble.Suggest(s, candidates); sug != "" {
		return " (" + strings.TrimPrefix(sug, "; ") + ")"
	}
	return ""
}

// group makes c a command that only groups others (the root, state, mcp):
// without an argument it prints its help; an argument is a command it does
// not have, a usage error (cobra would print the help and exit 0).
func (s *stdio) group(c *cobra.Command) *cobra.Command {
	c.Args = s.subcommands
	c.RunE = func(c *cobra.Command, args []string) error { return c.Help() }
	return c
}

// subcommands is the Args validator of a group: an argument is a command
// it does not have.
func (s *stdio) subcommands(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	what := "no command"
	if c.HasParent() {
		what = strings.TrimPrefix(s.commandLine(c), s.program()+" ") + " has no command"
	}
	return usageErr("%s %q%s; %s", what, args[0], didYouMean(args[0], names), s.helpHint(c))
}
