// Package llmorc converts an llm-orc project (its .llm-orc folder: the
// ensembles, the model profiles of config.yaml and profiles/, the scripts
// they run) into ensemble files (docs/llm-orc.md). What cannot be converted
// is listed as Problems, each with the file and line it came from.
package llmorc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// maxFile caps every file the import reads.
const maxFile = 16 << 20

// Options says what to import and where to.
type Options struct {
	Dir string // the llm-orc project: the folder holding .llm-orc, or .llm-orc itself
	Out string // the folder the ensemble files are written to
	// Package is the folder of the installed llm-orc Python package
	// (llm_orc), whose primitives/ scripts are llm-orc's built-in ones;
	// "" asks Python (below) where it is.
	Package string
	// Python is the interpreter asked for the llm-orc package; "" is
	// python3 on PATH.
	Python string
}

// Problem is something of the project that was not converted, or not
// exactly: File is relative to the project's .llm-orc folder.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
}

// Result is what Import wrote (paths relative to Options.Out, in order) and
// what it could not convert.
type Result struct {
	Written  []string
	Problems []Problem
}

// InputError is an import that cannot start: no .llm-orc folder, an output
// file that exists already.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// profile is an llm-orc model profile.
type profile struct {
	name, file string
	line       int
	m          map[string]any
	lines      map[string]int
	// converted: profileOf ran; out is what it gave (nil: not convertible).
	converted bool
	out       *outProfile
}

// source is one llm-orc ensemble file.
type source struct {
	rel  string // relative to .llm-orc
	name string
	root *yaml.Node
}

type importer struct {
	root     string          // the .llm-orc folder
	project  string          // the project folder, links resolved
	links    map[string]bool // links out of the project, listed
	out      string
	res      *Result
	profiles map[string]*profile
	byName   map[string]*source
	scripts  map[string]bool   // script paths (relative to root) to copy
	defaults map[string]string // config.yaml's default_models: role → profile
	opts     Options
	// external are scripts from the llm-orc package: output path → file
	external map[string]string
	pkg      string // the llm-orc package's folder, once asked
	pkgAsked bool
	missing  map[string]bool // primitives listed as not found
}

