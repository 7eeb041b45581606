//go:build notemporal

package durable

import "errors"

// ErrNoTemporal refuses a run on Temporal in a build without the engine
// (-tags notemporal, which spares compiling the Temporal SDK).
var ErrNoTemporal = errors.New("this build of ensemble has no Temporal engine (it was built with -tags notemporal)")
