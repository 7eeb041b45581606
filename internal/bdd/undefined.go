package bdd

import (
	"bufio"
	"bytes"
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
		line = goLocation.ReplaceAll(line, []byte("$1"))
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

// undefinedSteps collects the text of undefined steps.
type undefinedSteps struct {
	mu    sync.Mutex
	steps []string
}

func (u *undefinedSteps) add(text string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.steps, text) {
		u.steps = append(u.steps, text)
	}
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
		fmt.Fprintf(bw, "  %s\n", st)
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
// none is close.
func Suggest(step string) string {
	s := shape(step)
	best, bestD := "", len(s)/3+2
	for _, d := range stepDefs {
		if dist := levenshtein(s, shape(d.Example)); dist < bestD {
			best, bestD = d.Example, dist
		}
	}
	return best
}

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
