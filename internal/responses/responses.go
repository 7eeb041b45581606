package responses

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// Responses are injected responses (docs/testing.md#the-responses-file): for each agent named, the
// responses its executions take in order, or a simulated user.
//
// A response is either a string, the reply text (parsed per docs/semantics.md#state, or as
// JSON for LLM agents with output_format: json), or any other value, which is
// the output itself. Values are held as encoding/json would decode them:
// objects are map[string]any, arrays []any, numbers float64, so a condition
// sees the same thing whether an output came from a script or an injection.
//
// Execution N of an agent (agent.Request.Execution, 1-based) takes response N:
// the position in the responses is the agent's execution count, which the
// run state already keeps, so a resumed run continues where it stopped.
//
// A Responses is safe for concurrent use.
type Responses struct {
	mu      sync.Mutex
	entries map[string]*ResponseEntry
	order   []string
}

// ResponseEntry is what is injected for one agent.
type ResponseEntry struct {
	Agent string
	File  string       // the file it came from; "" when added in code
	Pos   ensemble.Pos // where the agent is named in File
	// Values are the responses in order: a string is reply text; anything
	// else is the output.
	Values []any
	// Lines are the lines of File where Values start, one for each value
	// while known (a value added in code has none: 0, or Lines is shorter).
	Lines []int32
	// Simulate, when set, replaces Values: a model plays the agent.
	Simulate *Simulation

	src string // the line of File at Pos
}

// Simulation is an entry {simulate: {model_profile, prompt}}.
type Simulation struct {
	ModelProfile string
	Prompt       string
	Pos          ensemble.Pos // of model_profile

	src string // the line of the file at Pos
}

// MaxResponseErrors is how many problems of a responses file are reported;
// the others are counted in a last "…and N more errors".
const MaxResponseErrors = 20

// MaxResponseEntries is how many entries (agents and responses together) a
// responses file may hold: a file of many tiny entries would otherwise take
// many times its size in memory. It is checked while reading, before the
// values (or the YAML parser's tree) are built.
const MaxResponseEntries = 1_000_000

// errorList returns errs sorted by position as a *ensemble.ErrorList (the
// loader's error type), or nil: the first MaxResponseErrors, then a count of
// the others and of more (errors found but not kept).
func errorList(errs []*ensemble.Error, more ...int) error {
	if len(errs) == 0 {
		return nil
	}
	l := ensemble.ErrorList(slices.Clone(errs)).Sorted()
	n := 0
	for _, m := range more {
		n += m
	}
	if len(l) > MaxResponseErrors {
		n += len(l) - MaxResponseErrors
		l = l[:MaxResponseErrors]
	}
	if n > 0 {
		l = append(l, &ensemble.Error{File: l[len(l)-1].File, Column: moreColumn, Message: fmt.Sprintf("…and %d more errors", n)})
	}
	return &l
}

// moreColumn marks the last entry of an errorList that counts the errors
// left out (its Line is 0: it prints as FILE: message).
const moreColumn = -1

// splitMore is l without its count of the errors left out, and that count.
func splitMore(l ensemble.ErrorList) (ensemble.ErrorList, int) {
	if n := len(l); n > 0 && l[n-1].Line == 0 && l[n-1].Column == moreColumn {
		var more int
		fmt.Sscanf(l[n-1].Message, "…and %d more errors", &more)
		return l[:n-1], more
	}
	return l, 0
}

// tooManyEntries is the error of a responses file past MaxResponseEntries,
// at the line of the first entry over the cap.
func tooManyEntries(file string, line int, lines *sourceLines) error {
	return &ensemble.ErrorList{{File: file, Line: line, Column: 1, Source: sourceLine(lines, line),
		Message: fmt.Sprintf("more than %d entries (agents and responses): the most a responses file may hold", MaxResponseEntries)}}
}

// countEntryLines is how many lines of data start an entry in block style:
// a line starting at its first column (an agent) or a line whose first
// other than spaces is "- " (a response). It stops, returning the line, at
// the first over MaxResponseEntries: the YAML parser's tree takes many
// times the size of a file of tiny entries, so such a file is refused
// before it is built.
func countEntryLines(data []byte) (over int) {
	n, line := 0, 0
	for pos := 0; pos < len(data); {
		line++
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += pos
		}
		s := data[pos:end]
		i := 0
		for i < len(s) && s[i] == ' ' {
			i++
		}
		switch {
		case i == len(s) || s[i] == '#' || s[i] == '\r':
		case i == 0 && s[0] != '-' || s[i] == '-' && (i+1 == len(s) || s[i+1] == ' '):
			if n++; n > MaxResponseEntries {
				return line
			}
		}
		pos = end + 1
	}
	return 0
}

