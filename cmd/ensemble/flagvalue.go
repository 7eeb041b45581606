package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// flagWants is what a flag of each built-in value type takes, in words.
var flagWants = map[string]string{
	"int":      "a whole number",
	"int64":    "a whole number",
	"uint":     "a whole number, 0 or more",
	"float64":  "a number",
	"duration": "a duration with its unit, such as 90s, 10m or 1h30m",
	"bool":     "true or false",
}

// invalidValue rewords pflag's error for a value its flag cannot parse
// (`invalid argument "abc" for "--max-turns" flag: strconv.ParseInt: …`)
// as what the flag wants; ok is false for any other error, and for the
// flags whose own type already says what it wants.
func invalidValue(err error) (msg string, ok bool) {
	ive, isInvalid := errors.AsType[*pflag.InvalidValueError](err)
	if !isInvalid {
		return "", false
	}
	f := ive.GetFlag()
	want, known := flagWants[f.Value.Type()]
	if !known {
		return "", false
	}
	return fmt.Sprintf("--%s wants %s, got %q", f.Name, want, ive.GetValue()), true
}
