package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A missing or extra argument, an unknown command and an unknown flag are
// usage errors (exit 2) that say what the command wants, the closest name
// for a misspelt one, and where its help is.
func TestUsageErrorsSayWhatIsWanted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "ensemble: run needs one ensemble FILE; see 'ensemble run --help'\n"},
		{[]string{"run", "a.yaml", "b.yaml"}, `ensemble: run takes one ensemble FILE, got 2: "a.yaml" "b.yaml"; see 'ensemble run --help'` + "\n"},
		{[]string{"resume"}, "ensemble: resume needs one STATE file"},
		{[]string{"state", "show"}, "ensemble: state show needs one state FILE (with --temporal, a run's ID); see 'ensemble state show --help'\n"},
		{[]string{"mcp", "serve"}, "ensemble: mcp serve needs one DIR"},
		{[]string{"validate"}, "ensemble: validate needs at least one ensemble FILE, DIR, or -"},
		{[]string{"init", "a", "b"}, `ensemble: init takes at most one DIR, got 2: "a" "b"`},
		{[]string{"schema", "x"}, `ensemble: schema takes no argument, got 1: "x"`},
		{[]string{"batch"}, "ensemble: batch needs one ensemble FILE"},
		{[]string{"rnu"}, `ensemble: no command "rnu" (did you mean "run"?); see 'ensemble --help'` + "\n"},
		{[]string{"state", "shwo", "x.db"}, `ensemble: state has no command "shwo" (did you mean "show"?); see 'ensemble state --help'` + "\n"},
		{[]string{"import", "llmorc", "x"}, `ensemble: import has no command "llmorc" (did you mean "llm-orc"?); see 'ensemble import --help'` + "\n"},
		{[]string{"completion", "tcsh"}, `ensemble: completion has no command "tcsh"`},
		{[]string{"completion", "bsh"}, `completion has no command "bsh" (did you mean "bash"?)`},
		{[]string{"run", "x.yaml", "--inptu", "y"}, `ensemble: unknown flag: --inptu (did you mean "--input"?); see 'ensemble run --help'` + "\n"},
		{[]string{"run", "x.yaml", "-input", "y"}, `(did you mean "--input"?); see 'ensemble run --help'`},
		{[]string{"resume", "x.db", "--max-turn", "3"}, `unknown flag: --max-turn (did you mean "--max-turns"?)`},
		{[]string{"run", "-"}, "ensemble: -: this command reads its ensemble from a FILE, not from standard input (validate - does)"},
		{[]string{"run", "../../examples/approval"}, "ensemble: ../../examples/approval is a folder: name its ensemble file, ../../examples/approval/ensemble.yaml\n"},
		{[]string{"batch", "../../examples", "--inputs", "x.jsonl"}, "ensemble: ../../examples is a folder: name an ensemble FILE\n"},
		{[]string{"serve", "no-such-dir"}, "ensemble: no-such-dir: no such file or folder\n"},
		{[]string{"mcp", "serve", "no-such-dir"}, "ensemble: no-such-dir: no such folder\n"},
		{[]string{"graph", "-"}, "ensemble: -: this command reads its ensemble from a FILE"},
		{[]string{"run", "x.yaml", "--max-turns", "abc"}, `ensemble: --max-turns wants a whole number, got "abc"; see 'ensemble run --help'` + "\n"},
		{[]string{"run", "x.yaml", "--timeout", "10"}, `ensemble: --timeout wants a duration with its unit, such as 90s, 10m or 1h30m, got "10"`},
		{[]string{"batch", "x.yaml", "--max-cost", "1,5"}, `ensemble: --max-cost wants a number, got "1,5"`},
		{[]string{"run", "x.yaml", "--zzzzzzzz"}, "ensemble: unknown flag: --zzzzzzzz; see 'ensemble run --help'\n"},
	} {
		o := ensembleCmd(t, "", tt.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tt.want) {
			t.Errorf("ensemble %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tt.args, " "), o.code, o.stderr, tt.want)
		}
	}
}

