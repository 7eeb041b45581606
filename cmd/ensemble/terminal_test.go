package main

import (
	"os"
	"testing"
)

// TestDevNullIsNotATerminal: stdin from /dev/null (a character device) is
// not a terminal, so an ask agent fails at once instead of waiting.
func TestDevNullIsNotATerminal(t *testing.T) {
	t.Parallel()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("/dev/null is taken for a terminal")
	}
}
