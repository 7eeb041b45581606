package runners

import (
	"github.com/ensemble-run/ensemble/ensemble"
)

// SchemaError is an output that does not satisfy its agent's output_schema
// (docs/format.md#output-schemas). Problems lists every failing location:
// `at '/approved': got string, want boolean; ...`.
type SchemaError struct {
	Problems string
}

func (e *SchemaError) Error() string {
	return "the output does not match output_schema: " + e.Problems
}

// CheckSchema validates v, an output of agent a, against a's output_schema;
// nil when it has none or v satisfies it, a *SchemaError otherwise.
func CheckSchema(a *ensemble.Agent, v any) error {
	if a == nil || a.OutputSchema == nil {
		return nil
	}
	if err := a.OutputSchema.Validate(v); err != nil {
		return &SchemaError{Problems: err.Error()}
	}
	return nil
}
