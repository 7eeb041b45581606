package llmorc

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// goldenProjects are the testdata projects whose conversion is compared
// whole with testdata/golden/PROJECT: every ensemble file written, and the
// problems listed (problems.txt).
var goldenProjects = []struct {
	golden, dir string
	opts        Options
	invalid     bool // its files are expected not to validate
}{
	{"project", "project", Options{}, false},
	{"fields", "fields", Options{}, false},
	{"dispatch", "dispatch", Options{}, false},
	{"probes", "probes", Options{}, false},
	{"primitives", "primitives", Options{Package: "testdata/llm_orc_pkg/llm_orc"}, false},
	// no llm-orc installed: the primitives are listed
	{"primitives-missing", "primitives", Options{Python: "testdata/no-such-python3"}, true},
}

// The converted YAML of each testdata project is compared whole, so that a
// lost field or a changed value fails a test. go test -run TestGolden
// -update rewrites the goldens.
func TestGolden(t *testing.T) {
	for _, g := range goldenProjects {
		proj := g.golden
		t.Run(proj, func(t *testing.T) {
			out := t.TempDir()
			opts := g.opts
			opts.Dir, opts.Out = filepath.Join("testdata", g.dir), out
			res, err := Import(opts)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			var problems []string
			for _, p := range res.Problems {
				problems = append(problems, p.String()+"\n")
			}
			got["problems.txt"] = strings.Join(problems, "")
			for _, w := range res.Written {
				if !strings.HasSuffix(w, ".yaml") || strings.Contains(w, "/") {
					continue
				}
				b, err := os.ReadFile(filepath.Join(out, w))
				if err != nil {
					t.Fatal(err)
				}
				got[w] = string(b)
			}
			if !g.invalid {
				validate(t, out, res.Written)
			}
			dir := filepath.Join("testdata", "golden", proj)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, s := range got {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatalf("%v (go test -run TestGolden -update writes the goldens)", err)
			}
			seen := map[string]bool{}
			for _, e := range entries {
				seen[e.Name()] = true
				want, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				g, ok := got[e.Name()]
				if !ok {
					t.Errorf("%s: not written", e.Name())
					continue
				}
				if g != string(want) {
					t.Errorf("%s differs from %s:\n%s", e.Name(), filepath.Join(dir, e.Name()), diffLines(string(want), g))
				}
			}
			for name := range got {
				if !seen[name] {
					t.Errorf("%s: written, but no golden (go test -run TestGolden -update)", name)
				}
			}
		})
	}
}

// validate loads every ensemble file written, with the built-in kinds:
// each must be valid (profiles the project lacks aside, which the goldens'
// problems list).
func validate(t *testing.T, out string, written []string) {
	t.Helper()
	for _, w := range written {
		if !strings.HasSuffix(w, ".yaml") || strings.Contains(w, "/") {
			continue
		}
		opts := kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
		if _, err := ensemble.Load(filepath.Join(out, w), opts); err != nil && !strings.Contains(err.Error(), "model_profile") {
			t.Errorf("%s does not validate: %v", w, err)
		}
	}
}

// diffLines is a short line diff of want and got: the lines of each that
// the other lacks, in order.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	in := func(lines []string) map[string]int {
		m := map[string]int{}
		for _, l := range lines {
			m[l]++
		}
		return m
	}
	wm, gm := in(w), in(g)
	var b strings.Builder
	for _, l := range w {
		if gm[l] > 0 {
			gm[l]--
			continue
		}
		b.WriteString("- " + l + "\n")
	}
	for _, l := range g {
		if wm[l] > 0 {
			wm[l]--
			continue
		}
		b.WriteString("+ " + l + "\n")
	}
	return b.String()
}
