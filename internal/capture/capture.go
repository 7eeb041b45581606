// Package capture turns a saved run into a test (`test capture`,
// docs/testing.md#a-run-becomes-a-test): a .feature file that runs the
// run's ensemble on its input and checks how it ended, how many times
// each agent ran and what each agent gave last, and the replies of its
// models and people, as a responses file or as the run's recording, so
// that `test` replays the run offline and calls no model.
//
// What a model or a person answered is read from the run's history: the
// output of every execution of an LLM or ask agent, of the top run and of
// its child ensembles (by path: `review/critic`, `analyst[1]/think`),
// becomes an injected response, in the order the run took them. Script
// agents run for real in the test.
package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/cassette"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/readcap"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/runners"
	"github.com/ensemble-run/ensemble/state"
)

// Run is the saved run to capture.
type Run struct {
	// File is the run's state (durable.Load).
	File *state.File
	// ID is its id in a state database; "" for a JSON state file.
	ID string
	// Source names where it was read, for the feature's comment and the
	// errors: the state file's path.
	Source string
}

// Options are how a run is captured.
type Options struct {
	// Out is the folder the test is written to (created when missing).
	Out string
	// Ensemble is the run's ensemble as it loads now
	// (session.Load of File.Ensemble.Path with File.Profiles).
	Ensemble *ensemble.Ensemble
	// Force overwrites files of an earlier capture that differ.
	Force bool
}

// Result is what Write wrote.
type Result struct {
	Feature   string // the .feature file
	Responses string // the responses file; "" when no agent needed one
	Recording string // the copy of the run's recording; "" when none
	// Notes are what the test checks less closely than the run went,
	// one sentence each (an execution that failed, which the test fails
	// otherwise).
	Notes []string
}

// A Capture is the files of a test, before they are written.
type Capture struct {
	Base      string // the files' name: the ensemble's, and the run id's
	Feature   []byte
	Responses []byte // nil: none
	// RecordingDir is the run's recording folder, copied to
	// Base+".recording"; "" when the run had none.
	RecordingDir string
	// RecordingFiles are the files of that folder that are copied: those
	// of the run's LLM and ask agents (cassette.FileName of their paths),
	// by file name, with the agent's path.
	RecordingFiles map[string]string
	Notes          []string
}

// Refused completion reasons: a replay would not end the same way.
var refused = map[string]string{
	"":                    "it is unfinished (still going, or its process was killed): resume it to its end, then capture it",
	engine.Cancelled:      "it was cancelled: a turn cut short is not in its state, so a replay would not stop where it did",
	engine.Timeout:        "it ended on its timeout: a replay takes its own time, and would not stop where it did",
	engine.BudgetExceeded: "it ended on its budget: injected and recorded replies spend nothing, so a replay would not stop where it did",
	engine.StrictWarning:  "it ended on a warning under --strict: a test replays without --strict, so a replay would not stop where it did",
}

// Build makes the test of run r.
func Build(r Run, o Options) (*Capture, error) {
	sf, e := r.File, o.Ensemble
	what := "the run"
	if r.ID != "" {
		what = fmt.Sprintf("run %q", r.ID)
	}
	if why, ok := refused[sf.CompletionReason]; ok {
		return nil, fmt.Errorf("cannot capture %s of %s: %s", what, r.Source, why)
	}
	if e == nil {
		return nil, errors.New("capture: no ensemble given")
	}
	if sf.Ensemble.SHA256 != "" && e.Hash != "" && e.Hash != sf.Ensemble.SHA256 {
		return nil, fmt.Errorf("cannot capture %s of %s: its ensemble file %s has changed since the run, and a test of it would test another ensemble", what, r.Source, sf.Ensemble.Path)
	}
	if err := engine.CheckState(e, sf); err != nil {
		return nil, fmt.Errorf("cannot capture %s of %s: %w", what, r.Source, err)
	}
	c := &Capture{Base: baseName(e.Name, r.ID)}
	rec := ""
	if sf.Options.Recording != nil {
		rec = sf.Options.Recording.Dir
		c.RecordingDir = rec
	}
	col := &collector{lists: map[string]*list{}, recording: rec}
	col.walk(e, sf.State.History(), "", false)
	responses, notes, err := col.responses(sf, what)
	if err != nil {
		return nil, err
	}
	c.Notes = notes
	c.RecordingFiles = col.files
	if len(responses.Content) > 0 {
		var buf bytes.Buffer
		buf.WriteString("# The replies the run got, by agent (path), in the order it took them:\n# written by `test capture`.\n")
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(responses); err != nil {
			return nil, fmt.Errorf("capture: the responses: %w", err)
		}
		enc.Close()
		c.Responses = buf.Bytes()
	}
	feature, err := c.feature(r, o, col)
	if err != nil {
		return nil, err
	}
	c.Feature = feature
	return c, nil
}

