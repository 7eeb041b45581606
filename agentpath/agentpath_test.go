package agentpath

import "testing"

// A --live name names the agents at its path, and every instance where it
// names none.
func TestNamesPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		names []string
		path  string
		want  bool
	}{
		{[]string{"writer"}, "writer", true},
		{[]string{"writer"}, "writer2", false},
		{[]string{"summarize"}, "summarize[2]", true},
		{[]string{"summarize[1]"}, "summarize[2]", false},
		{[]string{"analyst/think"}, "analyst[1]/think", true},
		{[]string{"analyst[1]/think"}, "analyst[1]/think", true},
		{[]string{"analyst[1]/think"}, "analyst[0]/think", false},
		{[]string{"analyst[0]/summarize"}, "analyst[0]/summarize[1]", true},
		{[]string{"analyst/summarize"}, "analyst[0]/summarize[1]", true},
		{[]string{"analyst/summarize[1]"}, "analyst[0]/summarize[0]", false},
		{[]string{"analyst"}, "analyst[0]/summarize", false},
		{[]string{"x", "analyst/think"}, "analyst/think", true},
		{nil, "writer", false},
	} {
		if got := NamesPath(tc.names, tc.path); got != tc.want {
			t.Errorf("NamesPath(%q, %q) = %v, want %v", tc.names, tc.path, got, tc.want)
		}
	}
}

func TestPathWithoutInstances(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"writer":         "writer",
		"a[1]/b/c[22]/d": "a/b/c/d",
		"summarize[0]":   "summarize",
	} {
		if got := PathWithoutInstances(path); got != want {
			t.Errorf("PathWithoutInstances(%q) = %q, want %q", path, got, want)
		}
	}
}