// The help hint names the program as the user ran it, as every command
// the messages suggest does.
func TestHelpHintNamesTheProgram(t *testing.T) {
	t.Parallel()
	for prog, want := range map[string]string{
		"bin/ensemble":        "see 'bin/ensemble run --help'",
		"'/tmp/a b/ensemble'": "see: '/tmp/a b/ensemble' run --help",
	} {
		var out, errb strings.Builder
		run(t.Context(), []string{"run"}, &stdio{in: strings.NewReader(""), out: &out, err: &errb, prog: prog})
		if !strings.HasSuffix(errb.String(), want+"\n") {
			t.Errorf("prog %s: %q, want it to end with %q", prog, errb.String(), want)
		}
	}
}

// walk calls fn on c and every command under it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// Every flag that takes a value shows what it takes as an upper-case
// placeholder (--run-id ID, --profiles FILE), never its Go type (string,
// stringArray, int).
func TestFlagPlaceholders(t *testing.T) {
	t.Parallel()
	placeholder := regexp.MustCompile(`^[A-Z][A-Z0-9_]*(\.[a-z]+)?([:=\[][A-Z0-9_.:=\[\]]*)?$`) // FILE, FILE.md, HOST:PORT, AGENT=TEXT, FORMAT[:FILE]
	walk(newRootCmd(&stdio{}), func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.NoOptDefVal != "" { // a bool
				return
			}
			if name, _ := pflag.UnquoteUsage(f); !placeholder.MatchString(name) {
				t.Errorf("%s --%s shows %q, not a placeholder (put it in `backquotes` in the usage)", c.CommandPath(), f.Name, name)
			}
		})
	})
}

// --temporal says what it does for each command: state show reads a run
// from the cluster, it runs nothing there.
func TestTemporalFlagIsWordedPerCommand(t *testing.T) {
	t.Parallel()
	root := newRootCmd(&stdio{})
	for path, want := range map[string]string{
		"run":        "run on the Temporal cluster",
		"batch":      "run every input on the Temporal cluster",
		"state show": "read the run from the Temporal cluster",
	} {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Flags().Lookup("temporal").Usage; !strings.HasPrefix(got, want) {
			t.Errorf("%s --temporal: %q, want it to start with %q", path, got, want)
		}
	}
}

