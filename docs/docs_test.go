// Package docs_test keeps the documentation honest: snippets that claim to
// be a file are that file, links lead somewhere, ensemble snippets load with
// the real loader, every built-in Gherkin step is documented, and the docs
// never point outside the repository.
package docs_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/bdd"
	"github.com/ensemble-run/ensemble/kinds"
)

// root is the repository's root, seen from this package's folder.
const root = ".."

// markdownFiles are the user documentation: README.md and docs/*.md.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 7 {
		t.Fatalf("docs/*.md: found %d files, want the seven reference pages", len(files))
	}
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

// block is a fenced code block of a Markdown file.
type block struct {
	file string // the Markdown file
	line int    // 1-based line of the opening fence
	lang string // the info string's first word
	body string // the lines between the fences, each ending in "\n"
	// claims is the path (from the repository's root) named by a
	// `<!-- file: PATH -->` comment on the line before the fence.
	claims string
}

var fileMarker = regexp.MustCompile(`^<!-- file: (\S+) -->$`)

// parseMarkdown returns the fenced blocks of a Markdown text and its prose:
// the text outside the blocks, where links live.
func parseMarkdown(t *testing.T, file string, data []byte) (blocks []block, prose string) {
	t.Helper()
	var out strings.Builder
	var cur *block
	var fence, prev string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == fence:
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		case strings.HasPrefix(strings.TrimLeft(line, " "), "```"):
			trimmed := strings.TrimLeft(line, " ")
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			info := strings.Fields(strings.TrimPrefix(trimmed, fence))
			cur = &block{file: file, line: n}
			if len(info) > 0 {
				cur.lang = info[0]
			}
			if m := fileMarker.FindStringSubmatch(prev); m != nil {
				cur.claims = m[1]
			}
		default:
			if fileMarker.MatchString(prev) {
				t.Errorf("%s:%d: a file marker must be followed by a fenced block", file, n-1)
			}
			out.WriteString(line + "\n")
		}
		prev = line
	}
	if cur != nil {
		t.Errorf("%s:%d: the fenced block never ends", file, cur.line)
	}
	return blocks, out.String()
}

func readMarkdown(t *testing.T) (blocks []block, prose map[string]string) {
	t.Helper()
	prose = map[string]string{}
	for _, file := range markdownFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b, p := parseMarkdown(t, file, data)
		blocks = append(blocks, b...)
		prose[file] = p
	}
	return blocks, prose
}

// A snippet that says it is a file must be that file, byte for byte.
func TestSnippetsAreTheFilesTheyClaim(t *testing.T) {
	t.Parallel()
	blocks, _ := readMarkdown(t)
	claimed := 0
	for _, b := range blocks {
		if b.claims == "" {
			continue
		}
		claimed++
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(b.claims)))
		if err != nil {
			t.Errorf("%s:%d: the snippet claims to be %s: %v", b.file, b.line, b.claims, err)
			continue
		}
		if strings.TrimRight(string(data), "\n") != strings.TrimRight(b.body, "\n") {
			t.Errorf("%s:%d: the snippet differs from %s; copy the file again", b.file, b.line, b.claims)
		}
	}
	if claimed == 0 {
		t.Error("no snippet is marked <!-- file: PATH -->; the README shows real example files")
	}
}

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	// A GitHub heading anchor keeps letters, digits, '-', '_' and spaces
	// (which become '-'), lower-cased.
	anchorDrop = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

func anchorOf(title string) string {
	title = strings.NewReplacer("`", "", "*", "").Replace(title)
	return strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(title), ""), " ", "-")
}

// anchors lists the heading anchors of a Markdown file, with GitHub's
// suffixes for repeated headings.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, prose := parseMarkdown(t, file, data)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(prose, -1) {
		a := anchorOf(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// Every relative link of the docs leads to a file of the repository, and to
// a heading of it when it names an anchor.
func TestLinksResolve(t *testing.T) {
	t.Parallel()
	_, prose := readMarkdown(t)
	for file, text := range prose {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			rel, err := filepath.Rel(root, dest)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %q leaves the repository", file, target)
				continue
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %q: %v", file, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", file, target, rel, anchor)
			}
		}
	}
}

// The repository stands alone: its docs and examples cite no document
// outside it, and no tracker's numbered issues.
var outsideReferences = []*regexp.Regexp{
	regexp.MustCompile(`\.\./shared`),
	regexp.MustCompile(`SPEC`),
	regexp.MustCompile(`ADR-`),
	regexp.MustCompile(`(?i)\bissues? +#?\d`),
	regexp.MustCompile(`(^|[\s(\[])#\d+\b`),
}