// sourceLines finds the lines of a file's contents for error messages,
// without copying the contents: a large responses file is not held twice.
// It keeps where every linesPerMark-th line starts, not every line: a file
// of short lines near its 1 GiB cap would otherwise take an offset of 8
// bytes per line, more than its own size.
type sourceLines struct {
	data  []byte
	marks []int // offset of lines 1, 1+linesPerMark, 1+2×linesPerMark…
	count int   // the lines
}

// linesPerMark is how many lines apart sourceLines marks their start: a
// line is found by reading at most that many from a mark.
const linesPerMark = 256

func newSourceLines(data []byte) *sourceLines {
	l := &sourceLines{data: data, marks: []int{0}, count: 1}
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if l.count%linesPerMark == 0 {
			l.marks = append(l.marks, i)
		}
		l.count++
	}
	return l
}

// sourceLine is line n (1-based) of lines, or "": a copy, so that it does
// not keep the whole file in memory.
func sourceLine(lines *sourceLines, n int) string {
	if n < 1 || n > lines.count {
		return ""
	}
	rest := lines.data[lines.marks[(n-1)/linesPerMark]:]
	for k := (n - 1) % linesPerMark; k > 0; k-- {
		rest = rest[bytes.IndexByte(rest, '\n')+1:]
	}
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimRight(string(rest), "\r")
}

// NewResponses returns an empty set, to fill with Add, AddText and
// SetSimulate.
func NewResponses() *Responses {
	return &Responses{entries: map[string]*ResponseEntry{}}
}

// MaxResponsesFile is the largest responses file LoadResponses reads.
const MaxResponsesFile = 1 << 30

// LoadResponses reads a responses file (docs/testing.md#the-responses-file).
func LoadResponses(path string) (*Responses, error) {
	data, err := readResponses(path)
	if err != nil {
		return nil, err
	}
	// data is not used after: the responses may share its bytes.
	return parseResponses(path, data, true)
}

// readResponses reads a responses file, text of at most MaxResponsesFile
// bytes: a stream of zeros fails at its first byte.
func readResponses(path string) ([]byte, error) {
	data, err := readcap.ReadTextFile(path, MaxResponsesFile)
	_, tooLarge := errors.AsType[*readcap.TooLargeError](err)
	_, notText := errors.AsType[*readcap.NotTextError](err)
	if tooLarge || notText {
		return nil, fmt.Errorf("responses file %s: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("responses file: %w", err)
	}
	return data, nil
}

// LoadResponsesFor reads a responses file for e: its problems and those of
// Validate, all in one list (a file's misspelled agent is reported with
// its malformed entries, not after they are fixed).
func LoadResponsesFor(path string, e *ensemble.Ensemble) (*Responses, error) {
	data, err := readResponses(path)
	if err != nil {
		return nil, err
	}
	r, err := parseResponsesPartial(path, data, true)
	list, ok := errors.AsType[*ensemble.ErrorList](err)
	if err != nil && !ok {
		return nil, err
	}
	var all []*ensemble.Error
	more := 0
	add := func(l ensemble.ErrorList) {
		l, n := splitMore(l)
		all, more = append(all, l...), more+n
	}
	if list != nil {
		add(*list)
	}
	if r != nil {
		if l, ok := errors.AsType[*ensemble.ErrorList](r.Validate(e)); ok {
			add(*l)
		}
	}
	if len(all) > 0 {
		return nil, errorList(all, more)
	}
	return r, nil
}

// ParseResponses parses a responses file's contents; name is used in error
// messages. The file is a mapping from agent name to either a list of
// responses or {simulate: {model_profile, prompt}}. Every problem is
// reported: the error is a *ensemble.ErrorList, each FILE:LINE:COL: message.
func ParseResponses(name string, data []byte) (*Responses, error) {
	return parseResponses(name, data, false)
}

// parseResponses is ParseResponses; with share, the strings of the
// responses may share data's bytes (which must then never change), so
// that a large file is not held twice: as the file read and as the values
// taken from it.
func parseResponses(name string, data []byte, share bool) (*Responses, error) {
	r, err := parseResponsesPartial(name, data, share)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// parseResponsesPartial is parseResponses, returning with the error the
// entries without problems (nil when there are none to check).
func parseResponsesPartial(name string, data []byte, share bool) (*Responses, error) {
	lines := newSourceLines(data)
	if r, err, ok := fastParse(name, data, lines, share); ok {
		return r, err
	}
	if line := countEntryLines(data); line > 0 {
		return nil, tooManyEntries(name, line, lines)
	}
	return parseYAML(name, data, lines, true)
}

// parseYAML parses a responses file through a YAML node tree: any YAML,
// with every error positioned. With partial, the entries without problems
// are returned with the error (nil when the file is no mapping).
func parseYAML(name string, data []byte, lines *sourceLines, partial bool) (*Responses, error) {
	root, err := ensemble.ParseYAML(name, data) // YAML errors in plain words, as for ensemble files
	if err != nil {
		return nil, err
	}
	r := NewResponses()
	if root == nil {
		return r, nil // an empty file injects nothing
	}
	// One budget of converted nodes for the whole file: aliases may share
	// a value between responses, but never multiply the file past a few
	// times its own size (an alias bomb).
	p := &respParser{file: name, lines: lines, budget: 1<<20 + 4*countNodes(root)}
	if n, err := ensemble.ExpandedSize(root); err != nil || n > p.budget {
		// Measured, not expanded: a bomb of nested merge keys would take
		// seconds to convert before the budget ran out.
		p.errorf(root, "response is too large (too many aliases?)")
		return nil, p.err()
	}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return r, nil
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "a responses file is a mapping from agent name to a list of responses")
		return nil, p.err()
	}
	seen := map[string]*yaml.Node{}
	entries := 0
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if entries += 1 + len(v.Content); entries > MaxResponseEntries {
			return nil, tooManyEntries(name, k.Line, lines)
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" && k.ShortTag() != "!!int" {
			p.errorf(k, "expected an agent name")
			continue
		}
		agent := k.Value
		if first, dup := seen[agent]; dup {
			p.errorf(k, "agent %q is listed twice (first at line %d)", agent, first.Line)
			continue
		}
		seen[agent] = k
		ent := &ResponseEntry{Agent: agent, File: name, Pos: pos(k), src: sourceLine(lines, k.Line)}
		if p.entry(ent, v) {
			r.entries[agent] = ent
			r.order = append(r.order, agent)
		}
	}
	if err := p.err(); err != nil {
		if partial {
			return r, err
		}
		return nil, err
	}
	return r, nil
}

