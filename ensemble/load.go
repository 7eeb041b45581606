package ensemble

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// LoadOptions tunes Load.
type LoadOptions struct {
	// ProfileOverrides are profiles files (docs/format.md#profiles-files)
	// whose profiles win over the ensemble file's own, and its children's:
	// those the command line gives (--profiles). A file's profile so
	// replaced is a warning. On a name clash the earlier file wins.
	ProfileOverrides []string
	// ProfileFiles are profiles files whose profiles a file's own replace:
	// those the environment gives ($ENSEMBLE_PROFILES). Empty entries are
	// skipped. On a name clash the earlier file wins.
	ProfileFiles []string
	// LookupEnv expands ${VAR} in model profiles; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Kinds are the kinds of agent the file may use, in the order messages
	// list them (package kinds has the built-in ones). An agent is of the
	// kind whose Key it has.
	Kinds []Kind
}

// Load reads, decodes and validates the ensemble file at path. Every problem
// found is reported: the error is then a *ErrorList.
func Load(path string, opts LoadOptions) (*Ensemble, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return LoadBytes(path, data, opts)
}

// MaxFileSize is the largest ensemble or profiles file the loader reads.
const MaxFileSize = 16 << 20

// ReadFile reads a file of at most MaxFileSize bytes; the error is a
// *ErrorList naming the file.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ErrorList{readError(path, err)}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
		return nil, &ErrorList{tooLarge(path)} // refused unread
	}
	return ReadAll(path, f)
}

// ReadAll reads r (the file or stream name names in errors) to its end, but
// never more than MaxFileSize bytes of text: an endless stream fails
// instead of exhausting the memory, and a NUL byte (no YAML holds one)
// fails at once. The error is a *ErrorList naming name.
func ReadAll(name string, r io.Reader) ([]byte, error) {
	data, err := readcap.ReadText(r, MaxFileSize)
	if _, ok := errors.AsType[*readcap.TooLargeError](err); ok {
		return nil, &ErrorList{tooLarge(name)}
	}
	if nt, ok := errors.AsType[*readcap.NotTextError](err); ok {
		return nil, &ErrorList{{File: name, Message: "the file is " + nt.Error() + ": YAML is text"}}
	}
	if err != nil {
		return nil, &ErrorList{readError(name, err)}
	}
	return data, nil
}

func tooLarge(path string) *Error {
	return &Error{File: path, Message: fmt.Sprintf("the file is larger than %d MiB, the limit for the YAML files read whole (ensemble, profiles, answers)", MaxFileSize>>20)}
}

// LoadBytes is Load for a file already read; path names it in errors, and
// scripts resolve against its folder.
func LoadBytes(path string, data []byte, opts LoadOptions) (*Ensemble, error) {
	if len(opts.Kinds) == 0 {
		return nil, errors.New("ensemble: no kind of agent is known: LoadOptions.Kinds is empty (package kinds lists the built-in ones)")
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, &ErrorList{tooLarge(path)}
	}
	var errs errorSink
	// Every file is parsed before any is decoded, so that ${VAR} sees the
	// api_key_env of every profile, whichever file declares it.
	type profilesDoc struct {
		d    *decoder
		root *yaml.Node
	}
	read := func(files []string, what string) []profilesDoc {
		var docs []profilesDoc
		for _, file := range slices.Backward(files) {
			if file == "" {
				continue
			}
			if pd, root := readProfiles(file, what, lookup, &errs); root != nil {
				docs = append(docs, profilesDoc{pd, root})
			}
		}
		return docs
	}
	docs, overrideDocs := read(opts.ProfileFiles, "$ENSEMBLE_PROFILES"), read(opts.ProfileOverrides, "--profiles")
	d := newDecoder(path, data, lookup, &errs)
	root := d.document(data)
	keys := map[string]string{}
	if root != nil {
		d.keyVarsOf(root, keys)
	}
	for _, doc := range slices.Concat(docs, overrideDocs) {
		doc.d.keyVarsOf(doc.root, keys)
	}
	models, overrides := map[string]*ModelProfile{}, map[string]*ModelProfile{}
	expanded := &[]expansion{}
	d.expanded = expanded
	for _, doc := range slices.Concat(docs, overrideDocs) {
		doc.d.expanded = expanded
	}
	for _, doc := range docs {
		doc.d.keyVars = keys
		maps.Copy(models, doc.d.profilesFile(doc.root))
	}
	for _, doc := range overrideDocs {
		doc.d.keyVars = keys
		maps.Copy(overrides, doc.d.profilesFile(doc.root))
	}
	maps.Copy(models, overrides)
	sum := sha256.Sum256(data)
	e := &Ensemble{Path: abs, Dir: filepath.Dir(abs), Hash: hex.EncodeToString(sum[:]), Version: 1, Models: models}
	d.dir, d.models, d.keyVars, d.overrides = e.Dir, models, keys, overrides
	d.kinds, e.Kinds = opts.Kinds, opts.Kinds
	if root != nil {
		d.ensemble(root, e)
	}
	shareTreeKeys(e, d.nest, *expanded)
	if err := errs.result(); err != nil {
		return nil, err
	}
	return e, nil // indexed by d.ensemble, for the run check
}

