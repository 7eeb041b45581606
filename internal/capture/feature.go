package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/state"
)

// feature is the .feature file of the capture: the run's ensemble (by a
// path relative to the folder, so that its scripts resolve as they did),
// its profiles files, limits and input, the replies, and the Then steps of
// how it ended.
func (c *Capture) feature(r Run, o Options, col *collector) ([]byte, error) {
	sf, e := r.File, o.Ensemble
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	rel := func(what, path string) (string, error) {
		p, err := filepath.Rel(out, path)
		if err != nil {
			p = path
		}
		p = filepath.ToSlash(p)
		if strings.Contains(p, `"`) {
			return "", fmt.Errorf("cannot capture the run: its %s %s has a double quote in its path, which a step cannot name", what, path)
		}
		return p, nil
	}
	var b strings.Builder
	what := "the run"
	if r.ID != "" {
		what = "run " + r.ID
	}
	fmt.Fprintf(&b, "# Captured by `test capture` from %s of %s.\n", what, filepath.Base(r.Source))
	b.WriteString("# Scripts run for real; the models' and people's replies are injected, so\n# it runs offline. A failing step means the ensemble now behaves otherwise.\n")
	fmt.Fprintf(&b, "Feature: %s, as %s went\n\n", oneLine(e.Name), what)
	fmt.Fprintf(&b, "  Scenario: %s replays\n", capitalise(what))
	path, err := rel("ensemble file", sf.Ensemble.Path)
	if err != nil {
		return nil, err
	}
	step := func(format string, args ...any) { fmt.Fprintf(&b, "    "+format+"\n", args...) }
	step("Given the ensemble %q", path)
	for _, p := range sf.Profiles {
		pp, err := rel("profiles file", p)
		if err != nil {
			return nil, err
		}
		step("And the profiles file %q", pp)
	}
	if c.Responses != nil {
		step("And the responses file %q", c.Base+".responses.yaml")
	}
	if c.RecordingDir != "" {
		step("And the recording %q", c.Base+".recording")
	}
	if n := sf.Options.MaxTurns; n > 0 {
		step("And the turn limit is %d", n)
	}
	if n := sf.Options.Parallel; n > 0 {
		step("And the parallel limit is %d", n)
	}
	if d := sf.Options.Timeout(); d > 0 {
		step("And the timeout is %q", d.String())
	}
	if in := sf.State.Input; in != "" {
		step("And the input:")
		if !docString(&b, "", in) {
			return nil, fmt.Errorf("cannot capture %s: its input has lines that end in a carriage return (\\r), or lines that start with both \"\"\" and ```, which no doc string can hold as they are", what)
		}
	}
	step("When the ensemble runs")

	run, res := engine.SavedResult(e, sf)
	step("Then the completion reason is %q", sf.CompletionReason)
	step("And the exit code is %d", res.ExitCode())
	if sf.CompletionReason == engine.AwaitingInput {
		for _, p := range run.PendingInput() {
			step("And the run is waiting for input from %q", p.Agent)
		}
	}
	st := sf.State
	for _, a := range e.Agents {
		n := st.Executions(a.Name)
		if n == 0 {
			step("And agent %q did not run", a.Name)
			continue
		}
		step("And agent %q ran %s", a.Name, times(n))
		if out, ok := latestOutput(topRecords(st.History(), a.Name)); ok {
			outputStep(&b, a.Name, out)
		}
	}
	for _, p := range col.paths {
		recs := agentpath.PathRecords(st.History(), p)
		step("And agent %q ran %s", p, times(len(recs)))
		if out, ok := latestOutput(recs); ok && out != nil {
			outputStep(&b, p, out)
		}
	}
	return []byte(b.String()), nil
}

func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return strconv.Itoa(n) + " times"
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// oneLine is s on one line, for a Feature's name.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// outputStep checks the agent's latest output: text as text, any other
// value as JSON (and text that no doc string can hold as it is, as a JSON
// string).
func outputStep(b *strings.Builder, name string, out any) {
	fmt.Fprintf(b, "    And the output of agent %q is:\n", name)
	if s, ok := out.(string); ok && docString(b, "text", s) {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		docString(b, "text", fmt.Sprint(out))
		return
	}
	docString(b, "json", docSafeJSON(strings.TrimSuffix(buf.String(), "\n")))
}

// The delimiters of doc strings, and how each is escaped inside one.
var delimiters = [][2]string{{`"""`, `\"\"\"`}, {"```", "\\`\\`\\`"}}

// docString writes content as a doc string of that type, between """
// lines, or ``` lines when """ would end it early or be read otherwise;
// false (and nothing written) when neither can hold it as it is.
func docString(b *strings.Builder, mediaType, content string) bool {
	const indent = "      "
	for _, d := range delimiters {
		if !docSafe(content, d[0], d[1]) {
			continue
		}
		b.WriteString(indent + d[0] + mediaType + "\n")
		for _, line := range strings.Split(content, "\n") {
			if line == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString(indent + line + "\n")
		}
		b.WriteString(indent + d[0] + "\n")
		return true
	}
	return false
}

// docSafe reports whether a doc string between delim lines reads content
// back as it is: no line of it starts with delim (which would end the doc
// string), it holds no escaped delim (which would be read as delim), and
// no line ends in a carriage return (which Gherkin reads as part of the
// line's end, \r\n as \n).
func docSafe(content, delim, escaped string) bool {
	if strings.Contains(content, escaped) {
		return false
	}
	for _, line := range strings.Split(content, "\n") {
		if strings.HasPrefix(strings.TrimLeftFunc(line, unicode.IsSpace), delim) || strings.HasSuffix(line, "\r") {
			return false
		}
	}
	return true
}

// docSafeJSON is the JSON text j with the quotes and backquotes inside its
// strings written as \u0022 and \u0060: the same JSON, which no doc
// string delimiter can end or be read from.
func docSafeJSON(j string) string {
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(j); i++ {
		c := j[i]
		switch {
		case escaped:
			escaped = false
			if c == '"' {
				b.WriteString("u0022")
				continue
			}
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString && c == '`':
			b.WriteString(`\u0060`)
			continue
		case c == '"':
			inString = true
		}
		b.WriteByte(c)
	}
	return b.String()
}

// topRecords are the records of the top run's agent name that are
// executions (not skips), as the Then steps read them.
func topRecords(recs []*state.Record, name string) []*state.Record {
	var out []*state.Record
	for _, r := range recs {
		if r.AgentName == name && !r.Skipped {
			out = append(out, r)
		}
	}
	return out
}

// latestOutput is the output of the latest of recs that did not fail.
func latestOutput(recs []*state.Record) (any, bool) {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Error == nil {
			return recs[i].OutputData, true
		}
	}
	return nil, false
}