type respParser struct {
	file   string
	lines  *sourceLines
	errs   []*ensemble.Error
	more   int // errors found past MaxResponseErrors, counted only
	budget int // nodes left to convert: bounds alias expansion
}

func pos(n *yaml.Node) ensemble.Pos { return ensemble.Pos{Line: n.Line, Column: n.Column} }

func (p *respParser) errorf(n *yaml.Node, format string, args ...any) {
	if len(p.errs) >= MaxResponseErrors {
		p.more++
		return
	}
	p.errs = append(p.errs, &ensemble.Error{File: p.file, Line: n.Line, Column: n.Column,
		Message: fmt.Sprintf(format, args...), Source: sourceLine(p.lines, n.Line)})
}

func (p *respParser) err() error { return errorList(p.errs, p.more) }

// entry fills ent from the value node of an agent; false when it is wrong.
func (p *respParser) entry(ent *ResponseEntry, v *yaml.Node) bool {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.SequenceNode:
		ok := true
		ent.Values = make([]any, 0, len(v.Content))
		ent.Lines = make([]int32, 0, len(v.Content))
		for _, item := range v.Content {
			val, good := p.value(item, 0)
			ok = ok && good
			ent.Values = append(ent.Values, val)
			ent.Lines = append(ent.Lines, int32(item.Line))
		}
		return ok
	case yaml.MappingNode:
		return p.simulate(ent, v)
	default:
		p.errorf(v, "responses for agent %q must be a list (put [ ] around a single response) or {simulate: {model_profile, prompt}}", ent.Agent)
		return false
	}
}

