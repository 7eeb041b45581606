package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The size limits of the project's Go code (test files aside): a file or a
// function over them must be named in development.md's "Long on purpose"
// list, with the reason it must be long.
const (
	maxFileLines = 600
	maxFuncLines = 100
)

// longOnPurpose reads development.md's list: each item starts with a
// backquoted path from the repository's root, followed for a function by its
// backquoted name (Type.Method for a method), then a reason.
func longOnPurpose(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- long on purpose -->\n")
	if !ok {
		t.Fatal("development.md has no long-on-purpose list (after <!-- long on purpose -->)")
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(rest, "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		if !strings.HasPrefix(line, "- `") {
			continue // an item's continuation line
		}
		parts := strings.Split(line, "`")
		key := parts[1]
		if len(parts) > 4 && strings.TrimSpace(parts[2]) == "" {
			key += ":" + parts[3]
		}
		reason := strings.TrimSpace(parts[len(parts)-1])
		if reason == "" || reason == ":" {
			t.Errorf("development.md: %s is long on purpose, but the list gives no reason", key)
		}
		listed[key] = true
	}
	return listed
}

// longCode returns the non-test Go files over maxFileLines ("path") and the
// functions over maxFuncLines ("path:Name", "path:Type.Method"), each with
// its length.
func longCode(t *testing.T) map[string]int {
	t.Helper()
	long := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			long[rel] = n
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				long[rel+":"+funcName(fn)] = n
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return long
}

// funcName is a function's name, or Type.Method for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch generic := typ.(type) {
	case *ast.IndexExpr:
		typ = generic.X
	case *ast.IndexListExpr:
		typ = generic.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// TestSizes keeps files under 600 lines and functions under 100, unless
// development.md says why one must be longer; an entry of the list that is
// no longer over its limit must go.
func TestSizes(t *testing.T) {
	t.Parallel()
	listed := longOnPurpose(t)
	long := longCode(t)
	var keys []string
	for k := range long {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !listed[k] {
			limit := maxFileLines
			if strings.Contains(k, ":") {
				limit = maxFuncLines
			}
			t.Errorf("%s is %d lines (over %d): split it, or name it with its reason in development.md's Long on purpose list", k, long[k], limit)
		}
	}
	for k := range listed {
		if _, ok := long[k]; !ok {
			t.Errorf("development.md lists %s as long on purpose, but it is within its limit (or gone): remove it from the list", k)
		}
	}
}
