package engine

import "testing"

// The sizes of the fan-out cap's message are in the cap's own units
// (64MiB): powers of 1024, written as readcap.Size writes them.
func TestByteSizeUsesTheCapsUnits(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{12, "12 bytes"},
		{1023, "1023 bytes"},
		{1 << 10, "1.0KiB"},
		{640 << 10, "640.0KiB"},
		{9e6, "8.6MiB"},
		{MaxFanOutGiven, "64.0MiB"},
		{900e6, "858.3MiB"},
		{3 << 30, "3.0GiB"},
	} {
		if got := byteSize(tt.n); got != tt.want {
			t.Errorf("byteSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