func (p *respParser) simulate(ent *ResponseEntry, v *yaml.Node) bool {
	ok := true
	var sim *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := v.Content[i]
		if k.Value == "simulate" {
			sim = v.Content[i+1]
			continue
		}
		p.errorf(k, "unknown key %q for agent %q: expected a list of responses, or simulate", k.Value, ent.Agent)
		ok = false
	}
	if sim == nil {
		if ok {
			p.errorf(v, "responses for agent %q must be a list (put [ ] around a single response) or {simulate: {model_profile, prompt}}", ent.Agent)
		}
		return false
	}
	for sim.Kind == yaml.AliasNode && sim.Alias != nil {
		sim = sim.Alias
	}
	if sim.Kind != yaml.MappingNode {
		p.errorf(sim, "simulate must be a mapping {model_profile, prompt}")
		return false
	}
	s := &Simulation{Pos: pos(sim)}
	var hasProfile, hasPrompt bool
	for i := 0; i+1 < len(sim.Content); i += 2 {
		k, val := sim.Content[i], sim.Content[i+1]
		switch k.Value {
		case "model_profile", "prompt":
			if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!str" || val.Value == "" {
				p.errorf(val, "simulate.%s must be a non-empty string", k.Value)
				ok = false
				continue
			}
			if k.Value == "model_profile" {
				s.ModelProfile, s.Pos, hasProfile = val.Value, pos(val), true
				s.src = sourceLine(p.lines, val.Line)
			} else {
				s.Prompt, hasPrompt = val.Value, true
			}
		default:
			p.errorf(k, "unknown key %q in simulate (known: model_profile, prompt)", k.Value)
			ok = false
		}
	}
	if !hasProfile && ok {
		p.errorf(sim, "simulate needs a model_profile")
		ok = false
	}
	if !hasPrompt && ok {
		p.errorf(sim, "simulate needs a prompt (who the simulated user is)")
		ok = false
	}
	ent.Simulate = s
	return ok
}

// countNodes counts the nodes of a YAML tree, an alias as one.
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// value converts a YAML node to the value encoding/json would give.
func (p *respParser) value(n *yaml.Node, depth int) (any, bool) {
	p.budget--
	if p.budget < 0 {
		if p.budget == -1 {
			p.errorf(n, "response is too large (too many aliases?)")
		}
		return nil, false
	}
	if depth > 1000 {
		p.errorf(n, "response is nested too deeply")
		return nil, false
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, true
		}
		return p.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		if n.Alias == nil {
			p.errorf(n, "unknown alias")
			return nil, false
		}
		return p.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		ok := true
		for _, c := range n.Content {
			v, good := p.value(c, depth+1)
			ok = ok && good
			out = append(out, v)
		}
		return out, ok
	case yaml.MappingNode:
		out := map[string]any{}
		return out, p.mapping(out, n, depth, map[string]bool{})
	case yaml.ScalarNode:
		return p.scalar(n)
	}
	p.errorf(n, "unsupported YAML node")
	return nil, false
}

// mapping adds n's entries to out; explicit keys win over merged (<<) ones.
func (p *respParser) mapping(out map[string]any, n *yaml.Node, depth int, explicit map[string]bool) bool {
	ok := true
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, "object keys must be scalars")
			ok = false
			continue
		}
		if explicit[k.Value] {
			p.errorf(k, "key %q is defined twice", k.Value)
			ok = false
			continue
		}
		val, good := p.value(v, depth+1)
		ok = ok && good
		out[k.Value] = val
		explicit[k.Value] = true
	}
	for _, m := range merges {
		for m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, src := range srcs {
			for src.Kind == yaml.AliasNode && src.Alias != nil {
				src = src.Alias
			}
			if src.Kind != yaml.MappingNode {
				p.errorf(src, "<< merges a mapping or a list of mappings")
				ok = false
				continue
			}
			tmp := map[string]any{}
			ok = p.mapping(tmp, src, depth+1, map[string]bool{}) && ok
			for k, v := range tmp {
				if _, set := out[k]; !set {
					out[k] = v
				}
			}
		}
	}
	return ok
}

func (p *respParser) scalar(n *yaml.Node) (any, bool) {
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, true
	case "!!null":
		return nil, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			p.errorf(n, "%v", err)
			return nil, false
		}
		return b, true
	case "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			p.errorf(n, "%v", err)
			return nil, false
		}
		var f float64
		switch x := v.(type) {
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		case float64:
			f = x
		default:
			p.errorf(n, "unsupported number %q", n.Value)
			return nil, false
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			p.errorf(n, "%s is not a JSON number", n.Value)
			return nil, false
		}
		return f, true
	default:
		p.errorf(n, "unsupported YAML tag %s", tag)
		return nil, false
	}
}

