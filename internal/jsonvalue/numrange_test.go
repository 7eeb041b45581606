package jsonvalue

import (
	"encoding/json"
	"strings"
	"testing"
)

// A number too large for a float64 is told apart from invalid JSON, with
// where it starts.
func TestRangeError(t *testing.T) {
	t.Parallel()
	long := "1" + strings.Repeat("0", 400)
	tests := []struct {
		doc  string
		want string // "" when the error is no range error
	}{
		{`{"n": 1e999}`, "the number 1e999 at line 1, column 7 is out of range"},
		{"[1,\n  \"é\", -2E+400]", "the number -2E+400 at line 2, column 8 is out of range"},
		{"{\"n\": " + long + "}", "the number " + long[:39] + "… at line 1, column 7 is out of range"},
		{`{"n": 1e999, "m": }`, ""}, // a syntax error comes first
		{`1e-999`, ""},              // underflow is 0, no error
	}
	for _, tt := range tests {
		var v any
		err := json.Unmarshal([]byte(tt.doc), &v)
		re := RangeError([]byte(tt.doc), err)
		switch {
		case tt.want == "" && re != nil:
			t.Errorf("%q: %v, want no range error (%v)", tt.doc, re, err)
		case tt.want != "" && (re == nil || !strings.HasPrefix(re.Error(), tt.want)):
			t.Errorf("%q: %v, want %q", tt.doc, re, tt.want)
		}
	}
}