// Import converts the project at opts.Dir into opts.Out. Its error is an
// *InputError for a bad project or output folder; anything that cannot be
// converted is a Problem of the Result.
func Import(opts Options) (*Result, error) {
	root := filepath.Join(opts.Dir, ".llm-orc")
	if filepath.Base(filepath.Clean(opts.Dir)) == ".llm-orc" {
		root = opts.Dir
	}
	if st, err := os.Stat(filepath.Join(root, "ensembles")); err != nil || !st.IsDir() {
		return nil, &InputError{fmt.Sprintf("%s: not an llm-orc project: no .llm-orc/ensembles folder", opts.Dir)}
	}
	project, err := realProject(opts.Dir, root)
	if err != nil {
		return nil, err
	}
	im := &importer{root: root, project: project, out: opts.Out, res: &Result{}, profiles: map[string]*profile{}, byName: map[string]*source{}, scripts: map[string]bool{}, opts: opts, external: map[string]string{}}
	if link, why := im.escapes("ensembles"); link != "" {
		return nil, &InputError{fmt.Sprintf("%s: %s", filepath.Join(root, "ensembles"), why)}
	}
	if err := im.readProfiles(); err != nil {
		return nil, err
	}
	if err := im.readEnsembles(); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	names := make([]string, 0, len(im.byName))
	for n := range im.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	convs := map[string]*conv{}
	for _, n := range names {
		c := im.conv(im.byName[n])
		b, err := c.encode()
		if err != nil {
			return nil, err
		}
		files[n+".yaml"] = b
		convs[n] = c
	}
	im.addSiblings()
	for s := range im.scripts {
		if im.leaves(s) {
			continue
		}
		b, err := readcap.ReadFile(filepath.Join(root, s), maxFile)
		if err != nil {
			return nil, &InputError{fmt.Sprintf("script %s: %v", s, err)}
		}
		files[filepath.ToSlash(s)] = b
	}
	for p, src := range im.external {
		b, err := readcap.ReadFile(src, maxFile)
		if err != nil {
			return nil, &InputError{fmt.Sprintf("script %s: %v", src, err)}
		}
		files[p] = b
	}
	if err := im.write(files); err != nil {
		return im.res, err
	}
	err = im.narrowCases(names, convs)
	sort.SliceStable(im.res.Problems, func(i, j int) bool {
		a, b := im.res.Problems[i], im.res.Problems[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return im.res, err
}

// maxSiblings bounds the files copied from the folder of one script.
const maxSiblings = 200

// addSiblings adds to the scripts the other regular files of their
// folders (not below them): the modules llm-orc's scripts import from
// their own folder (_helpers.py), so that they run unchanged. A folder of
// more than maxSiblings files is listed as a problem, its scripts alone
// copied.
func (im *importer) addSiblings() {
	dirs := map[string]bool{}
	for s := range im.scripts {
		dirs[filepath.Dir(s)] = true
	}
	sorted := make([]string, 0, len(dirs))
	for dir := range dirs {
		sorted = append(sorted, dir)
	}
	sort.Strings(sorted)
	for _, dir := range sorted {
		if im.leaves(dir) {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(im.root, dir))
		if err != nil {
			continue
		}
		var files []string
		for _, e := range entries {
			f := filepath.Join(dir, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				// a link beside a script: followed when it stays inside
				if im.leaves(f) {
					continue
				}
				if st, err := os.Stat(filepath.Join(im.root, f)); err != nil || !st.Mode().IsRegular() {
					continue
				}
			} else if !e.Type().IsRegular() {
				continue
			}
			files = append(files, f)
		}
		if len(files) > maxSiblings {
			im.problem(dir, nil, "holds more than %d files: only the scripts the ensembles name were copied, not the modules beside them", maxSiblings)
			continue
		}
		for _, f := range files {
			im.scripts[f] = true
		}
	}
}

// write writes files under out, refusing to replace any.
func (im *importer) write(files map[string][]byte) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(im.out, p)); err == nil {
			return &InputError{fmt.Sprintf("%s: exists already; import into a new or empty folder", filepath.Join(im.out, p))}
		}
	}
	for _, p := range paths {
		dst := filepath.Join(im.out, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(p, "scripts/") || !strings.HasSuffix(p, ".yaml") {
			src := filepath.Join(im.root, p)
			if ext, ok := im.external[p]; ok {
				src = ext
			}
			if st, err := os.Stat(src); err == nil {
				mode = st.Mode().Perm()
			}
		}
		if err := os.WriteFile(dst, files[p], mode); err != nil {
			return err
		}
		im.res.Written = append(im.res.Written, p)
	}
	return nil
}

func (im *importer) problem(file string, n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	im.res.Problems = append(im.res.Problems, Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// readYAML reads and parses one file, capped; the document's root.
func (im *importer) readYAML(rel string) (*yaml.Node, error) {
	b, err := readcap.ReadTextFile(filepath.Join(im.root, rel), maxFile)
	if err != nil {
		return nil, &InputError{fmt.Sprintf("%s: %v", rel, err)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, &InputError{fmt.Sprintf("%s: %v", rel, err)}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &InputError{fmt.Sprintf("%s:1: not a YAML mapping", rel)}
	}
	return doc.Content[0], nil
}

// pairs are a mapping node's keys and values, in order.
func pairs(n *yaml.Node) (keys, vals []*yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i])
		vals = append(vals, n.Content[i+1])
	}
	return keys, vals
}

func get(n *yaml.Node, key string) *yaml.Node {
	keys, vals := pairs(n)
	for i, k := range keys {
		if k.Value == key {
			return vals[i]
		}
	}
	return nil
}

func str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func value(n *yaml.Node) any {
	var v any
	if n != nil {
		_ = n.Decode(&v)
	}
	return v
}

func (im *importer) readProfiles() error {
	add := func(rel string, name string, k, v *yaml.Node) {
		p := &profile{name: name, file: rel, line: k.Line, m: map[string]any{}, lines: map[string]int{}}
		ks, vs := pairs(v)
		for i, kk := range ks {
			p.m[kk.Value] = value(vs[i])
			p.lines[kk.Value] = kk.Line
		}
		if _, dup := im.profiles[name]; !dup {
			im.profiles[name] = p
		}
	}
	var rels []string
	if _, err := os.Lstat(filepath.Join(im.root, "config.yaml")); err == nil {
		rels = append(rels, "config.yaml")
	}
	if !im.leaves("profiles") {
		more, _ := filepath.Glob(filepath.Join(im.root, "profiles", "*.yaml"))
		for _, m := range more {
			rels = append(rels, filepath.ToSlash(filepath.Join("profiles", filepath.Base(m))))
		}
	}
	for _, rel := range rels {
		if im.leaves(rel) {
			continue
		}
		root, err := im.readYAML(rel)
		if err != nil {
			return err
		}
		if rel == "config.yaml" {
			dm := get(root, "default_models")
			if dm == nil {
				dm = get(get(root, "project"), "default_models")
			}
			ks, vs := pairs(dm)
			for i, k := range ks {
				if im.defaults == nil {
					im.defaults = map[string]string{}
				}
				im.defaults[k.Value] = str(vs[i])
			}
		}
		if mp := get(root, "model_profiles"); mp != nil {
			ks, vs := pairs(mp)
			for i, k := range ks {
				add(rel, k.Value, k, vs[i])
			}
		} else if name := str(get(root, "name")); name != "" && rel != "config.yaml" {
			add(rel, name, root, root)
			delete(im.profiles[name].m, "name")
		}
	}
	return nil
}

func (im *importer) readEnsembles() error {
	dir := filepath.Join(im.root, "ensembles")
	// files, then links: a link to a file is listed as the link
	var files, links []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		rel, _ := filepath.Rel(im.root, path)
		rel = filepath.ToSlash(rel)
		if d.Type()&fs.ModeSymlink != 0 {
			links = append(links, rel)
		} else {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// of copies, the shortest path is taken for the original (leaf.yaml
	// before leaf-copy.yaml)
	sort.SliceStable(files, func(i, j int) bool { return len(files[i]) < len(files[j]) })
	same := map[string]string{} // real path, or content → the first file's rel
	for _, rel := range append(files, links...) {
		im.readEnsemble(same, rel)
	}
	return nil
}

// readEnsemble reads the ensemble file rel into byName, or lists why not.
func (im *importer) readEnsemble(same map[string]string, rel string) {
	if im.leaves(rel) {
		return
	}
	if first := im.sameAs(same, rel); first != "" {
		im.problem(rel, nil, "same file as %s: converted once", first)
		return
	}
	root, err := im.readYAML(rel)
	if err != nil {
		// one file that does not parse leaves the others to convert
		im.problem(rel, nil, "%v: not converted", strings.TrimPrefix(err.Error(), rel+": "))
		return
	}
	agents := get(root, "agents")
	if agents == nil || agents.Kind != yaml.SequenceNode {
		im.problem(rel, root, "not an ensemble (no agents list): not converted")
		return
	}
	name := str(get(root, "name"))
	out := sanitize(name)
	if out == "" {
		im.problem(rel, root, "ensemble without a name: not converted")
		return
	}
	if prev, dup := im.byName[out]; dup {
		im.problem(rel, get(root, "name"), "ensemble name %q is taken by %s: not converted", name, prev.rel)
		return
	}
	im.byName[out] = &source{rel: rel, name: out, root: root}
}

// sameAs is the file of seen that rel is a link to or a copy of ("" when
// none), and records rel.
func (im *importer) sameAs(seen map[string]string, rel string) string {
	var keys []string
	if real, err := filepath.EvalSymlinks(filepath.Join(im.root, rel)); err == nil {
		keys = append(keys, "path:"+real)
	}
	if b, err := readcap.ReadFile(filepath.Join(im.root, rel), maxFile); err == nil {
		sum := sha256.Sum256(b)
		keys = append(keys, "sha256:"+hex.EncodeToString(sum[:]))
	}
	for _, k := range keys {
		if first, ok := seen[k]; ok {
			return first
		}
	}
	for _, k := range keys {
		seen[k] = rel
	}
	return ""
}
