// Package startup keeps the ensemble binary from starting a `go` process
// before main runs.
//
// godog, the Gherkin runner behind `ensemble test`, has a package
// (internal/builder, for its own `godog build`, which ensemble never uses)
// that runs `go env GOTOOLDIR` when it is initialised, in every process that
// links godog: each `ensemble` command would start the go command first. That
// costs a process start, runs whatever `go` is first on PATH, and in a folder
// whose go.mod asks for a newer Go it makes the go command download that
// toolchain (GOTOOLCHAIN=auto, the default).
//
// Package initialisation goes by import path among the packages whose
// imports are initialised (the Go spec, "Package initialization"): this
// package imports only os, so it is initialised before os/exec, and so
// before anything that could run a command. Its init empties PATH, so that
// godog's lookup of `go` fails at once without starting anything; main
// calls Restore first thing, before any command of ours is looked up.
package startup

import "os"

var (
	path    string
	hasPath bool
)

func init() {
	path, hasPath = os.LookupEnv("PATH")
	os.Setenv("PATH", "")
}

// Restore puts PATH back as the process was given it.
func Restore() {
	if hasPath {
		os.Setenv("PATH", path)
	} else {
		os.Unsetenv("PATH")
	}
}
