package ensemble

import (
	"runtime"
	"strings"
	"testing"
)

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

// A value from outside (a run's ensemble name in a URL, a model's tool
// call) may be megabytes long: looking for a suggestion for it costs no
// more than counting its letters, not a table of its length times each
// candidate's.
func TestClosestOfAHugeValueIsCheap(t *testing.T) {
	huge := strings.Repeat("a", 1<<20)
	near := strings.Repeat("a", maxSuggested-1) + "b"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := []string{closest(huge, []string{"ask", "count", huge[:10]}), closest(huge, []string{huge[:len(huge)-1]}),
		closest(near, []string{near[:maxSuggested-1] + "c"})}
	runtime.ReadMemStats(&after)
	if got[0] != "" || got[1] != "" || got[2] != near[:maxSuggested-1]+"c" {
		t.Fatalf("suggested %.20q", got)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("allocated %d bytes", n)
	}
	if d := distance("abcdef", "badcfe"); d != 3 {
		t.Fatalf("distance %d, want 3 (three swaps)", d)
	}
}
