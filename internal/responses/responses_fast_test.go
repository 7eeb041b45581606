package responses

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sameAsYAML checks that when the fast parser accepts a file, the YAML
// parser reads the same responses from it, positions and source lines
// included.
func sameAsYAML(t *testing.T, doc string) bool {
	t.Helper()
	data := []byte(doc)
	fast, ferr, ok := fastParse("r.yaml", data, newSourceLines(data), true)
	if !ok {
		return false
	}
	slow, err := parseYAML("r.yaml", data, newSourceLines(data), ferr != nil)
	if ferr != nil || err != nil {
		if fmt.Sprint(ferr) != fmt.Sprint(err) {
			t.Errorf("fast parser's error %v, YAML's %v:\n%s", ferr, err, doc)
		}
	}
	if err != nil && ferr == nil {
		t.Errorf("fast parser accepts what YAML refuses (%v):\n%s", err, doc)
		return true
	}
	if !reflect.DeepEqual(fast.order, slow.order) {
		t.Errorf("agents %q, YAML %q:\n%s", fast.order, slow.order, doc)
		return true
	}
	for _, name := range slow.order {
		f, s := fast.entries[name], slow.entries[name]
		if f.Agent != s.Agent || f.File != s.File || f.Pos != s.Pos || f.src != s.src || s.Simulate != nil || !reflect.DeepEqual(f.Lines, s.Lines) ||
			len(f.Values) != len(s.Values) || !reflect.DeepEqual(append([]any{}, f.Values...), append([]any{}, s.Values...)) {
			t.Errorf("agent %q: fast %#v, YAML %#v:\n%s", name, f, s, doc)
		}
	}
	return true
}

func TestFastResponsesParserAgreesWithYAML(t *testing.T) {
	t.Parallel()
	accepted := []string{
		"",
		"# nothing\n\n",
		"start: [go]\nping:\n  - {n: 1, pad: \"\"}\n  - {n: 2, pad: \"xx\"}\n",
		"a:\n- 1\n- -2\n- 0\n- -0\n- 1.5\n- -0.0\n- 123456789012345\n- 0.25\nb: []\n",
		"a:\n  - true\n  - false\n  - null\n  - go\n  - hello world\n  - y\n  - no\n  - n\n  - On\n  - \"\"\n  - ''\n",
		"a:\n  - \"q\\\"uote \\\\ \\n \\t \\r \\b \\f \\u00e9 \\u0000\"\n  - 'it''s'\n  - \"é ü 日本\"\n",
		"a:\n  - {}\n  - []\n  - {a: {b: [1, [2, {c: d}]]}, \"e f\": [x y, 'z']}\n  - [ 1 , 2 ]\n",
		"a: # comment\n  - x # comment\n  # between\n  - {k: v}   # c\n\nb: [1, 2]   # c\n",
		"a_b-c:\n    - x\nd:\n - y\n",
		"a: [x]\nb:\n  - y\na: [z]\nb: [w]\n", // listed twice: the same errors
	}
	for _, doc := range accepted {
		if !sameAsYAML(t, doc) {
			t.Errorf("fast parser refuses:\n%s", doc)
		}
	}
	// Everything else goes to the YAML parser: the fast parser must refuse
	// (or read it the same way).
	refused := []string{
		"a:\n\t- x\n", "a:\r\n  - x\r\n", "\xef\xbb\xbfa: [x]\n", "a:\n  - x\x01\n", "a:\n  - \"\\/\"\n",
		"a:\n  - \"\\x41\"\n", "a:\n  - \"\\ud800\"\n", "a:\n  - \"x\n    y\"\n", "a:\n  - &x 1\n  - *x\n",
		"a:\n  - !!str 1\n", "a:\n  - |\n    x\n", "a:\n  - {a: 1,\n     b: 2}\n", "a:\n  - {a: 1, a: 2}\n",
		"a:\n  - x\na:\n  - y\n", "a:\n", "a: x\n", "a:\n  - a: 1\n", "a:\n  - x\n    - y\n", "a:\n  - x\n   - y\n",
		"a:\n  - 1e3\n", "a:\n  - 0x10\n", "a:\n  - 010\n", "a:\n  - .5\n", "a:\n  - 1.\n", "a:\n  - 1234567890123456\n",
		"a:\n  - True\n", "a:\n  - NULL\n", "a:\n  - ~\n", "a:\n  - .inf\n", "a:\n  - 2001-12-14\n", "a:\n  - 12:30\n",
		"a:\n  - x  y\n", "a:\n  - x#y\n", "a:\n  - [a, b,]\n", "a:\n  - {a:1}\n", "a:\n  - {\"a\":1}\n", "a:\n  -x\n",
		"a:\n  -\n", "---\na: [x]\n", "a: [x]\n...\n", "%YAML 1.2\n---\na: [x]\n", "{a: [x]}\n", "- x\n",
		"true:\n  - x\n", "1:\n  - x\n", "a:\n  - {<<: {b: 1}}\n", "a:\n  - x\xc2\x85y\n", "a:\n  - \"\xef\xbb\xbf\"\n",
		"a:\n  - \"\\u00e\"\n", "a:\n  - 'x\n", "a:\n  - \"x\n", "a:\n  - [x\n", "a:\n  - x]\n", "a:\n  - \"a\": 1\n",
		"a: [x] y\n", "a: {simulate: {model_profile: m, prompt: p}}\n", "a:\n  - x\n  y\n", "a:\n  - {? a : 1}\n",
		"a:\n  - -\n", "a:\n  - - x\n", "a:\n  - [-x]\n", "a:\n  - a -b\n", "a:\n  - \xff\n", "a:\n  - x\n\x7f\n",
	}
	for _, doc := range refused {
		if sameAsYAML(t, doc) {
			t.Logf("fast parser reads it as YAML does:\n%s", doc)
		}
	}
}

