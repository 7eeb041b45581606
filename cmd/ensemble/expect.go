package main

import (
	"github.com/ensemble-run/ensemble/ensemble"
)

// compileExpect compiles --expect (docs/cli.md#run): an expression that
// does not compile is a usage error naming the flag. Whether it names
// keys the ensemble has is checked when the run's session opens.
func (s *sharedFlags) compileExpect() error {
	s.expected = nil
	for _, src := range s.expect {
		x, err := ensemble.CompileExpectation(src, "--expect")
		if err != nil {
			return usageErr("%v", err)
		}
		s.expected = append(s.expected, x)
	}
	return nil
}
