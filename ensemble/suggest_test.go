package ensemble

import "testing"

// Swaps of two neighbours are near; one-letter values suggest nothing but
// themselves in another case; a suggestion shares most of the word.
func TestClosestNeedsMostOfTheWord(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s          string
		candidates []string
		want       string
	}{
		{"taks", []string{"task", "name"}, "task"},
		{"naem", []string{"task", "name"}, "name"},
		{"APPROVED", []string{"APPROVE", "REJECT"}, "APPROVE"},
		{"4", []string{"1", "2", "3"}, ""},
		{"a", []string{"A", "b"}, "A"},
		{"ab", []string{"xy"}, ""},
		{"abc", []string{"xyz"}, ""},
		{"bakup", []string{"backup2"}, "backup2"},
		{"reviewr", []string{"reviewer"}, "reviewer"},
	} {
		if got := closest(tt.s, tt.candidates); got != tt.want {
			t.Errorf("closest(%q, %q) = %q, want %q", tt.s, tt.candidates, got, tt.want)
		}
	}
}
