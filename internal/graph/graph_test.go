package graph_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	. "github.com/ensemble-run/ensemble/internal/graph"
	"github.com/ensemble-run/ensemble/kinds"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// ensembles are every example, and a file that needs escaping.
func ensembles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../../examples/*/ensemble.yaml")
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
	e, err := ensemble.Load(path, kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }}))
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
		t.Fatalf("%v (a new example? run go test ./internal/graph -update and check the drawing)", err)
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
	e := load(t, "../../examples/iterative-analysis/ensemble.yaml")
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
		`"user_clarification" -> "llm_analyzer" [style=dashed, constraint=false];`, // closes a cycle
		`"llm_analyzer" -> "user_clarification" [label="context.llm_analyzer?.needs_clarification == true\nmax_executions 3"];`,
		`shape=parallelogram`,
	} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("dot lacks %q", want)
		}
	}
}

func TestEscaping(t *testing.T) {
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
		if os.Getenv("ENSEMBLE_CI") != "" {
			t.Fatal("graphviz is not installed, and ENSEMBLE_CI is set: CI installs it (.ci/run)")
		}
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

// loadYAML loads an ensemble of ask agents from YAML written by the test.
func loadYAML(t *testing.T, yaml string) *ensemble.Ensemble {
	t.Helper()
	e, err := ensemble.LoadBytes("ensemble.yaml", []byte(yaml), kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }}))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return e
}

// chain is an ensemble of n+1 ask agents a0 <- a1 <- ... <- an: n edges.
func chain(t *testing.T, n int) *ensemble.Ensemble {
	var b strings.Builder
	b.WriteString("name: big\nagents:\n  - {name: a0, ask: q}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {name: a%d, ask: q, dependencies: [a%d]}\n", i, i-1)
	}
	return loadYAML(t, b.String())
}

// Mermaid draws at most 500 edges unless the diagram raises the limit.
func TestMermaidMaxEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		edges   int
		want    string // the line after the front matter
		warning bool
	}{
		{500, "flowchart TD", false},
		{501, `%%{init: {"maxEdges": 1000}}%%`, true},
		{1000, `%%{init: {"maxEdges": 2000}}%%`, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.edges), func(t *testing.T) {
			t.Parallel()
			e := chain(t, tt.edges)
			var m bytes.Buffer
			if err := Mermaid(&m, e); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(m.String(), "\n")
			if lines[0] != "---" || lines[2] != "---" || lines[3] != tt.want {
				t.Errorf("drawing opens with %q, want the front matter then %q", lines[:5], tt.want)
			}
			if got := strings.Count(m.String(), " --> "); got != tt.edges {
				t.Errorf("%d edges drawn", got)
			}
			w := Warnings(e, "mermaid")
			if tt.warning != (len(w) == 1) || tt.warning && !strings.Contains(w[0], fmt.Sprintf("%d edges", tt.edges)) {
				t.Errorf("warnings %q", w)
			}
			if w := Warnings(e, "dot"); w != nil {
				t.Errorf("dot has no edge limit, warnings %q", w)
			}
		})
	}
}

// A back edge closes a cycle, in a depth-first search in file order.
func TestBackEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, agents string
		want         []string // back edges, "from->to"
	}{
		{"chain", "[{name: a, ask: q}, {name: b, ask: q, dependencies: [a]}]", nil},
		{"diamond", "[{name: a, ask: q}, {name: b, ask: q, dependencies: [a]}, {name: c, ask: q, dependencies: [a]}, {name: d, ask: q, dependencies: [b, c]}]", nil},
		{"loop of two", "[{name: a, ask: q}, {name: b, ask: q, dependencies: [a, {agent_name: c, requires_all: false}]}, {name: c, ask: q, dependencies: [b]}]", []string{"c->b"}},
		{"cycle of three", "[{name: s, ask: q}, {name: x, ask: q, dependencies: [s, {agent_name: z, requires_all: false}]}, {name: y, ask: q, dependencies: [x]}, {name: z, ask: q, dependencies: [y]}]", []string{"z->x"}},
		{"the search starts from the first agent of the file", "[{name: z, ask: q, dependencies: [y]}, {name: y, ask: q, dependencies: [x]}, {name: x, ask: q, dependencies: [s, {agent_name: z, requires_all: false}]}, {name: s, ask: q}]", []string{"y->z"}},
		{"two cycles through one agent", "[{name: s, ask: q}, {name: a, ask: q, dependencies: [s, {agent_name: b, requires_all: false}, {agent_name: c, requires_all: false}]}, {name: b, ask: q, dependencies: [a]}, {name: c, ask: q, dependencies: [a]}]", []string{"b->a", "c->a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := loadYAML(t, "name: g\nagents: "+tt.agents+"\n")
			var b bytes.Buffer
			if err := DOT(&b, e); err != nil {
				t.Fatal(err)
			}
			// A back edge is drawn without constraining the layout.
			var got []string
			for _, line := range strings.Split(b.String(), "\n") {
				var from, to string
				if strings.Contains(line, "constraint=false") {
					if _, err := fmt.Sscanf(strings.TrimSpace(line), "%q -> %q", &from, &to); err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					got = append(got, from+"->"+to)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("back edges %v, want %v:\n%s", got, tt.want, b.String())
			}
		})
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, load(t, "testdata/tricky/ensemble.yaml"), "svg"); err == nil {
		t.Fatal("no error")
	}
}

// A select is on its edge's label; trigger: all on its agent's node.
func TestSelectAndTriggerAll(t *testing.T) {
	e, err := ensemble.LoadBytes("sel.yaml", []byte(`name: sel
agents:
  - {name: classifier, ask: q}
  - name: writer
    ask: q
    trigger: all
    dependencies: [{agent_name: classifier, select: "output.topics"}]
  - name: fallback
    ask: q
    dependencies: [writer, {agent_name: classifier, on: failure}]
`), kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }}))
	if err != nil {
		t.Fatal(err)
	}
	var m, d bytes.Buffer
	Mermaid(&m, e)
	DOT(&d, e)
	for _, want := range []string{`a1 -->|"select output.topics"| a2`, `writer<br/>ask<br/>trigger: all`,
		`a1 -->|"on failure"| a3`, "linkStyle 2 stroke:#c5221f"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m.String())
		}
	}
	if !strings.Contains(d.String(), `"classifier" -> "fallback" [label="on failure", color="#c5221f", fontcolor="#c5221f"]`) {
		t.Errorf("dot lacks the failure edge:\n%s", d.String())
	}
	if !strings.Contains(d.String(), `[label="select output.topics"]`) {
		t.Errorf("dot lacks the select:\n%s", d.String())
	}
}

// Labels are escaped for each format: Mermaid's entities for quotes, '#',
// backslashes, HTML and markdown-string characters, lines joined with
// <br/>; DOT's backslashes before quotes and backslashes, lines joined
// with \n.
func TestEscapeLabels(t *testing.T) {
	t.Parallel()
	e := loadYAML(t, `name: g
agents:
  - {name: a, ask: q}
  - name: b
    ask: q
    dependencies:
      - agent_name: a
        condition: |
          context.a.x != "a \"b\" #1 <c> & d|e `+"`f`"+` \\d"
        max_executions: 2
`)
	var m, d bytes.Buffer
	if err := Mermaid(&m, e); err != nil {
		t.Fatal(err)
	}
	if err := DOT(&d, e); err != nil {
		t.Fatal(err)
	}
	if want := `#quot;a #92;#quot;b#92;#quot; #35;1 #lt;c#gt; #amp; d#124;e #96;f#96; #92;#92;d#quot;<br/>max_executions 2`; !strings.Contains(m.String(), want) {
		t.Errorf("mermaid: no %s in\n%s", want, m.String())
	}
	if want := `\"a \\\"b\\\" #1 <c> & d|e ` + "`f`" + ` \\\\d\"\nmax_executions 2"`; !strings.Contains(d.String(), want) {
		t.Errorf("dot: no %s in\n%s", want, d.String())
	}
}