func TestNoReferencesOutsideTheRepository(t *testing.T) {
	t.Parallel()
	self, err := filepath.Abs("docs_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"README.md", "docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if abs, _ := filepath.Abs(path); abs == self { // it names the patterns
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.IndexByte(data, 0) >= 0 { // a binary file: the screenshots of ui.md
				return nil
			}
			for n, line := range strings.Split(string(data), "\n") {
				for _, re := range outsideReferences {
					if re.MatchString(line) {
						t.Errorf("%s:%d: %q refers outside the repository: %s", path, n+1, re, strings.TrimSpace(line))
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

var topLevelAgents = regexp.MustCompile(`(?m)^agents:`)

// Every complete ensemble in the docs (a YAML block with a top-level
// agents: key) loads with the project's loader, so the docs cannot drift
// from the format. A block that claims a file is loaded as that file;
// others get stand-in scripts in a temporary folder.
func TestEnsembleSnippetsLoad(t *testing.T) {
	t.Parallel()
	blocks, _ := readMarkdown(t)
	env := func(name string) (string, bool) { return "http://localhost:8080/v1", true }
	loaded := 0
	for _, b := range blocks {
		if (b.lang != "yaml" && b.lang != "yml") || !topLevelAgents.MatchString(b.body) {
			continue
		}
		loaded++
		path := filepath.Join(root, filepath.FromSlash(b.claims))
		if b.claims == "" {
			path = withScripts(t, b)
		}
		if _, err := ensemble.LoadBytes(path, []byte(b.body), kinds.Builtin().Load(ensemble.LoadOptions{LookupEnv: env})); err != nil {
			t.Errorf("%s:%d: the ensemble snippet does not load:\n%v", b.file, b.line, err)
		}
	}
	if loaded < 3 {
		t.Errorf("found %d ensemble snippets to load, want at least 3", loaded)
	}
}

// withScripts makes a folder holding stand-ins for the scripts a snippet
// names, and returns the path the snippet is loaded as.
func withScripts(t *testing.T, b block) string {
	t.Helper()
	var doc struct {
		Agents []struct{ Script string }
		Tools  []struct{ Script string }
	}
	if err := yaml.Unmarshal([]byte(b.body), &doc); err != nil {
		t.Errorf("%s:%d: %v", b.file, b.line, err)
	}
	dir := t.TempDir()
	var scripts []string
	for _, a := range doc.Agents {
		scripts = append(scripts, a.Script)
	}
	for _, tool := range doc.Tools {
		scripts = append(scripts, tool.Script)
	}
	for _, s := range scripts {
		if s == "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(s))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "ensemble.yaml")
}

// docs/testing.md documents every built-in step with its exact phrasing.
func TestEveryStepIsDocumented(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(root, "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range bdd.Steps() {
		if !bytes.Contains(data, []byte("| `"+d.Example+"` |")) {
			t.Errorf("docs/testing.md does not document the step %s", d.Example)
		}
	}
}

// Code comments cite these sections; renaming a heading must not orphan them.
var citedSections = []string{
	"format.md#a-complete-file", "format.md#agents", "format.md#validation",
	"format.md#model-profiles", "format.md#environment-variables", "format.md#tools",
	"semantics.md#state", "semantics.md#outputs", "semantics.md#when-an-agent-is-ready",
	"semantics.md#turns", "semantics.md#end-of-a-run-and-exit-codes", "semantics.md#durable-runs",
	"semantics.md#conditions", "semantics.md#agent-requests", "semantics.md#limits",
	"semantics.md#what-an-agent-receives",
	"semantics.md#script-agents", "semantics.md#ask-agents", "semantics.md#injected-responses",
	"llm.md#providers", "llm.md#messages-and-memory", "llm.md#structured-output", "llm.md#tools",
	"llm.md#stop-reasons-and-usage", "llm.md#context-window", "llm.md#simulated-users",
	"cli.md#the-result", "cli.md#events", "cli.md#exit-codes", "cli.md#ensemble-run",
	"testing.md#the-responses-file", "testing.md#ensemble-test", "testing.md#the-built-in-steps",
}

func TestCitedSectionsExist(t *testing.T) {
	t.Parallel()
	for _, s := range citedSections {
		file, anchor, _ := strings.Cut(s, "#")
		if !anchors(t, filepath.Join(root, "docs", file))[anchor] {
			t.Errorf("docs/%s has no heading with the anchor #%s, which code comments cite", file, anchor)
		}
	}
}

// The README's short list of exit codes names every code of cli.md's table.
func TestReadmeNamesEveryExitCode(t *testing.T) {
	t.Parallel()
	cli, err := os.ReadFile(filepath.Join(root, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(cli), "### Exit codes\n")
	if !ok {
		t.Fatal("docs/cli.md has no '### Exit codes' section")
	}
	table, _, _ = strings.Cut(table, "\n#")
	codes := regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(table, -1)
	if len(codes) < 5 {
		t.Fatalf("docs/cli.md's exit code table: found %d codes", len(codes))
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, line, ok := strings.Cut(string(readme), "Exit codes: ")
	if !ok {
		t.Fatal("README.md has no 'Exit codes: ' line")
	}
	line, _, _ = strings.Cut(line, "\n\n")
	for _, c := range codes {
		if !regexp.MustCompile(`(^|[\s,])` + c[1] + ` `).MatchString(line) {
			t.Errorf("README.md's exit codes do not name %s, which docs/cli.md's table has", c[1])
		}
	}
}

// The completion reasons a run can end with are each in semantics.md's table
// and in cli.md's description of the result's completion_reason, so that a
// CI script reading the JSON result finds every value it may meet.
func TestEveryCompletionReasonIsDocumented(t *testing.T) {
	t.Parallel()
	reasons := []string{engine.Completed, engine.ExpectationFailed, engine.MaxTotalTurns, engine.Timeout,
		engine.BudgetExceeded, engine.Cancelled, engine.AwaitingInput, engine.StrictWarning}
	sem, err := os.ReadFile(filepath.Join(root, "docs", "semantics.md"))
	if err != nil {
		t.Fatal(err)
	}
	cli, err := os.ReadFile(filepath.Join(root, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `completion_reason` \\|.*$").Find(cli)
	if row == nil {
		t.Fatal("docs/cli.md has no row for the result's completion_reason")
	}
	for _, r := range reasons {
		if !regexp.MustCompile("(?m)^\\| `" + r + "` \\|").Match(sem) {
			t.Errorf("docs/semantics.md's table of completion reasons has no row for %s", r)
		}
		if !bytes.Contains(row, []byte("`"+r+"`")) {
			t.Errorf("docs/cli.md's completion_reason row does not name %s:\n%s", r, row)
		}
	}
}
