package script

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/runners"
)

// TestParseStdout: one rule for log lines before or after JSON. Exactly one
// JSON value is the output; a JSON object or array mixed with other text,
// in either order, fails naming the line of the other text; JSON that is
// broken fails; anything else is a string.
func TestParseStdout(t *testing.T) {
	t.Parallel()
	const mixed = "stdout mixes JSON with other text (line %d); print logs to stderr"
	mixedAt := func(n int) string { return fmt.Sprintf(mixed, n) }
	pretty := "{\n  \"rows\": [\n    {\"a\": 1},\n    [2]\n  ]\n}"
	tests := []struct {
		name, stdout string
		want         any
		wantErr      string // the whole message, or a prefix ending in ":"
	}{
		{"empty", "", "", ""},
		{"blank lines", "\n \t\r\n", "", ""},
		{"object", `{"a":1}`, map[string]any{"a": 1.0}, ""},
		{"object padded", "\n\n  {\"a\":1}  \r\n", map[string]any{"a": 1.0}, ""},
		{"pretty object", pretty, map[string]any{"rows": []any{map[string]any{"a": 1.0}, []any{2.0}}}, ""},
		{"array", "[1, 2]\n", []any{1.0, 2.0}, ""},
		{"number", "42\n", 42.0, ""},
		{"JSON string", `"hi"`, "hi", ""},
		{"true", "true", true, ""},
		{"text", "hello", "hello", ""},
		{"text trimmed", "  hello world \n", "hello world", ""},
		{"log line", "[INFO] done", "[INFO] done", ""},
		{"progress", "[1/3] done", "[1/3] done", ""},
		{"two log lines", "[INFO] start\n[INFO] done\n", "[INFO] start\n[INFO] done", ""},
		{"brace inside text", `not json {"a": 1}`, `not json {"a": 1}`, ""},
		{"number then text", "42\ndone", "42\ndone", ""},
		{"log then object", "[INFO] start\n{\"a\":1}", nil, mixedAt(1)},
		{"object then log", "{\"a\":1}\ndone", nil, mixedAt(2)},
		{"object then log after blank lines", "{\"a\":1}\n\n\ndone\n", nil, mixedAt(4)},
		{"blank lines, log, object", "\n\nstarting\n{\"a\":1}\n", nil, mixedAt(3)},
		{"log then pretty object", "loading…\n" + pretty + "\n", nil, mixedAt(1)},
		{"logs then pretty object", "[INFO] a\n[INFO] b\n" + pretty, nil, mixedAt(1)},
		{"log then array", "[INFO] start\n[1, 2, 3]\n", nil, mixedAt(1)},
		{"log then pretty number array", "starting\n[\n  1,\n  2\n]\n", nil, mixedAt(1)},
		{"indented object after log", "starting\n    {\"a\": 1}\n", nil, mixedAt(1)},
		{"JSON lines", "{\"a\":1}\n{\"b\":2}\n", nil, mixedAt(2)},
		{"object between logs", "a\n{\"x\":[1]}\nb", nil, mixedAt(1)},
		{"object then text on its line", `{"a":1} done`, nil, `stdout starts with "{" but is not valid JSON:`},
		{"checklist", "Tasks:\n[ ] write\n[x] test\n", "Tasks:\n[ ] write\n[x] test", ""},
		{"empty object line in text", "a\n{} b\n", "a\n{} b", ""},
		{"CRLF log then object", "start\r\n{\"a\":1}\r\n", nil, mixedAt(1)},
		{"truncated object", `{"rows": [1, 2`, nil, `stdout starts with "{" but is not valid JSON:`},
		{"truncated array", `[{"row": 1}, {"ro`, nil, `stdout starts with "[" but is not valid JSON:`},
		{"bad array", `[1, 2,]`, nil, `stdout starts with "[" but is not valid JSON:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseStdout([]byte(tt.stdout))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("output %#v, want error %q", got, tt.wantErr)
				}
				if msg := err.Error(); msg != tt.wantErr && !(strings.HasSuffix(tt.wantErr, ":") && strings.HasPrefix(msg, tt.wantErr)) {
					t.Fatalf("error %q, want %q", msg, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("output %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestParseStdoutTriesBoundedStarts: lines that open JSON are tried as its
// start only so many times, so output made of many of them is not read
// again from each.
func TestParseStdoutTriesBoundedStarts(t *testing.T) {
	t.Parallel()
	// maxJSONStarts lines that open an array which never closes, then a
	// log line and an object: the object is past the bound, so the output
	// is taken as broken JSON rather than searched further.
	stdout := strings.Repeat("[\n", maxJSONStarts) + "log\n{\"a\":1}\n"
	if _, err := parseStdout([]byte(stdout)); err == nil || !strings.HasPrefix(err.Error(), `stdout starts with "[" but is not valid JSON`) {
		t.Fatalf("err = %v, want the broken-JSON error (the object is past the bound)", err)
	}
	// One line fewer, and the object is found.
	stdout = strings.Repeat("[\n", maxJSONStarts-1) + "log\n{\"a\":1}\n"
	if _, err := parseStdout([]byte(stdout)); err == nil || !strings.HasPrefix(err.Error(), "stdout mixes JSON") {
		t.Fatalf("err = %v, want the mixed-JSON error", err)
	}
}

// BenchmarkParseStdoutNestedBrackets is the worst case for the search of
// mixed JSON: every line opens an array that closes only at the very end,
// or never. Time per byte must not grow with the size.
func BenchmarkParseStdoutNestedBrackets(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 14, 1 << 18} {
		stdout := []byte("log\n" + strings.Repeat("[\n", n))
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(stdout)))
			for b.Loop() {
				_, _ = parseStdout(stdout)
			}
		})
	}
}

// nested is n levels of lists, the innermost empty.
func nested(n int) any {
	var v any = []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}

// Every parser of outputs caps their nesting at runners.MaxOutputDepth, whatever
// brackets their strings hold; deeper JSON fails, deeper text that is not
// JSON stays text.
func TestOutputDepthIsCapped(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	bracketsInStrings := `{"a": "` + strings.Repeat("[{", 600) + `", "b": "\"[[["}`
	tests := []struct {
		name, text string
		want       any
		tooDeep    bool
	}{
		{"512 levels", deep(512), nested(512), false},
		{"513 levels", deep(513), nil, true},
		{"9,990 levels", deep(9990), nil, true},
		{"objects, 513 levels", strings.Repeat(`{"a":`, 513) + "1" + strings.Repeat("}", 513), nil, true},
		{"brackets in strings", bracketsInStrings, map[string]any{"a": strings.Repeat("[{", 600), "b": `"[[[`}, false},
		{"unclosed brackets are text", strings.Repeat("[", 600), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check := func(parser string, got any, err error) {
				t.Helper()
				if tt.tooDeep {
					if !errors.Is(err, runners.ErrTooDeep) || err.Error() != "output nests deeper than 512 levels" {
						t.Errorf("%s: err = %v, want runners.ErrTooDeep", parser, err)
					}
					return
				}
				if err != nil {
					t.Errorf("%s: %v", parser, err)
				} else if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: output differs", parser)
				}
			}
			got, err := runners.ParseOutput(tt.text)
			if tt.want == nil && !tt.tooDeep {
				if got != tt.text || err != nil {
					t.Errorf("ParseOutput: %v %v, want the text", got, err)
				}
				return
			}
			check("ParseOutput", got, err)
			got, err = parseStdout([]byte(tt.text))
			check("parseStdout", got, err)
			got, err = runners.ParseJSONReply(tt.text)
			check("ParseJSONReply", got, err)
			got, err = runners.ParseJSONReply("Here:\n```json\n" + tt.text + "\n```")
			check("ParseJSONReply, fenced", got, err)
		})
	}
}
