package script

import (
	"strings"
	"testing"
)

// A script's stdout that is JSON with a number too large for a float64 is
// not called invalid JSON: the error names the number and its place in
// stdout.
func TestParseStdoutNumberOutOfRange(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ stdout, want string }{
		{`{"n": 1e999}`, "stdout is JSON, but the number 1e999 at line 1, column 7 is out of range"},
		{"\n\n[1,\n 2, 99e999]\n", "stdout is JSON, but the number 99e999 at line 4, column 5 is out of range"},
	} {
		_, err := parseStdout([]byte(tt.stdout))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: %v\nwant %s", tt.stdout, err, tt.want)
		}
	}
}
