package graph

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// ensembles are every example, and a file that needs escaping.
func ensembles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../examples/*/ensemble.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	out := map[string]string{"tricky": "testdata/tricky/ensemble.yaml"}
	for _, p := range paths {
		out[filepath.Base(filepath.Dir(p))] = p
	}
	return out
}

func load(t *testing.T, path string) *ensemble.Ensemble {
	t.Helper()
	e, err := ensemble.Load(path, ensemble.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (a new example? run go test ./graph -update and check the drawing)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestGolden(t *testing.T) {
	for name, path := range ensembles(t) {
		e := load(t, path)
		for _, f := range []struct{ format, ext string }{{"mermaid", "mmd"}, {"dot", "dot"}} {
			t.Run(name+"."+f.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := Write(&b, e, f.format); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", name+"."+f.ext), b.String())
			})
		}
	}
}

func TestEdgesAndKinds(t *testing.T) {
	e := load(t, "../examples/iterative-analysis/ensemble.yaml")
	var m, d bytes.Buffer
	Mermaid(&m, e)
	DOT(&d, e)
	for _, want := range []string{
		"flowchart TD",
		`a1["data_extractor<br/>script: scripts/extract.py<br/>state_key: extracted_data"]`,
		`a2("llm_analyzer<br/>llm: efficient (gpt-4o-mini)<br/>max_turns 3, max_agent_executions 3")`,
		`a3[/"user_clarification<br/>ask<br/>max_turns 3"/]`,
		"a1 --> a2",  // required
		"a3 -.-> a2", // optional
		`a2 -->|"context.llm_analyzer?.needs_clarification == true<br/>max_executions 3"| a3`,
		"class a1 script", "class a2,a4 llm", "class a3 ask",
	} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("mermaid lacks %q", want)
		}
	}
	for _, want := range []string{
		`"data_extractor" -> "llm_analyzer";`,
		`"user_clarification" -> "llm_analyzer" [style=dashed];`,
		`"llm_analyzer" -> "user_clarification" [label="context.llm_analyzer?.needs_clarification == true\nmax_executions 3"];`,
		`shape=parallelogram`,
	} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("dot lacks %q", want)
		}
	}
}

func TestEscaping(t *testing.T) {
	if got := mermaidText([]string{`a "b" #1 <c> & d|e ` + "`f`", "line\ttwo"}); got != `a #quot;b#quot; #35;1 #lt;c#gt; #amp; d#124;e #96;f#96;<br/>line two` {
		t.Errorf("mermaid: %s", got)
	}
	if got := dotLabel([]string{`say "hi" \d`, "two\nlines"}); got != `"say \"hi\" \\d\ntwo lines"` {
		t.Errorf("dot: %s", got)
	}
	var m bytes.Buffer
	Mermaid(&m, load(t, "testdata/tricky/ensemble.yaml"))
	for i, line := range strings.Split(m.String(), "\n") {
		if i < 4 {
			continue // front matter
		}
		// Inside a quoted label nothing may end the quote or the label
		// early, or be read as HTML or markdown.
		rest := strings.NewReplacer("<br/>", "", `|"`, `"`, `"|`, `"`, "-->", "", "-.->", "").Replace(line)
		if strings.Count(rest, `"`)%2 != 0 || strings.ContainsAny(rest, "<>&`|\\") {
			t.Errorf("line %d not escaped: %s", i, line)
		}
	}
}

// TestDOTParses runs Graphviz on every drawing, when it is installed.
func TestDOTParses(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("graphviz is not installed")
	}
	for name, path := range ensembles(t) {
		var b bytes.Buffer
		DOT(&b, load(t, path))
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = &b
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: dot: %v\n%s", name, err, out)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, load(t, "testdata/tricky/ensemble.yaml"), "svg"); err == nil {
		t.Fatal("no error")
	}
}
