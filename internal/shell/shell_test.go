package shell

import "testing"

func TestQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"runs.db", "runs.db"},
		{"/a/b-c_d.db", "/a/b-c_d.db"},
		{"", "''"},
		{"my runs.db", "'my runs.db'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
