package ensemble

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

var (
	namePattern    = regexp.MustCompile(`^[a-z0-9_-]+$`)
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// decoder walks the yaml.Node tree of one file, collecting every problem.
type decoder struct {
	file   string
	lines  []string
	errs   *errorSink // shared by every file of one load
	lookup func(string) (string, bool)
	// keyVars are the api_key_env variables of every profile of the load,
	// each with its profile's name: ${VAR} never expands them.
	keyVars map[string]string

	// set while decoding an ensemble file
	dir string // its folder, absolute
	// top bounds the files its agents read (root); empty for the file run.
	top string
	// noEcho leaves the values out of messages (describe): the file is
	// a child let in from outside the folder by allow_outside, and may be
	// no ensemble at all (/etc/passwd, a key file).
	noEcho bool
	models map[string]*ModelProfile // merged profiles
	// overrides are the profiles of LoadOptions.ProfileOverrides, which
	// replace a file's own (each replaced one is warned of in shadowed).
	overrides  map[string]*ModelProfile
	shadowed   []*Error
	tools      map[string]*Tool
	agentNodes map[string]*yaml.Node // first agent of each name
	badDeps    map[*Dependency]bool  // dependencies already reported (unknown agent, itself): left out of the run check
	stateKeys  map[string]stateKeyUse
	conds      []condRef   // compiled conditions, checked against the state keys
	selects    []selectRef // compiled selects, checked against output schemas
	kinds      []Kind      // LoadOptions.Kinds
	// nest is shared by the files of a load whose ensembles include
	// ensembles (nested.go); parentTools are the tools a child inherits.
	nest        *nesting
	parentTools []*Tool
	// mcp are the file's MCP servers (its own and its parent's);
	// parentMCP are those a child inherits.
	mcp       map[string]*MCPServer
	parentMCP map[string]*MCPServer
	// keys are the key lists of agents, made once (agentKeys).
	keys *agentKeyLists
	// expanded are the ${VAR} expanded by every file of the load, checked
	// at its end against the keys of its child ensembles (keys.go).
	expanded *[]expansion
	// maxCost is where conversation_limits.max_cost is written, for the
	// warning of a cap that no pricing can reach.
	maxCost Pos
}

func newDecoder(file string, data []byte, lookup func(string) (string, bool), errs *errorSink) *decoder {
	return &decoder{file: file, lines: strings.Split(string(data), "\n"), errs: errs, lookup: lookup}
}

// errorAt records a problem at line:col and returns it.
func (d *decoder) errorAt(line, col int, format string, args ...any) *Error {
	e := &Error{File: d.file, Line: line, Column: col}
	if !d.errs.add(e) {
		return e // beyond MaxErrors: only counted
	}
	e.Message = fmt.Sprintf(format, args...)
	if line >= 1 && line <= len(d.lines) {
		e.Source = strings.TrimRight(d.lines[line-1], "\r")
	}
	return e
}

// errorf records a problem at n's position.
func (d *decoder) errorf(n *yaml.Node, format string, args ...any) *Error {
	return d.errorAt(n.Line, n.Column, format, args...)
}

// field is one key: value pair of a mapping; key and val are nil when the key
// is absent, and the decoders below then return the zero value silently.
type field struct {
	where  string // the mapping's owner in messages: `agent "x"`; "" at top level
	name   string // the key
	parent *yaml.Node
	key    *yaml.Node
	val    *yaml.Node
}

func (f field) ok() bool { return f.val != nil }

// label is how messages refer to the field: `agent "x": max_turns`.
func (f field) label() string {
	if f.where == "" {
		return f.name
	}
	return f.where + ": " + f.name
}

// nested names a mapping held by the field: `conversation of agent "x"`,
// or a path such as `conversation_limits.max_agent_executions`.
func (f field) nested() string {
	switch {
	case f.where == "":
		return f.name
	case !strings.Contains(f.where, " "):
		return f.where + "." + f.name
	}
	return f.name + " of " + f.where
}

// bad records a problem with the field's value.
func (d *decoder) bad(f field, format string, args ...any) *Error {
	return d.errorf(f.val, "%s %s", f.label(), fmt.Sprintf(format, args...))
}

// need reports a field that is absent (at its mapping) or empty; a value of
// the wrong type was reported when decoding it.
func (d *decoder) need(f field, empty bool) {
	switch {
	case !f.ok():
		d.errorf(f.parent, "%s is required", f.label())
	case empty && (resolve(f.val).Kind == yaml.ScalarNode || len(resolve(f.val).Content) == 0):
		d.bad(f, "must not be empty")
	}
}

// fields is a decoded mapping: its keys as fields. A key the mapping does
// not have is a field that is not ok() but knows its name and mapping, for
// messages (`agent "x": name is required`). Only the keys present are
// stored: an agent may take dozens of keys and set a few, and a map of
// every known key per agent was a fifth of loading 20,000 agents.
type fields = *fieldSet

type fieldSet struct {
	present map[string]field
	where   string
	parent  *yaml.Node
}

// get is the field of key k (not ok() on a nil set: no mapping).
func (f *fieldSet) get(k string) field {
	if f == nil {
		return field{name: k}
	}
	if fd, ok := f.present[k]; ok {
		return fd
	}
	return field{where: f.where, name: k, parent: f.parent}
}

// all is the keys present, by key (nil on a nil set).
func (f *fieldSet) all() map[string]field {
	if f == nil {
		return nil
	}
	return f.present
}

// mapping checks that n is a mapping whose keys are all known (any key when
// known is empty), reporting wrong kinds, unknown keys (suggesting the closest
// known one) and repeated keys. Merge keys (<<: *anchor) are honoured;
// explicit keys win over merged ones. At top level (where == ""), keys
// starting with "x-" are extensions that are ignored: a place for anchors.
// mapping returns nil when n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, where string, known ...string) fields {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		got := d.describe(n)
		if where == "" {
			got = kindOf(n) // a whole file that is no ensemble: never shown
		}
		d.errorf(n, "%s must be a mapping, got %s", owner(where), got)
		return nil
	}
	f := &fieldSet{present: make(map[string]field, len(n.Content)/2), where: where, parent: n}
	d.collect(n, where, known, f, nil, false)
	return f
}

