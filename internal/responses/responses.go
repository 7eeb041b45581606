package responses

import (
	"errors"
	"fmt"
	"slices"
	"sync"

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
	r, err, ok := fastParse(name, data, lines, share)
	if !ok {
		if line := countEntryLines(data); line > 0 {
			return nil, tooManyEntries(name, line, lines)
		}
		r, err = parseYAML(name, data, lines, true)
	}
	return r, withMisplaced(name, r, err, lines)
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
