package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The one rule for the commands the messages suggest (docs/cli.md, "Command
// lines in messages"): a whole command line to type starts with the
// program name as the user runs this binary (stdio.program, programName);
// a message that cannot know it (a library's) names the command without a
// program ("resume --answer", "run --state"). So no string of the code
// starts a command line with a bare "ensemble", which is not on the PATH
// after make build; --help, which describes the program, names it
// ensemble (examples.go).
func TestNoMessageSuggestsABareEnsemble(t *testing.T) {
	t.Parallel()
	bare := regexp.MustCompile(`(^|[^\w/.-])ensemble (run|resume|batch|state|validate|graph|schema|test|init|mcp|completion|worker|answer)\b`)
	noun := regexp.MustCompile(`ensemble state (file|database)`) // "not an ensemble state file"
	allowed := map[string]bool{"cmd/ensemble/examples.go": true}
	root := "../.."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "temporal" || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "bin" {
				return filepath.SkipDir // temporal/ is a module of its own (its tests)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || allowed[filepath.ToSlash(rel)] {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && bare.MatchString(noun.ReplaceAllString(lit.Value, "")) {
				t.Errorf("%s: %s suggests a bare ensemble command", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