// collect reads the keys of n into f, then those of the mappings n merges;
// seen holds the mappings merged already (nil until n merges one).
func (d *decoder) collect(n *yaml.Node, where string, known []string, f fields, seen map[*yaml.Node]bool, merged bool) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode:
			d.errorf(k, "%s: keys must be plain names, got %s", owner(where), d.describe(k))
		case k.ShortTag() == "!!merge":
			merges = append(merges, v)
		case f.get(k.Value).ok():
			if !merged {
				d.errorf(k, "%s: key %q repeated (first on line %d)", owner(where), k.Value, f.get(k.Value).key.Line)
			}
		case len(known) == 0 || slices.Contains(known, k.Value):
			f.present[k.Value] = field{where, k.Value, n, k, v}
		case where == "" && strings.HasPrefix(k.Value, "x-"):
		case d.errs.full():
			d.errorAt(k.Line, k.Column, "unknown key") // only counted: spare the suggestion
		case where == "":
			d.errorf(k, "unknown top-level key %q%s", k.Value, hint(k.Value, known))
		default:
			d.errorf(k, "unknown key %q in %s%s", k.Value, where, hint(k.Value, known))
		}
	}
	if len(merges) > 0 && seen == nil {
		seen = map[*yaml.Node]bool{n: true}
	}
	for _, m := range merges {
		m = resolve(m)
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, s := range sources {
			s = resolve(s)
			switch {
			case s.Kind != yaml.MappingNode:
				d.errorf(s, "%s: << must merge a mapping, got %s", owner(where), d.describe(s))
			case !seen[s]:
				seen[s] = true
				d.collect(s, where, known, f, seen, true)
			}
		}
	}
}