// baseName is the captured files' name: the ensemble's name and the run's
// id, with what a file name should not hold replaced.
func baseName(name, id string) string {
	if id != "" {
		name += "-" + id
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}

// An item is one execution of an agent whose reply is injected.
type item struct {
	value  any
	failed string // the execution's error, when it failed
	slim   bool   // a loop's earlier iteration: its output was not kept
}

// A list is what the executions of one responses key took, in order.
type list struct {
	agent    *ensemble.Agent
	items    []item
	recorded bool // the recording has the agent's file: it answers
}

type collector struct {
	lists     map[string]*list
	keys      []string // in the order first met
	recording string
	// files are the recording's files of the agents met, by file name,
	// with the agent's path.
	files map[string]string
	// paths are the child agents' paths, instances left out, in the order
	// first met: the Then steps check them too.
	paths []string
}

// walk collects the replies of the records recs of e, whose agents' paths
// start with prefix; slim: they are of a loop's earlier iteration.
func (c *collector) walk(e *ensemble.Ensemble, recs []*state.Record, prefix string, slim bool) {
	for _, r := range recs {
		if r.Skipped {
			continue
		}
		base := r.AgentName
		if r.Of != "" {
			base = r.Of
		}
		a := e.Agent(base)
		if a == nil {
			continue
		}
		if prefix != "" {
			if p := agentpath.PathWithoutInstances(prefix + base); !slices.Contains(c.paths, p) {
				c.paths = append(c.paths, p)
			}
		}
		if a.FanOut != nil && r.Instance == nil {
			continue // the fan-out's own record: its instances ran
		}
		if ch := r.Child(); ch != nil {
			runs := ch.Runs()
			for i, run := range runs {
				c.walk(childOf(a, run), run.ConversationHistory, prefix+r.AgentName+"/", slim || i < len(runs)-1)
			}
			continue
		}
		if !agent.IsGuarded(a.Kind) && !agent.AsksHuman(a) {
			continue // a script runs for real
		}
		// A fan-out's instances share their agent's list (the k-th instance
		// in the run takes the k-th reply); a child's agent is named by its
		// path, instances of its parents included.
		if c.recording != "" {
			if c.files == nil {
				c.files = map[string]string{}
			}
			c.files[cassette.FileName(prefix+r.AgentName)] = prefix + r.AgentName
		}
		key := prefix + base
		l := c.lists[key]
		if l == nil {
			l = &list{agent: a}
			if c.recording != "" {
				l.recorded = recorded(c.recording, prefix+r.AgentName)
			}
			c.lists[key] = l
			c.keys = append(c.keys, key)
		}
		it := item{value: r.OutputData, slim: slim}
		if r.Error != nil {
			it.failed = *r.Error
		}
		l.items = append(l.items, it)
	}
}

// recorded reports whether the recording dir has a file for the agent at
// path.
func recorded(dir, path string) bool {
	_, err := os.Stat(filepath.Join(dir, cassette.FileName(path)))
	return err == nil
}

// childOf is the child ensemble of a that ran run: the one of its name
// (a dispatch has several), else its first.
func childOf(a *ensemble.Agent, run *state.Child) *ensemble.Ensemble {
	children := agent.Children(a)
	for _, ch := range children {
		if ch.Name == run.Ensemble {
			return ch
		}
	}
	if len(children) > 0 {
		return children[0]
	}
	return &ensemble.Ensemble{}
}

// responsesFile is a responses file as YAML: a mapping in key order.
type responsesFile = yaml.Node

// responses are the responses file of the lists, and the notes of what it
// cannot replay exactly.
func (c *collector) responses(sf *state.File, what string) (*responsesFile, []string, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	var notes []string
	var saved *responses.Responses // the run's own responses file, unchanged
	for _, key := range c.keys {
		l := c.lists[key]
		slim := slices.ContainsFunc(l.items, func(it item) bool { return it.slim })
		// The recording answers its LLM agents; an ask agent's answers are
		// injected (a simulated user's are recorded as model exchanges,
		// which only a simulation would ask for again).
		if l.recorded && (agent.IsGuarded(l.agent.Kind) || slim) {
			continue
		}
		var values []any
		switch {
		case slim:
			// A loop keeps only its last iteration's outputs: the run's
			// own responses file has the others, when it has not changed.
			if saved == nil {
				saved = savedResponses(sf)
			}
			ent := saved.Entry(key)
			if ent == nil || ent.Simulate != nil {
				return nil, nil, fmt.Errorf("cannot capture %s: agent %q ran in a loop of a child ensemble, whose earlier iterations' outputs the state does not keep; record the run with run --record to capture it", what, key)
			}
			values = ent.Values
		default:
			last := len(l.items)
			for last > 0 && l.items[last-1].failed != "" {
				last--
			}
			for i, it := range l.items[:last] {
				if it.failed != "" {
					return nil, nil, fmt.Errorf("cannot capture %s: execution %d of agent %q failed (%s) before a later one succeeded, and an injected response cannot fail; record the run with run --record to capture it",
						what, i+1, key, responses.QuoteReply(it.failed))
				}
				v, err := reply(l.agent, it.value)
				if err != nil {
					return nil, nil, fmt.Errorf("cannot capture %s: agent %q, execution %d: %w", what, key, i+1, err)
				}
				values = append(values, v)
			}
			if last < len(l.items) {
				notes = append(notes, fmt.Sprintf("agent %q: its last %d execution(s) failed; in the test they fail too, as their injected responses run out (with another error)", key, len(l.items)-last))
			}
		}
		var n yaml.Node
		if err := n.Encode(values); err != nil {
			return nil, nil, fmt.Errorf("cannot capture %s: agent %q: %w", what, key, err)
		}
		if len(values) == 0 {
			n = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		}
		doc.Content = append(doc.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &n)
	}
	return doc, notes, nil
}

// savedResponses is the run's responses file when it has not changed
// since the run; nil otherwise.
func savedResponses(sf *state.File) *responses.Responses {
	ref := sf.Responses
	if ref == nil {
		return nil
	}
	if sum, err := state.HashFile(ref.Path); err != nil || sum != ref.SHA256 {
		return nil
	}
	r, err := responses.LoadResponses(ref.Path)
	if err != nil {
		return nil
	}
	return r
}

// reply is the injected response that gives a's output out: the output
// itself, but for a string, which a responses file holds as reply text:
// the text when it parses back to itself, else its JSON.
func reply(a *ensemble.Agent, out any) (any, error) {
	s, ok := out.(string)
	if !ok {
		return jsonvalue.Copy(out), nil
	}
	if !agent.JSONReply(a) {
		if v, err := runners.ParseOutput(s); err == nil && v == any(s) {
			return s, nil
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// Write writes c into o.Out: a file that exists with other contents is
// refused unless o.Force.
func (c *Capture) Write(o Options) (*Result, error) {
	if o.Out == "" {
		return nil, errors.New("capture: no folder to write to")
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	res := &Result{Notes: c.Notes, Feature: filepath.Join(o.Out, c.Base+".feature")}
	files := map[string][]byte{res.Feature: c.Feature}
	if c.Responses != nil {
		res.Responses = filepath.Join(o.Out, c.Base+".responses.yaml")
		files[res.Responses] = c.Responses
	}
	if c.RecordingDir != "" {
		res.Recording = filepath.Join(o.Out, c.Base+".recording")
		rec, err := recordingFiles(c.RecordingDir, c.RecordingFiles)
		if err != nil {
			return nil, err
		}
		for name, data := range rec {
			files[filepath.Join(res.Recording, name)] = data
		}
		if note := otherFiles(c.RecordingDir, c.RecordingFiles); note != "" {
			res.Notes = append(slices.Clip(res.Notes), note)
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	if !o.Force {
		for _, name := range names {
			same, err := sameContents(name, files[name])
			if err != nil {
				return nil, err
			}
			if !same {
				return nil, fmt.Errorf("%s exists and differs from the capture: remove it, or overwrite it with --force", name)
			}
		}
	}
	for _, name := range names {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(name, files[name], 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// maxRecordingFile caps what is read of one file of a recording.
const maxRecordingFile = 64 << 20

// recordingFiles are the files of the recording folder dir named by
// files (file name → agent path): the run's agents' recordings. Nothing
// else of the folder is read (a hand-edited state may name any folder);
// each file is read as a recording before it is copied, and one reached
// through a symbolic link that leads out of the folder is refused.
func recordingFiles(dir string, files map[string]string) (map[string][]byte, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("the run's recording: %w", err)
	}
	out := map[string][]byte{}
	for name, agent := range files {
		p := filepath.Join(dir, name)
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the agent recorded nothing (its answers were injected)
		}
		if err != nil {
			return nil, fmt.Errorf("the run's recording: %w", err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil || !inside(realDir, real) {
				return nil, fmt.Errorf("the run's recording: %s, the file of agent %q, is a symbolic link leading out of the recording folder (or to nothing): not copied", p, agent)
			}
			if st, err = os.Stat(real); err != nil {
				return nil, fmt.Errorf("the run's recording: %w", err)
			}
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("the run's recording: %s, the file of agent %q, is not a regular file: not copied", p, agent)
		}
		data, err := readcap.ReadFile(p, maxRecordingFile)
		if err != nil {
			return nil, fmt.Errorf("the run's recording: %w", err)
		}
		if err := cassette.Check(p, data); err != nil {
			return nil, fmt.Errorf("the run's recording: %s, the file of agent %q, is not a recording: not copied (%v)", p, agent, err)
		}
		out[name] = data
	}
	return out, nil
}

// otherFiles is a note naming the files of the recording folder dir that
// are of no agent of the run (files), which were not copied; "" when
// there are none. Only their names are read.
func otherFiles(dir string, files map[string]string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var others []string
	for _, e := range entries {
		if _, ours := files[e.Name()]; !ours && !e.IsDir() {
			others = append(others, e.Name())
		}
	}
	if len(others) == 0 {
		return ""
	}
	const shown = 5
	list := strings.Join(others[:min(len(others), shown)], ", ")
	if len(others) > shown {
		list += fmt.Sprintf(", and %d more", len(others)-shown)
	}
	return fmt.Sprintf("the recording folder %s holds %d file(s) of no agent of this run, not copied: %s", dir, len(others), list)
}

// inside reports whether the resolved path p is in the folder dir.
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// sameContents reports whether the file at name is missing or holds data.
func sameContents(name string, data []byte) (bool, error) {
	st, err := os.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, err
	case !st.Mode().IsRegular() || st.Size() != int64(len(data)):
		return false, nil
	}
	old, err := readcap.ReadFile(name, int64(len(data))+1)
	if err != nil {
		return false, err
	}
	return bytes.Equal(old, data), nil
}
