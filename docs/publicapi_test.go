package docs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// publicPatterns are the packages of development.md's "Public API" table,
// as go list patterns: `kinds/*` is ./kinds/... .
func publicPatterns(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "### Public API\n")
	section, _, _ = strings.Cut(section, "\n#")
	var out []string
	for line := range strings.SplitSeq(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		for name := range strings.SplitSeq(cells[1], ",") {
			name = strings.Trim(strings.TrimSpace(name), "`")
			if p, ok := strings.CutSuffix(name, "/*"); ok {
				out = append(out, "./"+p+"/...")
			} else {
				out = append(out, "./"+name)
			}
		}
	}
	if !ok || len(out) == 0 {
		t.Fatal(`development.md has no "Public API" table naming the public packages`)
	}
	return out
}

// listedPackage is what go list -json says of a package.
type listedPackage struct {
	ImportPath string
	Export     string
	DepOnly    bool
	GoFiles    []string
	Error      *struct{ Err string }
}

// buildFlags are the flags of this test's own build that decide which files
// are compiled and how (tags, -trimpath, -race), so that go list -export
// finds the packages `go test` compiled in the build cache.
func buildFlags() []string {
	var flags []string
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "-tags", "-gcflags", "-asmflags":
			flags = append(flags, s.Key+"="+s.Value)
		case "-trimpath", "-race", "-msan", "-asan":
			if s.Value == "true" {
				flags = append(flags, s.Key)
			}
		}
	}
	return flags
}

// listPublic compiles the public packages and their dependencies (go list
// -export) and returns the public ones, and every package's export data.
func listPublic(t *testing.T) (roots []listedPackage, exports map[string]string) {
	t.Helper()
	args := append([]string{"list", "-e", "-export", "-deps", "-json"}, buildFlags()...)
	cmd := exec.Command("go", append(args, publicPatterns(t)...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	exports = map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.DepOnly {
			continue
		}
		switch {
		case len(p.GoFiles) == 0:
			// temporalengine with the notemporal tag: no files in this build.
			t.Logf("%s has no Go files in this build (tags %v): not checked", p.ImportPath, buildFlags())
		case p.Error != nil:
			t.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		case !strings.Contains(p.ImportPath, "/internal/"):
			roots = append(roots, p)
		}
	}
	return roots, exports
}

// TestPublicAPIUsesNoInternalType: no exported name of a public package has
// a type that mentions a package under internal/ (a func's or method's
// signature, an exported struct field, a variable, a defined type's
// underlying type), since a program outside the module can neither name
// nor build such a value. An exported alias of an internal type is the
// public name of that type: its exported fields and methods are held to
// the same rule.
func TestPublicAPIUsesNoInternalType(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("compiles the public packages (go list -export)")
	}
	roots, exports := listPublic(t)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file := exports[path]
		if file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var pkgs []*types.Package
	for _, p := range roots {
		pkg, err := imp.Import(p.ImportPath)
		if err != nil {
			t.Fatalf("reading %s: %v", p.ImportPath, err)
		}
		pkgs = append(pkgs, pkg)
	}
	named := aliased(pkgs)
	var problems []string
	for _, pkg := range pkgs {
		problems = append(problems, leaks(pkg, named)...)
	}
	slices.Sort(problems)
	for _, p := range slices.Compact(problems) {
		t.Error(p)
	}
}

// aliased are the internal types that an exported alias of a public
// package names: a program outside the module names them by the alias.
func aliased(pkgs []*types.Package) map[*types.TypeName]bool {
	out := map[*types.TypeName]bool{}
	for _, pkg := range pkgs {
		for _, name := range pkg.Scope().Names() {
			if obj, ok := pkg.Scope().Lookup(name).(*types.TypeName); ok && obj.Exported() && obj.IsAlias() {
				if n, ok := types.Unalias(obj.Type()).(*types.Named); ok && isInternal(n.Obj().Pkg()) {
					out[n.Obj()] = true
				}
			}
		}
	}
	return out
}