// list returns the items of a list field.
func (d *decoder) list(f field) []*yaml.Node {
	if !f.ok() {
		return nil
	}
	v := resolve(f.val)
	if v.Kind != yaml.SequenceNode {
		d.bad(f, "must be a list, got %s", d.describe(v))
		return nil
	}
	return v.Content
}

// itemName names the i-th item of a list in messages: `agent "x"`, or `agent #2`
// when it has no name.
func (d *decoder) itemName(what string, n *yaml.Node, key string, i int) string {
	if name := d.peek(n, key); name != "" {
		return fmt.Sprintf("%s %q", what, name)
	}
	return fmt.Sprintf("%s #%d", what, i+1)
}

// peek returns the string value of key in mapping n, merge keys included,
// reporting nothing.
func (d *decoder) peek(n *yaml.Node, key string) string {
	quiet := *d
	quiet.errs = new(errorSink)
	// No list of known keys: every key is collected, none is "unknown", so
	// nothing is spent on suggestions for errors nobody sees.
	return quiet.str(quiet.mapping(n, "").get(key))
}

func pos(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describe names the type of n's value for messages: `a mapping`, `string "x"`.
func (d *decoder) describe(n *yaml.Node) string {
	if d.noEcho {
		return kindOf(n)
	}
	return describe(n)
}

// kindOf names n's kind alone: a mapping, a list, a string, a number...
func kindOf(n *yaml.Node) string {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		return describe(n)
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing"
	case "!!str":
		return "a string"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "true or false"
	}
	return "a value"
}

func describe(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return fmt.Sprintf("string %q", shorten(n.Value))
		}
		if v := shorten(n.Value); v == n.Value && !strings.ContainsAny(v, "\n\r\t") {
			return v // a number, a boolean: as written
		}
		return fmt.Sprintf("%q", shorten(n.Value)) // another tag's value, on one line
	}
	return "nothing"
}

// shorten cuts a value quoted in a message to its first 60 characters.
func shorten(v string) string {
	if utf8.RuneCountInString(v) <= 60 {
		return v
	}
	return string([]rune(v)[:60]) + "…"
}

// owner names a mapping's owner at the start of a message.
func owner(where string) string {
	if where == "" {
		return "the file"
	}
	return where
}

// str decodes any scalar as a string (null as ""); lists and mappings are errors.
func (d *decoder) str(f field) string {
	if !f.ok() {
		return ""
	}
	v := resolve(f.val)
	if v.Kind != yaml.ScalarNode {
		d.bad(f, "must be a string, got %s", d.describe(v))
		return ""
	}
	if v.ShortTag() == "!!null" {
		return ""
	}
	return v.Value
}

// scalar decodes f into out when its tag is one of tags.
func (d *decoder) scalar(f field, want string, out any, tags ...string) bool {
	if !f.ok() {
		return false
	}
	v := resolve(f.val)
	if v.Kind != yaml.ScalarNode || !slices.Contains(tags, v.ShortTag()) || v.Decode(out) != nil {
		d.bad(f, "must be %s, got %s", want, d.describe(v))
		return false
	}
	return true
}

func (d *decoder) boolean(f field) (b bool) {
	d.scalar(f, "true or false", &b, "!!bool")
	return b
}

// positive decodes an integer ≥ 1; 0 when absent or bad.
func (d *decoder) positive(f field) int {
	var i int
	if !d.scalar(f, "an integer", &i, "!!int") {
		return 0
	}
	if i < 1 {
		d.bad(f, "must be at least 1, got %d", i)
		return 0
	}
	return i
}

// number decodes an integer or a float.
func (d *decoder) number(f field) (x float64, ok bool) {
	if !d.scalar(f, "a number", &x, "!!int", "!!float") {
		return 0, false
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		d.bad(f, "must be a finite number, got %s", f.val.Value)
		return 0, false
	}
	return x, true
}

// MinTimeout is the shortest timeout a file may give: shorter ones would
// round down to 0, which means no timeout.
const MinTimeout = time.Millisecond

