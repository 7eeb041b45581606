package bdd

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v26"
	messages "github.com/cucumber/messages/go/v21"
	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// A Scenario Outline tagged @examples(file=cases.jsonl) takes its rows from
// a file beside the feature (JSONL, CSV or YAML) instead of an Examples
// table: the Gherkin stays as written. The file's rows become an Examples
// table of a copy of the feature that the runs use, the outline moved to
// its end so that every other scenario keeps its line; the reports give
// the outline its own line.

var (
	examplesTag  = regexp.MustCompile(`^@examples\(file=([^()\s]+)\)$`)
	placeholderR = regexp.MustCompile(`<([^<>]+)>`)
)

func isExamplesTag(t string) bool {
	return t == "@examples" || strings.HasPrefix(t, "@examples(")
}

// expansion is a feature file with its outlines' rows from files.
type expansion struct {
	contents []byte
	doc      *messages.GherkinDocument
	// moved maps a line of contents past the original's end to its line
	// in the original.
	moved map[int64]int64
	// rowNumbers are, per outline (by its line in contents), the number in
	// its file of each of its pickles' rows, in order.
	rowNumbers map[int64][]int
}

// line is a line of the expansion as a line of the original file.
func (x *expansion) line(l int64) int64 {
	if o, ok := x.moved[l]; ok {
		return o
	}
	return l
}

// maxExamplesRows caps the rows read from one file.
const maxExamplesRows = 100_000

// expandExamples returns the expansion of f when an outline of it has an
// @examples(file=…) tag, nil when none has; the errors name the feature
// file and line. sample > 0 keeps that many rows of each file, picked by
// seed.
func expandExamples(f *feature, sample int, seed uint64) (*expansion, []string) {
	if f.doc.Feature == nil {
		return nil, nil
	}
	children := f.doc.Feature.Children
	starts, hasRule, msgs := childStarts(f)
	lines := strings.SplitAfter(string(mustRead(f.name)), "\n")
	var outs []*outline
	for i, c := range children {
		if c.Scenario == nil {
			continue
		}
		end := int64(len(lines))
		if i+1 < len(children) {
			end = starts[i+1] - 1
		}
		o, omsgs := findOutline(f, c.Scenario, starts[i], end)
		msgs = append(msgs, omsgs...)
		if o == nil {
			continue
		}
		at := fmt.Sprintf("%s:%d: %s", f.name, o.tagLine, o.tag)
		switch {
		case hasRule:
			msgs = append(msgs, at+": @examples(file=…) is not supported in a feature with Rules")
			continue
		case len(c.Scenario.Examples) > 0:
			msgs = append(msgs, at+": the outline has an Examples table too: give its rows in one place")
			continue
		}
		if msg := o.fill(f, at, sample, seed); msg != "" {
			msgs = append(msgs, msg)
			continue
		}
		outs = append(outs, o)
	}
	if len(msgs) > 0 || len(outs) == 0 {
		return nil, msgs
	}
	return writeExpansion(f, lines, outs)
}

// outline is a scenario outline whose rows come from an @examples file.
type outline struct {
	sc         *messages.Scenario
	from, to   int64 // its block of lines, tags included
	file, tag  string
	tagLine    int64
	rows       [][]string
	columns    []string
	rowNumbers []int
}

// childStarts returns the first line of each child of the feature, tags
// included, whether it has Rules, and the errors of @examples tags inside
// them.
func childStarts(f *feature) (starts []int64, hasRule bool, msgs []string) {
	children := f.doc.Feature.Children
	starts = make([]int64, len(children))
	for i, c := range children {
		switch {
		case c.Scenario != nil:
			starts[i] = c.Scenario.Location.Line
			for _, t := range c.Scenario.Tags {
				starts[i] = min(starts[i], t.Location.Line)
			}
		case c.Background != nil:
			starts[i] = c.Background.Location.Line
		case c.Rule != nil:
			hasRule = true
			starts[i] = c.Rule.Location.Line
			for _, t := range c.Rule.Tags {
				starts[i] = min(starts[i], t.Location.Line)
			}
			for _, rc := range c.Rule.Children {
				if rc.Scenario != nil {
					for _, t := range rc.Scenario.Tags {
						if isExamplesTag(t.Name) {
							msgs = append(msgs, fmt.Sprintf("%s:%d: tag %s: @examples(file=…) is not supported on a scenario inside a Rule", f.name, t.Location.Line, t.Name))
						}
					}
				}
			}
		}
	}
	return starts, hasRule, msgs
}

