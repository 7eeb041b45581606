package bdd

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
)

// blockKeywords are the Gherkin keywords that end with a colon.
var blockKeywords = []string{"Feature", "Background", "Scenario", "Scenario Outline", "Scenario Template",
	"Example", "Examples", "Scenarios", "Rule"}

// keywordHead matches a line that starts with one or two words and a colon.
var keywordHead = regexp.MustCompile(`^\s*([A-Za-z]+(?: [A-Za-z]+)?):`)

// misspeltKeyword is the block keyword that the line's "Word:" is a
// misspelling of ("Scenaro:" for "Scenario:"), or "". strict, for free
// text, asks only about words of 6 letters or more that are not a
// keyword's plural, so that prose ("Note:", "Features:") is left alone.
func misspeltKeyword(line string, strict bool) string {
	m := keywordHead.FindStringSubmatch(line)
	if m == nil || slices.Contains(blockKeywords, m[1]) {
		return ""
	}
	head := m[1]
	if strict && (len(head) < 6 || strings.Contains(head, " ") || slices.Contains(blockKeywords, strings.TrimSuffix(head, "s"))) {
		return ""
	}
	sug := ensemble.Suggest(head, blockKeywords)
	if sug == "" {
		return ""
	}
	_, meant, _ := strings.Cut(sug, `"`)
	return strings.TrimSuffix(meant, `"?`)
}

// parserHint is the hint for a message of the Gherkin parser about a line it
// did not expect (`..., got 'Feture: …'`) that starts with a misspelt
// keyword, or "".
func parserHint(msg string) string {
	_, got, ok := strings.Cut(msg, ", got '")
	if !ok {
		return ""
	}
	if kw := misspeltKeyword(got, false); kw != "" {
		return fmt.Sprintf(" (did you mean %q?)", kw+":")
	}
	return ""
}

// misspeltInText finds the lines of the descriptions descs (free text,
// which Gherkin does not check) that start with a misspelt keyword: the
// lines after "Backgroud:" are read as text, and the steps in them never
// run.
func misspeltInText(name string, lines []string, descs []string) []string {
	var msgs []string
	for _, d := range descs {
		for _, l := range strings.Split(d, "\n") {
			l = strings.TrimSpace(l)
			kw := misspeltKeyword(l, true)
			if kw == "" {
				continue
			}
			n := slices.IndexFunc(lines, func(s string) bool { return strings.TrimSpace(s) == l })
			head, _, _ := strings.Cut(l, ":")
			msgs = append(msgs, fmt.Sprintf("%s:%d: '%s:' is not a Gherkin keyword (did you mean '%s:'?): the lines under it are read as free text, and their steps would not run", name, n+1, head, kw))
		}
	}
	return msgs
}