// seconds decodes a number of seconds of at least MinTimeout; 0 when absent
// or bad.
func (d *decoder) seconds(f field) time.Duration {
	x, ok := d.number(f)
	switch {
	case !ok:
		return 0
	case x < MinTimeout.Seconds():
		d.bad(f, "must be at least %g seconds (%v), got %s", MinTimeout.Seconds(), MinTimeout, f.val.Value)
		return 0
	case x > float64(math.MaxInt64/time.Second):
		d.bad(f, "is too large")
		return 0
	}
	return time.Duration(x * float64(time.Second))
}

// strings decodes a list of strings, one per item.
func (d *decoder) strings(f field) []string {
	items := d.list(f)
	out := make([]string, len(items))
	for i, item := range items {
		f.val = item
		out[i] = d.str(f)
	}
	return out
}

// value decodes a free-form YAML value as JSON data: maps with string keys,
// dates kept as written, finite numbers.
func (d *decoder) value(f field) any {
	v, ok, err := yamlValue(f.val)
	if err != nil {
		d.bad(f, "cannot be decoded: %s", err)
		return nil
	}
	if !ok {
		d.bad(f, "holds .inf or .nan, which JSON cannot carry")
	}
	return v
}

// blocks are the keys of the nested mappings a misplaced key may belong
// to, by the key of the mapping.
var blocks = map[string][]string{
	"fan_out":             fanOutKeys,
	"conversation":        conversationKeys,
	"budget":              budgetKeys,
	"retry":               retryKeys,
	"pricing":             pricingKeys,
	"context_window":      windowKeys,
	"conversation_limits": limitKeys,
}

// hint explains an unknown key: `: it belongs under fan_out` when a block
// that may appear here takes it (a key indented one level too far left),
// else the closest known key (in a model profile, else options).
func hint(s string, known []string) string {
	var homes []string
	for _, k := range known {
		if slices.Contains(blocks[k], s) {
			homes = append(homes, k)
		}
	}
	switch len(homes) {
	case 0:
	case 1:
		return fmt.Sprintf(": it belongs under %s: %s: {%s: ...}", homes[0], homes[0], s)
	default:
		return fmt.Sprintf(": it belongs under %s", strings.Join(homes, " or "))
	}
	if meant := keyAliases[s]; meant != "" && slices.Contains(known, meant) {
		return fmt.Sprintf("; did you mean %q?", meant)
	}
	if h := suggest(s, known); h != "" || !slices.Contains(known, "options") {
		return h
	}
	// A model profile: a field of the provider's API goes under options.
	return fmt.Sprintf("; a field of the provider's request goes under options: {%s: ...}", s)
}

// suggest returns `; did you mean "x"?` for the candidate closest to s, or ""
// when none is close.
func suggest(s string, candidates []string) string {
	if best := closest(s, candidates); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// closest returns the candidate closest to s, or "" when none is close: at
// most 1 + a quarter of its letters edits away (optimal string alignment,
// ignoring case), and s of two letters or more; a one-letter s suggests
// only the same letter in another case (any other one-letter value is one
// edit away: "did you mean 1?" for 4 would be noise). s may come from
// outside (a URL, a model's tool call): one longer than maxSuggested
// letters suggests nothing, and a candidate whose length alone is too far
// is not compared, so that a huge s costs no more than counting it.
func closest(s string, candidates []string) string {
	n := utf8.RuneCountInString(s)
	if n > maxSuggested {
		return ""
	}
	best, bestDist := "", 1+n/4
	if n < 2 {
		bestDist = 0
	}
	for _, c := range candidates {
		if m := utf8.RuneCountInString(c); n-m > bestDist || m-n > bestDist {
			continue // at least |n-m| edits away
		}
		if dist := distance(s, c); dist <= bestDist && (best == "" || dist < bestDist) {
			best, bestDist = c, dist
		}
	}
	return best
}

// maxSuggested is the length of the longest value closest looks at.
const maxSuggested = 1024

// distance is the optimal string alignment distance: edits, counting a swap of
// two neighbours as one. It keeps three rows of the table, not the table.
func distance(a, b string) int {
	s, t := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	prev2, prev, cur := make([]int, len(t)+1), make([]int, len(t)+1), make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
