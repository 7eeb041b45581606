package docs_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ensemble-run/ensemble/"

// importLayers are the packages of development.md's import list, each with
// its line: 0 is the top.
func importLayers(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- import layers -->\n```text\n")
	body, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("development.md has no import list (a text block after <!-- import layers -->)")
	}
	layers := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(body), "\n") {
		for _, p := range strings.Fields(line) {
			if _, dup := layers[p]; dup {
				t.Errorf("development.md lists %s twice in its import list", p)
			}
			layers[p] = i
		}
	}
	return layers
}

// packageImports are the module's packages (but the folders of tests,
// docs and scripts) with the project packages that their non-test files
// import.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case strings.HasPrefix(d.Name(), "."), d.Name() == "testdata", d.Name() == "node_modules",
				rel == "features", rel == "docs", rel == "scripts", rel == "bin", isModule(path):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if q, ok := strings.CutPrefix(p, module); ok {
				out[pkg] = append(out[pkg], q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportsGoDown: development.md's import list names every public
// package and every internal one that is more than a helper, and each
// imports only packages on lines below its own. The internal packages it
// does not name are helpers any package may import.
func TestImportsGoDown(t *testing.T) {
	t.Parallel()
	layers := importLayers(t)
	pkgs := packageImports(t)
	for pkg, imports := range pkgs {
		at, ok := layers[pkg]
		if !ok && (strings.HasPrefix(pkg, "internal/") || pkg == ".") {
			continue // a helper, or the module's package doc
		}
		if !ok {
			t.Errorf("development.md's import list lacks the package %s", pkg)
			continue
		}
		for _, imp := range imports {
			if l, ok := layers[imp]; ok && l <= at {
				t.Errorf("%s (line %d of the import list) imports %s (line %d): fix the list or the import", pkg, at+1, imp, l+1)
			}
		}
	}
	for p := range layers {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("development.md's import list names %s, which is not a package", p)
		}
	}
}

// isModule reports whether the folder at path is a Go module of its own
// (temporal/, clients/): not a package of this one.
func isModule(path string) bool {
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}
