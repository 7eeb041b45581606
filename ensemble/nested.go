package ensemble

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxNesting is how deep ensembles may include ensembles
// (docs/format.md#ensembles-of-ensembles): a file's children are at depth 1.
const MaxNesting = 5

// nesting is what the files of one load share when ensembles include
// ensembles: the chain of files being loaded (to find include cycles) and
// the children already loaded, by absolute path.
type nesting struct {
	chain  []string // absolute paths, the top file first
	loaded map[string]*Ensemble
}

// Mapping decodes the field as a mapping whose keys are among known (any
// key when known is empty): the returned Fields decode its keys with
// positions, named `KEY of agent "x"` in messages. nil when the field is
// absent or not a mapping (reported).
func (f *Fields) Mapping(key string, known ...string) *Fields {
	fd := f.m.get(key)
	if !fd.ok() {
		return nil
	}
	where := fd.nested()
	m := f.d.mapping(fd.val, where, known...)
	if m == nil {
		return nil
	}
	return &Fields{d: f.d, m: m, where: where}
}

// Keys lists the keys written in the mapping, in file order.
func (f *Fields) Keys() []string {
	var keys []string
	for k, fd := range f.m.all() {
		if fd.ok() {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		ka, kb := f.m.get(a).key, f.m.get(b).key
		if ka == nil || kb == nil {
			return strings.Compare(a, b)
		}
		return cmp.Or(cmp.Compare(ka.Line, kb.Line), cmp.Compare(ka.Column, kb.Column))
	})
	return keys
}

// Ensemble decodes the path of an ensemble file, relative to this file's
// folder, and loads it as a child of this file
// (docs/format.md#ensembles-of-ensembles): with the same kinds, its problems
// reported with its own FILE:LINE:COL, inheriting this file's model
// profiles and tools unless it declares its own of the same name. A file
// that includes itself, directly or not, and children nested more than
// MaxNesting deep are errors. nil when the field is absent or the child is
// bad; a file included twice in one load is loaded once.
//
// The file must be under the folder of the ensemble file run (the top of
// the load), symbolic links resolved, unless allowOutside: its agents run
// scripts and read files with the run's data.
func (f *Fields) Ensemble(key string, allowOutside bool) *Ensemble {
	return f.d.include(f.m.get(key), allowOutside)
}

func (d *decoder) include(f field, allowOutside bool) *Ensemble {
	rel := d.str(f)
	d.need(f, rel == "")
	if rel == "" {
		return nil
	}
	path := rel
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(d.file), rel)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		d.bad(f, "%q: %v", rel, err)
		return nil
	}
	if d.nest == nil {
		top, _ := filepath.Abs(d.file)
		d.nest = &nesting{chain: []string{top}, loaded: map[string]*Ensemble{}}
	}
	n := d.nest
	if i := slices.Index(n.chain, abs); i >= 0 {
		cycle := make([]string, 0, len(n.chain)-i+1)
		for _, p := range append(n.chain[i:], abs) {
			cycle = append(cycle, filepath.Base(p))
		}
		d.bad(f, "%q includes a file that includes it: %s", rel, strings.Join(cycle, " → "))
		return nil
	}
	if len(n.chain) > MaxNesting {
		d.bad(f, "%q would nest ensembles %d deep; at most %d levels are allowed", rel, len(n.chain), MaxNesting)
		return nil
	}
	if e, ok := n.loaded[abs]; ok {
		return e
	}
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		// A folder, a device or a pipe (/dev/stdin) would fail or block.
		d.bad(f, "%q is not a regular file", rel)
		n.loaded[abs] = nil
		return nil
	} else if err == nil && !allowOutside && !d.inside(path) {
		// Refused before a byte is read: an error must not show a line
		// of a file that is no ensemble (/etc/passwd).
		d.bad(f, "%q is outside %s: a child ensemble runs scripts with the run's data; move it under the folder, or set allow_outside: true", rel, d.boundary())
		n.loaded[abs] = nil
		return nil
	}
	data, err := ReadFile(path)
	if err != nil {
		msg := (*err.(*ErrorList))[0].Message
		d.bad(f, "%q: %s", rel, msg)
		n.loaded[abs] = nil
		return nil
	}
	before := len(d.errs.list) + d.errs.more
	c := newDecoder(path, data, d.lookup, d.errs)
	c.kinds, c.nest, c.parentTools, c.overrides = d.kinds, n, slices.Collect(maps.Values(d.tools)), d.overrides
	c.parentMCP, c.expanded = d.mcp, d.expanded
	c.top = d.root()
	if !d.inside(path) {
		c.top, c.noEcho = filepath.Dir(abs), true // let in by allow_outside
	}
	slices.SortFunc(c.parentTools, func(a, b *Tool) int { return strings.Compare(a.Name, b.Name) })
	root := c.document(data)
	c.keyVars = maps.Clone(d.keyVars)
	if root != nil {
		c.keyVarsOf(root, c.keyVars)
	}
	e := &Ensemble{Path: abs, Dir: filepath.Dir(abs), Version: 1, Models: maps.Clone(d.models), Kinds: d.kinds}
	e.Hash = hash(data)
	c.dir, c.models = e.Dir, e.Models
	n.chain = append(n.chain, abs)
	if root != nil {
		c.ensemble(root, e)
	}
	n.chain = n.chain[:len(n.chain)-1]
	if c.noEcho {
		for _, err := range d.errs.list[min(before, len(d.errs.list)):] {
			if err.File == path {
				err.Source = "" // no line of it on a terminal either
			}
		}
	}
	if len(d.errs.list)+d.errs.more > before {
		n.loaded[abs] = nil
		return nil
	}
	n.loaded[abs] = e
	return e
}

// inheritTools adds to the tools of a child file those of its parent that
// it does not declare itself.
func (d *decoder) inheritTools(tools []*Tool) []*Tool {
	for _, t := range d.parentTools {
		if d.tools[t.Name] == nil {
			d.tools[t.Name] = t
			tools = append(tools, t)
		}
	}
	return tools
}

func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
