package tokencheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestEqual(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got, want string
		equal     bool
	}{
		{"s3cret-token", "s3cret-token", true},
		{"s3cret-tokeN", "s3cret-token", false},
		{"s3cret", "s3cret-token", false}, // a prefix
		{"s3cret-token-and-more", "s3cret-token", false},
		{"", "s3cret-token", false},
		{"", "", true},
	} {
		if got := Equal(tc.got, tc.want); got != tc.equal {
			t.Errorf("Equal(%q, %q) = %v", tc.got, tc.want, got)
		}
	}
}

// TestNoPlainCompareOfSecrets: outside this package, the module compares
// no strings with subtle.ConstantTimeCompare (a call on []byte(...)
// conversions): that leaks the length of the secret through timing.
func TestNoPlainCompareOfSecrets(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "tokencheck") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isSel(call.Fun, "subtle", "ConstantTimeCompare") {
				return true
			}
			for _, arg := range call.Args {
				if conv, ok := arg.(*ast.CallExpr); ok && isByteSlice(conv.Fun) {
					t.Errorf("%s: subtle.ConstantTimeCompare of a string: use tokencheck.Equal", path)
					break
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isSel(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == name
}

// isByteSlice reports whether e is the type []byte.
func isByteSlice(e ast.Expr) bool {
	at, ok := e.(*ast.ArrayType)
	if !ok || at.Len != nil {
		return false
	}
	id, ok := at.Elt.(*ast.Ident)
	return ok && id.Name == "byte"
}