// findOutline returns the outline of a scenario with an @examples tag
// (nil without one), its lines from..to, and the errors of its tags.
func findOutline(f *feature, sc *messages.Scenario, from, to int64) (*outline, []string) {
	var o *outline
	var msgs []string
	for _, t := range sc.Tags {
		if !isExamplesTag(t.Name) {
			continue
		}
		m := examplesTag.FindStringSubmatch(t.Name)
		if m == nil {
			msgs = append(msgs, fmt.Sprintf("%s:%d: tag %s: write @examples(file=FILE) with FILE a .jsonl, .csv or .yaml file beside the feature", f.name, t.Location.Line, t.Name))
			continue
		}
		if o != nil {
			msgs = append(msgs, fmt.Sprintf("%s:%d: tag %s: the scenario has two @examples tags", f.name, t.Location.Line, t.Name))
			continue
		}
		o = &outline{sc: sc, from: from, to: to, file: m[1], tag: t.Name, tagLine: t.Location.Line}
	}
	return o, msgs
}

// fill reads the outline's rows from its file, a sample of them when
// sample is set; the message, if any, says why it could not.
func (o *outline) fill(f *feature, at string, sample int, seed uint64) string {
	rows, header, err := readExamples(filepath.Join(filepath.Dir(f.name), filepath.FromSlash(o.file)))
	if err != nil {
		return fmt.Sprintf("%s: %v", at, err)
	}
	o.columns = placeholdersOf(o.sc)
	if len(o.columns) == 0 {
		o.columns = header
	}
	picked := make([]int, len(rows))
	for k := range picked {
		picked[k] = k
	}
	if sample > 0 && sample < len(rows) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		picked = r.Perm(len(rows))[:sample]
		slices.Sort(picked)
	}
	for _, k := range picked {
		var cells []string
		for _, col := range o.columns {
			v, ok := rows[k][col]
			if !ok {
				return fmt.Sprintf("%s: row %d of %s has no %q (the outline's <%s>)", at, k+1, o.file, col, col)
			}
			cells = append(cells, v)
		}
		o.rows = append(o.rows, cells)
		o.rowNumbers = append(o.rowNumbers, k+1)
	}
	if len(o.rows) == 0 {
		return fmt.Sprintf("%s: %s has no rows", at, o.file)
	}
	return ""
}

// writeExpansion blanks the outlines' lines where they stood (so that the
// lines after them stay where they are), and writes them again at the end,
// each with its rows as an Examples table.
func writeExpansion(f *feature, lines []string, outs []*outline) (*expansion, []string) {
	x := &expansion{moved: map[int64]int64{}, rowNumbers: map[int64][]int{}}
	var b bytes.Buffer
	blank := map[int64]bool{}
	for _, o := range outs {
		for l := o.from; l <= o.to; l++ {
			blank[l] = true
		}
	}
	for i, l := range lines {
		if blank[int64(i+1)] {
			b.WriteString("\n")
			continue
		}
		b.WriteString(l)
	}
	if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteString("\n")
	}
	next := int64(bytes.Count(b.Bytes(), []byte("\n"))) + 1
	for _, o := range outs {
		for l := o.from; l <= o.to && int(l) <= len(lines); l++ {
			if o.sc.Location.Line == l {
				x.rowNumbers[next] = o.rowNumbers
			}
			x.moved[next] = l
			next++
			b.WriteString(strings.TrimRight(lines[l-1], "\r\n") + "\n")
		}
		b.WriteString("    Examples:\n")
		b.WriteString("      |" + tableRow(o.columns) + "\n")
		next += 2
		for _, r := range o.rows {
			b.WriteString("      |" + tableRow(r) + "\n")
			next++
		}
	}
	x.contents = b.Bytes()
	doc, err := gherkin.ParseGherkinDocument(bytes.NewReader(x.contents), (&messages.Incrementing{}).NewId)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: the rows of its @examples files do not make a valid table: %v", f.name, err)}
	}
	x.doc = doc
	return x, nil
}

// mustRead is the feature file's bytes, which checkSyntax read already.
func mustRead(name string) []byte {
	data, _ := readcap.ReadFile(name, ensemble.MaxFileSize)
	return data
}

