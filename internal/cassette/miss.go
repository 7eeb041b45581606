package cassette

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MissError is a request the recording has no exchange for.
type MissError struct {
	msg string
}

func (e *MissError) Error() string { return e.msg }

// hint ends every miss: what to do about it.
func (f *file) hint() string {
	dir := filepath.Dir(f.path)
	return fmt.Sprintf("record again with --record %s, or add what is missing with --replay %s --record-missing", dir, dir)
}

// part is one comparable part of a request, named for the message.
type part struct {
	name string
	text string
}

// parts lists what is compared, in order: the model and its parameters,
// the system prompt, the tools, the output schema, then each message.
func parts(r *Request) []part {
	head := r.Provider + " " + r.Model
	if r.MaxTokens > 0 {
		head += fmt.Sprintf(", max_tokens %d", r.MaxTokens)
	}
	if r.Temperature != nil {
		head += fmt.Sprintf(", temperature %g", *r.Temperature)
	}
	ps := []part{
		{"the model or a parameter", head},
		{"the system prompt", normalText(r.System)},
		{"the tools", jsonLines(r.Tools)},
		{"the output schema", jsonLines(r.Output)},
	}
	for i, m := range r.Messages {
		ps = append(ps, part{fmt.Sprintf("message %d (%s)", i+1, m.Role), messageText(m)})
	}
	return ps
}

// messageText is a message as a diff shows it.
func messageText(m Message) string {
	var b strings.Builder
	if m.Role == "tool" {
		fmt.Fprintf(&b, "[result of %s", m.ToolName)
		if m.IsError {
			b.WriteString(", an error")
		}
		b.WriteString("]\n")
	}
	b.WriteString(normalText(m.Content))
	for _, c := range m.ToolCalls {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[call %s %s]", c.Name, canonicalJSON(c.Arguments))
	}
	return b.String()
}

func jsonLines(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil || string(b) == "null" {
		return ""
	}
	return string(b)
}

// miss explains why req, the file's request number n (0-based), matches no
// exchange: the first part that differs from the closest recorded request.
func (f *file) miss(req *Request, n int) error {
	what := fmt.Sprintf("model request %d of agent %q", n+1, f.Agent)
	if len(f.Exchanges) == 0 {
		if _, err := os.Stat(f.path); err != nil {
			return &MissError{fmt.Sprintf("replay: %s is not recorded: there is no %s; %s", what, f.path, f.hint())}
		}
		return &MissError{fmt.Sprintf("replay: %s is not recorded: %s has no model exchanges; %s", what, f.path, f.hint())}
	}
	now := parts(req)
	best, bestPrefix, bestEqual := 0, -1, -1
	for i := range f.Exchanges {
		rec := parts(&f.Exchanges[i].Request)
		prefix, equal := 0, 0
		for k := 0; k < len(now) && k < len(rec); k++ {
			if now[k].text == rec[k].text {
				equal++
				if prefix == k {
					prefix++
				}
			}
		}
		better := prefix > bestPrefix || (prefix == bestPrefix && equal > bestEqual) ||
			(prefix == bestPrefix && equal == bestEqual && abs(i-n) < abs(best-n))
		if better {
			best, bestPrefix, bestEqual = i, prefix, equal
		}
	}
	rec := parts(&f.Exchanges[best].Request)
	var b strings.Builder
	fmt.Fprintf(&b, "replay: %s is not in %s; ", what, f.path)
	k := bestPrefix
	switch {
	case k < len(now) && k < len(rec):
		fmt.Fprintf(&b, "%s differs from the closest recorded request's (exchange %d):\n", now[k].name, best+1)
		b.WriteString(Diff(rec[k].text, now[k].text))
	case k < len(now):
		fmt.Fprintf(&b, "it has more messages than the closest recorded request (exchange %d), from %s:\n", best+1, now[k].name)
		b.WriteString(Diff("", now[k].text))
	case k < len(rec):
		fmt.Fprintf(&b, "it has fewer messages than the closest recorded request (exchange %d), which goes on with %s:\n", best+1, rec[k].name)
		b.WriteString(Diff(rec[k].text, ""))
	default:
		fmt.Fprintf(&b, "it differs from the closest recorded request (exchange %d) in a detail of its messages\n", best+1)
	}
	b.WriteString(f.hint())
	return &MissError{b.String()}
}

// answerMiss explains a question with no recorded answer.
func (f *file) answerMiss(question string) error {
	what := fmt.Sprintf("the answer of agent %q to its question", f.Agent)
	if len(f.Answers) == 0 {
		return &MissError{fmt.Sprintf("replay: %s is not recorded in %s; %s", what, f.path, f.hint())}
	}
	closest := f.Answers[min(len(f.ansUsed), len(f.Answers)-1)].Question
	return &MissError{fmt.Sprintf("replay: %s is not in %s; the question differs from the closest recorded one:\n%s%s",
		what, f.path, Diff(normalText(closest), normalText(question)), f.hint())}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// contextLines is how many unchanged lines a diff shows around a change.
const contextLines = 2

// maxDiffLines bounds the lines compared line by line; longer texts are
// compared as one block after their common start and end.
const maxDiffLines = 400

// Diff is a line diff from a to b: unchanged lines start with "  ", removed
// ones with "- ", added ones with "+ ", and only the lines near a change
// are shown. Every line ends with "\n", and none with a space.
func Diff(a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	// The common start and end.
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	for _, l := range al[:pre] {
		ops = append(ops, line{' ', l})
	}
	ma, mb := al[pre:len(al)-suf], bl[pre:len(bl)-suf]
	if len(ma) <= maxDiffLines && len(mb) <= maxDiffLines {
		// Longest common subsequence of the middle.
		lcs := make([][]int, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, line{' ', ma[i]})
				i, j = i+1, j+1
			case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, line{'-', ma[i]})
				i++
			default:
				ops = append(ops, line{'+', mb[j]})
				j++
			}
		}
	} else {
		for _, l := range ma {
			ops = append(ops, line{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, line{'+', l})
		}
	}
	for _, l := range al[len(al)-suf:] {
		ops = append(ops, line{' ', l})
	}
	// Keep the changes and their context.
	keep := make([]bool, len(ops))
	for i, o := range ops {
		if o.op != ' ' {
			for k := max(0, i-contextLines); k <= min(len(ops)-1, i+contextLines); k++ {
				keep[k] = true
			}
		}
	}
	var out strings.Builder
	skipped := false
	for i, o := range ops {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped && out.Len() > 0 {
			out.WriteString("  …\n")
		}
		skipped = false
		// A blank line has no trailing space: an unchanged one is empty,
		// a removed or added one its sign alone.
		switch {
		case o.text != "":
			out.WriteByte(o.op)
			out.WriteByte(' ')
			out.WriteString(o.text)
		case o.op != ' ':
			out.WriteByte(o.op)
		}
		out.WriteByte('\n')
	}
	if out.Len() == 0 {
		return "  (the same text)\n"
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