// leaks are the exported names of pkg whose types mention an internal type
// that no public alias names, each as "pkg.Name: what TYPE mentions PKG".
func leaks(pkg *types.Package, named map[*types.TypeName]bool) []string {
	var out []string
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return strings.TrimPrefix(p.Path(), module)
	}
	report := func(name, what string, typ types.Type) {
		if in := internalIn(typ, named, map[types.Type]bool{}); in != "" {
			out = append(out, fmt.Sprintf("%s.%s: %s %s mentions %s",
				pkg.Name(), name, what, types.TypeString(typ, qual), strings.TrimPrefix(in, module)))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Func:
			report(name, "func", obj.Type())
		case *types.Var:
			report(name, "var", obj.Type())
		case *types.Const:
			report(name, "const", obj.Type())
		case *types.TypeName:
			typeLeaks(obj, report)
		}
	}
	return out
}

// typeLeaks checks an exported type: its underlying type (the exported
// fields of a struct, the methods of an interface) and its exported
// methods, promoted ones included. An alias of an internal type is checked
// through the type it names.
func typeLeaks(obj *types.TypeName, report func(name, what string, typ types.Type)) {
	name := obj.Name()
	typ := obj.Type()
	if a, ok := typ.(*types.Alias); ok {
		rhs := types.Unalias(a)
		n, named := rhs.(*types.Named)
		if !named || !isInternal(n.Obj().Pkg()) {
			report(name, "alias of", a.Rhs())
			return
		}
		typ = n // the alias is the public name of an internal type
	}
	if n, ok := typ.(*types.Named); ok {
		for tp := range n.TypeParams().TypeParams() {
			report(name+"["+tp.Obj().Name()+"]", "type parameter", tp.Constraint())
		}
	}
	switch u := typ.Underlying().(type) {
	case *types.Struct:
		for f := range u.Fields() {
			if f.Exported() {
				report(name+"."+f.Name(), "field", f.Type())
			}
		}
	case *types.Interface:
		for m := range u.Methods() {
			if m.Exported() {
				report(name+"."+m.Name(), "method", m.Type())
			}
		}
	default:
		report(name, "type", typ.Underlying())
	}
	if _, ok := typ.Underlying().(*types.Interface); !ok {
		ms := types.NewMethodSet(types.NewPointer(typ))
		for sel := range ms.Methods() {
			if sel.Obj().Exported() {
				report(name+"."+sel.Obj().Name(), "method", sel.Type())
			}
		}
	}
}

func isInternal(p *types.Package) bool {
	return p != nil && strings.HasPrefix(p.Path(), module+"internal/")
}