var topKeys = []string{"version", "name", "description", "input", "output", "models", "mcp_servers", "tools", "agents", "conversation_limits", "expect", "triggers"}

func (d *decoder) ensemble(root *yaml.Node, e *Ensemble) {
	fs := d.mapping(root, "", topKeys...)
	if fs == nil {
		return
	}
	if f := fs.get("version"); f.ok() {
		if d.scalar(f, "1", &e.Version, "!!int") && e.Version != 1 {
			d.bad(f, "must be 1, got %d", e.Version)
		}
	}
	e.Name = d.str(fs.get("name"))
	d.need(fs.get("name"), e.Name == "")
	if e.Name != "" && !namePattern.MatchString(e.Name) {
		d.bad(fs.get("name"), "%q is invalid: use only a-z, 0-9, _ and -", e.Name)
	}
	e.Description = d.str(fs.get("description"))
	e.Input = d.str(fs.get("input"))
	own := d.profiles(fs.get("models"))
	maps.Copy(e.Models, own)
	for name, p := range d.overrides { // the command line's win
		if mine := own[name]; mine != nil {
			d.shadowed = append(d.shadowed, d.warningAt(mine.Pos, fmt.Sprintf(
				"model profile %q is replaced by the one of %s, a profiles file given to the command, which wins over the file's own", name, p.File)))
		}
		e.Models[name] = p
	}
	d.shadowed = append(d.shadowed, d.misspeltOverrides(own)...)
	checkFallbacks(e.Models)
	e.MCPServers = d.mcpServers(fs.get("mcp_servers"))
	e.Tools = d.toolList(fs.get("tools"))
	// Before the agents: their decoding checks the names the expectations
	// read with the conditions' (contextKeys, contextFields).
	e.Expect = d.expectations(fs.get("expect"))
	e.Agents = d.agents(fs.get("agents"))
	e.Output = d.output(fs.get("output"))
	e.Limits = d.limits(fs.get("conversation_limits"))
	e.Triggers = d.triggers(fs.get("triggers"))
	// The run check goes on despite other errors, so that every problem is
	// reported at once; the dependencies already reported are left out of it.
	e.Index()
	c := e.runnable(func(dep *Dependency) bool { return !d.badDeps[dep] })
	for _, u := range e.whyUnrunnable(c) {
		d.errorAt(u.agent.Pos.Line, u.agent.Pos.Column, "agent %q can never run: %s", u.agent.Name, u.why)
	}
	e.Warnings = d.warnings(e)
}

// document parses data as a single YAML document and returns its root, or nil
// after reporting a syntax error (in plain words, see ParseYAML) or an empty
// file.
func (d *decoder) document(data []byte) *yaml.Node {
	root, err := ParseYAML(d.file, data)
	switch {
	case err != nil:
		for _, e := range err.(*ErrorList).Sorted() {
			d.errorAt(e.Line, e.Column, "%s", e.Message)
		}
	case root == nil:
		d.errorAt(1, 1, "the file is empty")
	default:
		return root
	}
	return nil
}

// ParseYAML parses a file of the project's formats (an ensemble file, a
// responses file) as one YAML document and returns its root node: nil for
// an empty file. A syntax error comes back as a *ErrorList holding it in
// plain words at the FILE:LINE:COL of its cause (a tab used for indentation,
// a list that is never closed...), with the line for a caret; so does a
// second document in the file. Every file the project reads goes through
// it, so that they all report YAML problems alike.
func ParseYAML(file string, data []byte) (*yaml.Node, error) {
	docs, err := parse(data)
	switch {
	case err != nil:
		lines := strings.Split(string(data), "\n")
		line, col, msg := syntaxError(lines, failingLine(data, err.Error()), err)
		l := ErrorList{{File: file, Line: line, Column: col, Message: msg, Source: sourceLine(lines, line)}}
		return nil, &l
	case len(docs) == 0:
		return nil, nil
	case len(docs) > 1:
		n := docs[1]
		l := ErrorList{{File: file, Line: n.Line, Column: n.Column, Message: "only one YAML document is allowed per file",
			Source: sourceLine(strings.Split(string(data), "\n"), n.Line)}}
		return nil, &l
	}
	return docs[0], nil
}

// parse decodes every YAML document in data and returns their roots.
func parse(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		switch err := dec.Decode(&doc); {
		case err == io.EOF:
			return docs, nil
		case err != nil:
			return nil, err
		case len(doc.Content) > 0:
			docs = append(docs, doc.Content[0])
		}
	}
}

// failingLine finds the line of a syntax error: the shortest prefix of whole
// lines that fails the same way.
func failingLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	lo, hi := 1, len(lines)
	for lo < hi {
		mid := (lo + hi) / 2
		if _, err := parse(bytes.Join(lines[:mid], nil)); err != nil && err.Error() == msg {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// readError reports a file that could not be read.
func readError(path string, err error) *Error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		err = pe.Err
	}
	return &Error{File: path, Message: "cannot read: " + err.Error()}
}
