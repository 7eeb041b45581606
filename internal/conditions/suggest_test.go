package conditions

import "testing"

// A swap of two neighbours is one edit; a one-letter key suggests nothing
// (every other one-letter key is one edit away).
func TestClosestSwapsAndShortKeys(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		key  string
		keys []string
		want string
	}{
		{"taks", []string{"task", "title"}, "task"},
		{"naem", []string{"name", "id"}, "name"},
		{"verdcit", []string{"verdict"}, "verdict"},
		{"touches_cdoe", []string{"touches_code"}, "touches_code"},
		{"4", []string{"1", "2", "3"}, ""},
		{"x", []string{"y"}, ""},
		{"X", []string{"x"}, "x"},
		{"ab", []string{"ba"}, "ba"},
		{"abc", []string{"xyz"}, ""},
		{"score", []string{"scroe", "sco"}, "scroe"},
	} {
		obj := map[string]any{}
		for _, k := range tt.keys {
			obj[k] = 1
		}
		if got := closest(tt.key, obj); got != tt.want {
			t.Errorf("closest(%q, %q) = %q, want %q", tt.key, tt.keys, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b  string
		bound int
		want  int
	}{
		{"task", "taks", 5, 1},
		{"ca", "abc", 5, 3}, // optimal string alignment, not Damerau's unrestricted form
		{"kitten", "sitting", 5, 3},
		{"abcdef", "badcfe", 5, 3},
		{"abcdef", "badcfe", 1, 2}, // over the bound: bound+1
		{"", "abc", 5, 3},
		{"日本", "本日", 5, 1},
	} {
		if got := distance(tt.a, tt.b, tt.bound); got != tt.want {
			t.Errorf("distance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.bound, got, tt.want)
		}
	}
}
