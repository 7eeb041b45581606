package store

import (
	"regexp"
	"testing"
)

// The ids one process makes never repeat, however many it makes in a
// second (20,000 draws of 24 random bits repeat one with a probability of
// about 0.99), and keep their shape.
func TestNewIDNeverRepeats(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{6}$`)
	seen := map[string]bool{}
	for range 20000 {
		id := NewID()
		if seen[id] || !shape.MatchString(id) || CheckID(id) != nil {
			t.Fatalf("id %q: repeated, or not an id", id)
		}
		seen[id] = true
	}
}