// internalIn names the first internal package that typ mentions, or "".
// A named type of a public package is checked on its own, so the walk
// stops there; an alias declared in a public package stops it too, and an
// internal type that such an alias names is no leak.
func internalIn(typ types.Type, named map[*types.TypeName]bool, seen map[types.Type]bool) string {
	if typ == nil || seen[typ] {
		return ""
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Alias:
		if isInternal(t.Obj().Pkg()) {
			return t.Obj().Pkg().Path()
		}
		if t.Obj().Pkg() != nil && strings.HasPrefix(t.Obj().Pkg().Path(), module) {
			return ""
		}
		return internalIn(t.Rhs(), named, seen)
	case *types.Named:
		if isInternal(t.Obj().Pkg()) && !named[t.Origin().Obj()] {
			return t.Obj().Pkg().Path()
		}
		for a := range t.TypeArgs().Types() {
			if in := internalIn(a, named, seen); in != "" {
				return in
			}
		}
		if !t.Obj().Exported() && t.Obj().Pkg() != nil && !isInternal(t.Obj().Pkg()) {
			return unexportedIn(t, named, seen)
		}
		return ""
	case *types.Pointer:
		return internalIn(t.Elem(), named, seen)
	case *types.Slice:
		return internalIn(t.Elem(), named, seen)
	case *types.Array:
		return internalIn(t.Elem(), named, seen)
	case *types.Chan:
		return internalIn(t.Elem(), named, seen)
	case *types.Map:
		return cmpOr(internalIn(t.Key(), named, seen), internalIn(t.Elem(), named, seen))
	case *types.Signature:
		for tp := range t.TypeParams().TypeParams() {
			if in := internalIn(tp.Constraint(), named, seen); in != "" {
				return in
			}
		}
		for v := range t.Params().Variables() {
			if in := internalIn(v.Type(), named, seen); in != "" {
				return in
			}
		}
		for v := range t.Results().Variables() {
			if in := internalIn(v.Type(), named, seen); in != "" {
				return in
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if in := internalIn(f.Type(), named, seen); f.Exported() && in != "" {
				return in
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if in := internalIn(m.Type(), named, seen); in != "" {
				return in
			}
		}
		for e := range t.EmbeddedTypes() {
			if in := internalIn(e, named, seen); in != "" {
				return in
			}
		}
	case *types.TypeParam:
		return internalIn(t.Constraint(), named, seen)
	case *types.Union:
		for i := range t.Len() {
			if in := internalIn(t.Term(i).Type(), named, seen); in != "" {
				return in
			}
		}
	}
	return ""
}

// unexportedIn looks into an unexported type of a public package that the
// API hands out (a func's result, a field): its exported fields and
// methods are reachable even though its name is not.
func unexportedIn(t *types.Named, named map[*types.TypeName]bool, seen map[types.Type]bool) string {
	if in := internalIn(t.Underlying(), named, seen); in != "" {
		return in
	}
	ms := types.NewMethodSet(types.NewPointer(t))
	for sel := range ms.Methods() {
		if sel.Obj().Exported() {
			if in := internalIn(sel.Type(), named, seen); in != "" {
				return in
			}
		}
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestLeaksFindsEveryKind: the walk of TestPublicAPIUsesNoInternalType
// finds an internal type in each place an outside program meets it, and
// accepts one named by a public alias.
func TestLeaksFindsEveryKind(t *testing.T) {
	t.Parallel()
	check := func(path, src string, imports ...*types.Package) *types.Package {
		t.Helper()
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		conf := types.Config{Importer: importerOf(imports)}
		pkg, err := conf.Check(path, fset, []*ast.File{f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return pkg
	}
	in := check(module+"internal/in", `package in
type T struct{ N int }
type U struct{ N int }
func (T) M() {}`)
	pub := check(module+"pub", `package pub
import "github.com/ensemble-run/ensemble/internal/in"
type U = in.U // a public name: no leak
type S struct {
	Field   *in.T
	Fine    U
	private in.T
}
func (S) Method() []in.T { return nil }
func (S) fine() in.T { return in.T{} }
type I interface{ Get() map[string]in.T }
type F func(in.T)
type hidden struct{ Out in.T }
func Hand() hidden { return hidden{} }
var V in.T
func Generic[X interface{ *in.T }]() {}
type E struct{ in.T }
type G[X interface{ *in.T }] struct{}
func OK(U) {}`, in)
	got := leaks(pub, aliased([]*types.Package{pub}))
	var names []string
	for _, g := range got {
		name, _, _ := strings.Cut(g, ":")
		names = append(names, name)
	}
	want := []string{"pub.E.T", "pub.F", "pub.G[X]", "pub.Generic", "pub.Hand", "pub.I.Get", "pub.S.Field", "pub.S.Method", "pub.V"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("leaks found %v, want %v:\n%s", names, want, strings.Join(got, "\n"))
	}
}

// importerOf imports the packages given.
type importerOf []*types.Package

func (im importerOf) Import(path string) (*types.Package, error) {
	for _, p := range im {
		if p.Path() == path {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no package %s", path)
}