// tableRow is cells as a Gherkin table's row, each escaped: "| a | b |".
func tableRow(cells []string) string {
	var b strings.Builder
	esc := strings.NewReplacer(`\`, `\\`, "|", `\|`, "\n", `\n`, "\r", "")
	for _, c := range cells {
		b.WriteString(" " + esc.Replace(c) + " |")
	}
	return b.String()
}

// placeholdersOf are the <placeholders> of an outline, in the order they
// first appear: in its name, its steps, their doc strings and tables.
func placeholdersOf(sc *messages.Scenario) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		for _, m := range placeholderR.FindAllStringSubmatch(s, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
	}
	add(sc.Name)
	for _, st := range sc.Steps {
		add(st.Text)
		if st.DocString != nil {
			add(st.DocString.Content)
		}
		if st.DataTable != nil {
			for _, r := range st.DataTable.Rows {
				for _, c := range r.Cells {
					add(c.Value)
				}
			}
		}
	}
	return out
}

// readExamples reads the rows of an examples file by its extension: .jsonl
// (one JSON object a line), .csv (a header row, then rows) or .yaml/.yml
// (a list of mappings). A value that is not a string is written as JSON.
// The errors name the file, and the line of JSONL and CSV.
func readExamples(path string) (rows []map[string]string, header []string, err error) {
	data, err := readcap.ReadFile(path, ensemble.MaxFileSize)
	if err != nil {
		return nil, nil, err
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".jsonl", ".ndjson":
		return readJSONLExamples(path, data)
	case ".csv":
		return readCSVExamples(path, data)
	case ".yaml", ".yml":
		return readYAMLExamples(path, data)
	default:
		return nil, nil, fmt.Errorf("%s: the examples file must end in .jsonl, .csv, .yaml or .yml, not %q", path, ext)
	}
}

// exampleCell is a value of an examples file as a table cell: a string as
// it is, nil empty, anything else as JSON.
func exampleCell(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// addHeader appends to header the keys it does not have yet.
func addHeader(header, keys []string) []string {
	for _, k := range keys {
		if !slices.Contains(header, k) {
			header = append(header, k)
		}
	}
	return header
}

// readJSONLExamples reads rows of JSON objects, one a line.
func readJSONLExamples(path string, data []byte) (rows []map[string]string, header []string, err error) {
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || obj == nil {
			return nil, nil, fmt.Errorf("%s:%d: not a JSON object: %v", path, i+1, err)
		}
		keys, err := jsonKeys(line)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %v", path, i+1, err)
		}
		header = addHeader(header, keys)
		row := map[string]string{}
		for k, v := range obj {
			if n, ok := v.(json.Number); ok {
				row[k] = n.String()
			} else {
				row[k] = exampleCell(v)
			}
		}
		rows = append(rows, row)
		if len(rows) > maxExamplesRows {
			return nil, nil, fmt.Errorf("%s: more than %d rows", path, maxExamplesRows)
		}
	}
	return rows, header, nil
}

// readCSVExamples reads rows of CSV under a header row.
func readCSVExamples(path string, data []byte) (rows []map[string]string, header []string, err error) {
	r := csv.NewReader(bytes.NewReader(data))
	recs, err := r.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("%s: no header row", path)
	}
	header = recs[0]
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for j, v := range rec {
			row[header[j]] = v
		}
		rows = append(rows, row)
	}
	if len(rows) > maxExamplesRows {
		return nil, nil, fmt.Errorf("%s: more than %d rows", path, maxExamplesRows)
	}
	return rows, header, nil
}

// readYAMLExamples reads rows of a YAML list of mappings.
func readYAMLExamples(path string, data []byte) (rows []map[string]string, header []string, err error) {
	var list []yaml.Node
	if err := yaml.Unmarshal(data, &list); err != nil {
		return nil, nil, fmt.Errorf("%s: not a YAML list of mappings: %v", path, err)
	}
	if len(list) > maxExamplesRows {
		return nil, nil, fmt.Errorf("%s: more than %d rows", path, maxExamplesRows)
	}
	for i := range list {
		n := &list[i]
		if n.Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("%s:%d: row %d is not a mapping", path, n.Line, i+1)
		}
		row := map[string]string{}
		var keys []string
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, v := n.Content[j].Value, n.Content[j+1]
			keys = append(keys, k)
			if v.Kind == yaml.ScalarNode {
				row[k] = v.Value
				continue
			}
			var val any
			if err := v.Decode(&val); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %v", path, v.Line, err)
			}
			row[k] = exampleCell(val)
		}
		header = addHeader(header, keys)
		rows = append(rows, row)
	}
	return rows, header, nil
}

// jsonKeys are a JSON object's keys in the order written.
func jsonKeys(obj string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, fmt.Sprint(t))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
