package bdd

import "testing"

// A misspelt keyword is named with the one meant; in free text only a
// long word is asked about, so that prose is left alone.
func TestMisspeltKeyword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line   string
		strict bool
		want   string
	}{
		{"  Scenaro: x", false, "Scenario"},
		{"Feture: x", false, "Feature"},
		{"Backgroud:", true, "Background"},
		{"Exampels:", true, "Examples"},
		{"Scenario Outlin: x", false, "Scenario Outline"},
		{"Scenario: x", false, ""},   // a keyword
		{"Note: prose", true, ""},    // short prose
		{"Features: a, b", true, ""}, // a plural
		{"Context: who", true, ""},   // not close
		{"Given the ensemble", true, ""},
	} {
		if got := misspeltKeyword(tc.line, tc.strict); got != tc.want {
			t.Errorf("misspeltKeyword(%q, %v) = %q, want %q", tc.line, tc.strict, got, tc.want)
		}
	}
}
