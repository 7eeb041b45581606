package state

// Expectation is an expectation of a completed run as it was checked
// (docs/semantics.md#expectations): the result's expectations.
type Expectation struct {
	// Expression is its source; Where is where it was written
	// (FILE:LINE:COL of expect:, or --expect).
	Expression string `json:"expression"`
	Where      string `json:"where"`
	// Held is whether it was true.
	Held bool `json:"held"`
	// Error is why it could not be evaluated (a type error, a budget of
	// the sandbox): it then did not hold.
	Error string `json:"error,omitempty"`
	// Values are the values it read from the final state.
	Values []ExpectationValue `json:"values"`
}

// ExpectationValue is a value an expectation read: its path in the final
// state (context.judge.verdict, executions.fix, held_back) and its value,
// or Missing when the path leads to no value. A value longer than
// MaxExpectationValue bytes as JSON is cut: a string that starts as it
// does, ending with "…", and Cut set.
type ExpectationValue struct {
	Path    string `json:"path"`
	Value   any    `json:"value"`
	Missing bool   `json:"missing,omitempty"`
	Cut     bool   `json:"cut,omitempty"`
}

// MaxExpectationValue is how long (bytes of compact JSON) a value an
// expectation read is kept in full in its result.
const MaxExpectationValue = 1000
