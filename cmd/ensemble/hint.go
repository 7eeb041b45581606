package main

import (
	"strings"

	"github.com/ensemble-run/ensemble/durable"
)

// hint is the hint of a durable error (durable.Hint), its commands named
// with this program, as the user typed it.
func (s *stdio) hint(err error) string {
	return strings.ReplaceAll(durable.Hint(err), "\n  ", "\n  "+s.program()+" ")
}