// Random files assembled from pieces the fast parser knows and pieces it
// does not: whatever it accepts, YAML reads the same way.
func TestFastResponsesParserRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	scalars := []string{"1", "-1", "0", "-0", "1.50", "-0.0", "007", "1e2", "x", "go on", "y", "null", "Null", "true",
		"false", "\"s\"", "\"a\\\"b\"", "\"\\u00e9\"", "\"\\/\"", "''", "'a''b'", "\"é\"", "~", ".5", "a:b", "a: b", "&a x", "*a",
		"x #c", "\"x\" #c", "[]", "{}", "-", "- x", "a,b", "\"\\t\"", "'\\t'", "123456789012345", "1234567890123456"}
	var value func(depth int) string
	value = func(depth int) string {
		switch k := rng.IntN(6); {
		case k < 3 || depth > 3:
			return scalars[rng.IntN(len(scalars))]
		case k == 3:
			var items []string
			for range rng.IntN(4) {
				items = append(items, value(depth+1))
			}
			return "[" + strings.Join(items, ", ") + "]"
		default:
			var items []string
			for i := range rng.IntN(4) {
				key := []string{"k", "n", "\"q k\"", "y", "true", "k"}[rng.IntN(6)]
				items = append(items, fmt.Sprintf("%s%d: %s", key, i%2, value(depth+1)))
			}
			return "{" + strings.Join(items, ", ") + "}"
		}
	}
	accepted := 0
	for range 3000 {
		var b strings.Builder
		for a := range 1 + rng.IntN(3) {
			fmt.Fprintf(&b, "agent%d:", a%3)
			if rng.IntN(5) == 0 {
				fmt.Fprintf(&b, " [%s, %s]\n", value(1), value(1))
				continue
			}
			b.WriteString("\n")
			indent := strings.Repeat(" ", rng.IntN(3))
			for range 1 + rng.IntN(3) {
				switch rng.IntN(10) {
				case 0:
					b.WriteString("  # comment\n")
				case 1:
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "%s- %s\n", indent, value(0))
			}
		}
		if sameAsYAML(t, b.String()) {
			accepted++
		}
	}
	if accepted < 300 {
		t.Errorf("the fast parser accepted only %d of 3000 random files", accepted)
	}
}
