package hostcheck

import "testing"

func TestAllowed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host, listen string
		names        []string
		want         bool
	}{
		{"127.0.0.1:7777", "127.0.0.1:7777", nil, true},
		{"[::1]:7777", "127.0.0.1:7777", nil, true},
		{"localhost:7777", "127.0.0.1:7777", nil, true},
		{"LOCALHOST", "127.0.0.1:7777", nil, true},
		{"evil.example:7777", "127.0.0.1:7777", nil, false},
		{"box.lan:7777", "box.lan:7777", nil, true},
		{"Ensembles.Internal", "0.0.0.0:7777", []string{"ensembles.internal"}, true},
		{"other.internal", "0.0.0.0:7777", []string{"ensembles.internal"}, false},
		{"", "127.0.0.1:7777", nil, false},
		{":7777", "127.0.0.1:7777", nil, false},
	} {
		if got := Allowed(tc.host, tc.listen, tc.names); got != tc.want {
			t.Errorf("Allowed(%q, %q, %v) = %v, want %v", tc.host, tc.listen, tc.names, got, tc.want)
		}
	}
}