// run --help and resume --help list every exit code of docs/cli.md's
// table, and no other.
func TestHelpListsTheExitCodes(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "### Exit codes\n")
	table, _, _ = strings.Cut(table, "\n\n\n")
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^\| ([0-9]+) \|`).FindAllStringSubmatch(table, -1) {
		want = append(want, m[1])
	}
	if len(want) < 8 {
		t.Fatalf("docs/cli.md's exit codes: %v", want)
	}
	for _, cmd := range []string{"run", "resume"} {
		o := ensembleCmd(t, "", cmd, "--help")
		_, codes, ok := strings.Cut(o.stdout, "\nExit codes:\n")
		if !ok {
			t.Errorf("%s --help lists no exit codes:\n%s", cmd, o.stdout)
			continue
		}
		codes, _, _ = strings.Cut(codes, "\n\n")
		var got []string
		for _, m := range regexp.MustCompile(`(?m)^  ([0-9]+) `).FindAllStringSubmatch(codes, -1) {
			got = append(got, m[1])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s --help lists exit codes %v, docs/cli.md %v", cmd, got, want)
		}
	}
}

// run --help puts its flags in sections: the Temporal ones apart from the
// others.
func TestRunHelpGroupsTheFlags(t *testing.T) {
	t.Parallel()
	o := ensembleCmd(t, "", "run", "--help")
	sections := map[string]string{}
	title := ""
	for _, line := range strings.Split(o.stdout, "\n") {
		if strings.HasSuffix(line, "flags:") || line == "Flags:" {
			title = line
		} else if f := strings.Fields(line); title != "" && len(f) > 0 && strings.HasPrefix(f[0], "--") {
			sections[f[0]] = title
		} else if title != "" && len(f) > 1 && strings.HasPrefix(f[1], "--") {
			sections[f[1]] = title // -q, --quiet
		}
	}
	for flag, want := range map[string]string{
		"--input": "Flags:", "--state": "Flags:", "--output": "Output flags:", "--quiet": "Output flags:",
		"--max-turns": "Limit flags:", "--responses": "Testing flags:", "--temporal": "Temporal flags:", "--blobs": "Temporal flags:",
	} {
		if sections[flag] != want {
			t.Errorf("run --help: %s is under %q, want %q\n%s", flag, sections[flag], want, o.stdout)
		}
	}
}

// Every command's --help has Examples, and each example is a command line
// the command takes: its words name the command, and its flags and
// arguments parse and pass the command's checks of them.
func TestExamplesAreCommandsTheyTake(t *testing.T) {
	t.Parallel()
	walk(newRootCmd(&stdio{}), func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() || c.Name() == "help" || c.HasParent() && c.Parent().Name() == "completion" {
			return // hidden, cobra's help, and the shells of completion (their help has its own)
		}
		if c.Example == "" {
			t.Errorf("%q has no Examples", c.CommandPath())
			return
		}
		ran := false
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			for _, words := range shellCommands(line) {
				if words[0] != "ensemble" {
					continue
				}
				root := newRootCmd(&stdio{})
				cmd, rest, err := root.Find(words[1:])
				if err != nil {
					t.Errorf("example %q: %v", line, err)
					continue
				}
				if err := cmd.ParseFlags(rest); err != nil {
					t.Errorf("example %q: %v", line, err)
					continue
				}
				if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
					t.Errorf("example %q: %v", line, err)
				}
				if cmd.PreRunE != nil {
					if err := cmd.PreRunE(cmd, cmd.Flags().Args()); err != nil {
						t.Errorf("example %q: %v", line, err)
					}
				}
				ran = ran || cmd.CommandPath() == c.CommandPath() || c.HasSubCommands()
			}
		}
		if !ran {
			t.Errorf("no example of %q runs it:\n%s", c.CommandPath(), c.Example)
		}
	})
}

// shellCommands splits a command line into its commands, each into its
// words, as a shell would for the examples: quotes; |, && and ; between
// commands; a redirection ends a command.
func shellCommands(s string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	in, quote, redirected := false, rune(0), false
	word := func() {
		if in && !redirected {
			words = append(words, w.String())
		}
		w.Reset()
		in = false
	}
	end := func() {
		word()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words, redirected = nil, false
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '|' || r == ';':
			end()
		case r == '&' && i+1 < len(rs) && rs[i+1] == '&':
			end()
			i++
		case r == '>' || r == '<':
			word()
			redirected = true
		case r == ' ' || r == '\t':
			word()
		default:
			w.WriteRune(r)
			in = true
		}
	}
	end()
	return cmds
}

// --help describes the program: its usage line and examples name it
// ensemble, however it was started (bin/ensemble after make build), while
// the help hint of a usage error, a command to type, starts as the user
// runs it.
func TestHelpNamesTheProgram(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	std := &stdio{in: strings.NewReader(""), out: &out, err: &errb, prog: "bin/ensemble"}
	if code := run(t.Context(), []string{"run", "--help"}, std); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"Usage:\n  ensemble run FILE [flags]\n",
		"\n  ensemble run ensemble.yaml --responses responses.yaml\n",
		`| ensemble run ensemble.yaml --input - --output json`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run --help lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "bin/ensemble") {
		t.Errorf("run --help names the path:\n%s", out.String())
	}
}

// The command tables of README.md and docs/cli.md list every command: a
// row's first cell, `ensemble state show\|export\|list FILE`, names the
// commands whose words it has in order (an upper-case word stands for
// any, as SHELL does).
func TestCommandTablesListEveryCommand(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"../../README.md", "../../docs/cli.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var rows [][]string
		for _, m := range regexp.MustCompile("(?m)^\\| \\[?`ensemble ([^`]*)`").FindAllStringSubmatch(string(b), -1) {
			rows = append(rows, strings.Fields(strings.ReplaceAll(m[1], `\|`, "|")))
		}
		listed := func(path []string) bool {
			for _, row := range rows {
				ok := len(row) >= len(path)
				for i := 0; ok && i < len(path); i++ {
					ok = slices.Contains(strings.Split(row[i], "|"), path[i]) || row[i] == strings.ToUpper(row[i]) && !strings.HasPrefix(row[i], "-")
				}
				if ok {
					return true
				}
			}
			return false
		}
		walk(newRootCmd(&stdio{}), func(c *cobra.Command) {
			if !c.HasParent() || !c.IsAvailableCommand() || c.HasAvailableSubCommands() {
				return // the root, help, hidden commands, groups (their commands are listed)
			}
			if path := strings.Fields(c.CommandPath())[1:]; !listed(path) {
				t.Errorf("%s: the command table lacks ensemble %s", doc, strings.Join(path, " "))
			}
		})
	}
}