// Add appends a response for agent: a string is reply text, anything else
// the output (normalized through JSON, so numbers become float64; a value
// JSON cannot encode is kept as it is). Add clears a simulation.
func (r *Responses) Add(agent string, v any) {
	if _, isString := v.(string); !isString {
		v = jsonvalue.Normalize(v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ent := r.entryLocked(agent)
	ent.Simulate = nil
	ent.Values = append(ent.Values, v)
}

// Position is where response n (1-based) of the entry comes from, for an
// error: "FILE:LINE" when its line is known, "" otherwise.
func (e *ResponseEntry) Position(n int) string {
	if e == nil || e.File == "" || n < 1 || n > len(e.Lines) || e.Lines[n-1] <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", e.File, e.Lines[n-1])
}

// AddText appends reply text for agent (as `Given agent "x" responds "..."`).
func (r *Responses) AddText(agent, text string) { r.Add(agent, text) }

// SetSimulate makes a model play agent, replacing its responses.
func (r *Responses) SetSimulate(agent, modelProfile, prompt string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ent := r.entryLocked(agent)
	ent.Values = nil
	ent.Simulate = &Simulation{ModelProfile: modelProfile, Prompt: prompt}
}

// Merge adds o's entries to r: responses are appended to r's for the same
// agent, and a simulation replaces what r had. o is not changed.
func (r *Responses) Merge(o *Responses) {
	if o == nil || o == r {
		return
	}
	o.mu.Lock()
	var ents []ResponseEntry
	for _, name := range o.order {
		e := *o.entries[name]
		e.Values = slices.Clone(e.Values)
		e.Lines = slices.Clone(e.Lines)
		ents = append(ents, e)
	}
	o.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range ents {
		mine := r.entryLocked(e.Agent)
		if e.Simulate != nil {
			mine.Values, mine.Simulate = nil, e.Simulate
		} else {
			mine.Simulate = nil
			if e.File != "" && (mine.File == "" || mine.File == e.File) {
				// The lines are of e.File, which is (or becomes) mine's:
				// none for the values mine had without one.
				mine.Lines = append(padLines(mine.Lines, len(mine.Values)), e.Lines...)
			}
			mine.Values = append(mine.Values, e.Values...)
		}
		if mine.File == "" {
			mine.File, mine.Pos, mine.src = e.File, e.Pos, e.src
		}
	}
}

// padLines is lines with zeros (no line) added up to n.
func padLines(lines []int32, n int) []int32 {
	for len(lines) < n {
		lines = append(lines, 0)
	}
	return lines
}

func (r *Responses) entryLocked(agent string) *ResponseEntry {
	if r.entries == nil {
		r.entries = map[string]*ResponseEntry{}
	}
	ent := r.entries[agent]
	if ent == nil {
		ent = &ResponseEntry{Agent: agent}
		r.entries[agent] = ent
		r.order = append(r.order, agent)
	}
	return ent
}

// Agents lists the agents with an entry, in file (or insertion) order.
func (r *Responses) Agents() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// Entry returns a copy of agent's entry, or nil when it has none. Its
// Values share the responses' own list (read-only, capped so that appending
// to them copies): an injected execution looks up one response, and copying
// the whole list each time would make a long run quadratic.
func (r *Responses) Entry(agent string) *ResponseEntry {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ent := r.entries[agent]
	if ent == nil {
		return nil
	}
	c := *ent
	c.Values = ent.Values[:len(ent.Values):len(ent.Values)]
	c.Lines = ent.Lines[:len(ent.Lines):len(ent.Lines)]
	return &c
}

// Validate checks r against the ensemble: every agent named must exist, and
// a simulation's model profile must exist. Every problem is reported, as a
// *ensemble.ErrorList: FILE:LINE:COL: message for entries from a file,
// "injected responses: message" for entries added in code.
func (r *Responses) Validate(e *ensemble.Ensemble) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []*ensemble.Error
	for _, name := range r.order {
		ent := r.entries[name]
		at := func(p ensemble.Pos, src, format string, args ...any) {
			err := &ensemble.Error{File: ent.File, Message: fmt.Sprintf(format, args...)}
			if ent.File == "" {
				err.File = "injected responses"
			} else if p.Line > 0 {
				err.Line, err.Column, err.Source = p.Line, p.Column, src
			}
			errs = append(errs, err)
		}
		if e.Agent(name) == nil && !validInstance(e, name) && !validPath(e, name) {
			if msg := notAnInstance(e, name); msg != "" {
				at(ent.Pos, ent.src, "%s", msg)
				continue
			}
			at(ent.Pos, ent.src, "unknown agent %q in responses%s", name, agentpath.SuggestAgent(e, name))
			continue
		}
		if s := ent.Simulate; s != nil {
			if _, ok := e.Models[s.ModelProfile]; !ok {
				at(s.Pos, s.src, "agent %q: simulate uses unknown model profile %q", name, s.ModelProfile)
			}
		}
	}
	return errorList(errs)
}
