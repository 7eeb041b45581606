package bdd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// snippetFilter drops godog's Go snippets for undefined steps (the last
// part of its summary): a user of `ensemble test` cannot add Go steps.
type snippetFilter struct {
	w       io.Writer
	buf     []byte
	dropped bool
}

// goLocation matches the Go location of a step definition that godog's
// pretty format prints after each step ("# scenario.go:97 -> *Scenario",
// maybe coloured), with the padding before it: noise to a user.
var goLocation = regexp.MustCompile(`[ \t]*(?:\x1b\[[0-9;]*m)?# [^ \n]+\.go:\d+ -> [^ \n\x1b]+(?:\x1b\[[0-9;]*m)?[ \t]*(\r?\n)$`)

const snippetHeader = "You can implement step definitions for undefined steps"

func (f *snippetFilter) Write(p []byte) (int, error) {
	if f.dropped {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			break
		}
		line := f.buf[:i+1]
		if bytes.Contains(line, []byte(snippetHeader)) {
			f.dropped, f.buf = true, nil
			return len(p), nil
		}
		line = dropGivenLine(goLocation.ReplaceAll(line, []byte("$1")))
		if _, err := f.w.Write(line); err != nil {
			return len(p), err
		}
		f.buf = f.buf[i+1:]
	}
	return len(p), nil
}

func (f *snippetFilter) flush() {
	if !f.dropped && len(f.buf) > 0 {
		_, _ = f.w.Write(f.buf)
	}
	f.buf = nil
}

// undefinedSteps collects the text of undefined steps, and where each is
// written.
type undefinedSteps struct {
	mu    sync.Mutex
	steps []string
	where map[string][]string // by text: FILE:LINE of each place
}

// add notes an undefined step, written at the places where (FILE:LINE).
func (u *undefinedSteps) add(text string, where ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.steps, text) {
		u.steps = append(u.steps, text)
	}
	if u.where == nil {
		u.where = map[string][]string{}
	}
	for _, w := range where {
		if !slices.Contains(u.where[text], w) {
			u.where[text] = append(u.where[text], w)
		}
	}
}

// undefinedStep is the failure of an undefined step: what it is not, and
// the closest built-in step.
func undefinedStep(text string) error {
	msg := "not a built-in step (see test --list-steps)"
	if h := Suggest(text); h != "" {
		msg += "; did you mean: " + h
	}
	return errors.New(msg)
}

// noSteps is why a scenario with no steps fails: godog counts it
// undefined, and a test that tests nothing must not pass.
const noSteps = "the scenario has no steps: a scenario that tests nothing fails"

// reportEmpty names, on w, the scenarios of the plan that have no steps.
func (pl *plan) reportEmpty(w io.Writer) {
	for _, p := range pl.scenarios {
		if len(p.steps) == 0 {
			fmt.Fprintf(w, "%s: %s %q: %s\n", p.where(), p.keyword, p.name, noSteps)
		}
	}
}

// stepPlaces are the places (FILE:LINE) of the steps of the feature file
// whose text is text, among the scenarios of the plan.
func (pl *plan) stepPlaces(file, text string) []string {
	var out []string
	for _, p := range pl.scenarios {
		if p.file == file {
			out = append(out, p.stepPlaces(text)...)
		}
	}
	return out
}

// stepPlaces are the places (FILE:LINE) of the scenario's steps whose
// text is text.
func (p *planned) stepPlaces(text string) []string {
	var out []string
	for _, st := range p.steps {
		if w := fmt.Sprintf("%s:%d", p.file, st.line); st.text == text && st.line > 0 && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func (u *undefinedSteps) report(w io.Writer) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.steps) == 0 {
		return
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\n%d undefined step(s): they are not built-in steps of the test command (list them with `test --list-steps`):\n", len(u.steps))
	for _, st := range u.steps {
		if w := u.where[st]; len(w) > 0 {
			fmt.Fprintf(bw, "  %s (%s)\n", st, strings.Join(w, ", "))
		} else {
			fmt.Fprintf(bw, "  %s\n", st)
		}
		if hint := Suggest(st); hint != "" {
			fmt.Fprintf(bw, "    did you mean: %s\n", hint)
		}
	}
	bw.Flush()
}

var (
	quotedArg = regexp.MustCompile(`"[^"]*"`)
	numberArg = regexp.MustCompile(`\b\d+\b`)
)

// shape reduces a step to its words: arguments and keywords removed.
func shape(step string) string {
	step = strings.TrimSpace(step)
	for _, kw := range []string{"Given ", "When ", "Then ", "And ", "But ", "* "} {
		step = strings.TrimPrefix(step, kw)
	}
	step = quotedArg.ReplaceAllString(step, `""`)
	step = numberArg.ReplaceAllString(step, "N")
	return strings.ToLower(step)
}

// Suggest returns the built-in step closest to an undefined one, or "" when
// none is close, with the undefined step's own arguments when it has those
// of the built-in step, in the same order: `agent "writer" runs 2 times`
// suggests `Then agent "writer" ran 2 times`.
func Suggest(step string) string {
	s := shape(step)
	best, bestD := "", len(s)/3+2
	for _, d := range stepDefs {
		if dist := levenshtein(s, shape(d.Example)); dist < bestD {
			best, bestD = d.Example, dist
		}
	}
	if best == "" || strings.Contains(best+step, `\"`) {
		return best // an escaped quote would cut the arguments elsewhere
	}
	return withArgs(best, stepArg.FindAllString(step, -1))
}

// stepArg is an argument of a step: a quoted text or a whole number.
var stepArg = regexp.MustCompile(`"[^"]*"|\b\d+\b`)

// withArgs puts args in place of example's arguments, when they are as
// many and of the same kinds (quoted or number); else example is returned
// as it is.
func withArgs(example string, args []string) string {
	at := stepArg.FindAllStringIndex(example, -1)
	if len(at) == 0 || len(at) != len(args) {
		return example
	}
	var b strings.Builder
	last := 0
	for i, loc := range at {
		if (example[loc[0]] == '"') != strings.HasPrefix(args[i], `"`) {
			return example
		}
		b.WriteString(example[last:loc[0]])
		b.WriteString(args[i])
		last = loc[1]
	}
	b.WriteString(example[last:])
	return oneTime.ReplaceAllString(b.String(), "${1}1 $2")
}

// oneTime is a count of 1 that the example wrote in the plural.
var oneTime = regexp.MustCompile(`(^|[^0-9.])1 (time|item|answer|error|model request)s\b`)

func levenshtein(a, b string) int {
	ar, br := []rune(a), []rune(b)
	prev := make([]int, len(br)+1)
	cur := make([]int, len(br)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ar); i++ {
		cur[0] = i
		for j := 1; j <= len(br); j++ {
			cost := 1
			if ar[i-1] == br[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(br)]
}

// ListSteps writes the built-in steps, one per line, grouped by keyword.
func ListSteps(w io.Writer) {
	last := ""
	for _, d := range Steps() {
		if d.Keyword != last {
			if last != "" {
				fmt.Fprintln(w)
			}
			last = d.Keyword
		}
		fmt.Fprintf(w, "%s\n    %s\n", d.Example, d.Doc)
	}
}
