// Command ensemble runs multi-agent workflows declared in YAML.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ensemble-run/ensemble/internal/process"
	"github.com/ensemble-run/ensemble/internal/startup"
)

func main() {
	startup.Restore() // PATH, emptied while the packages were initialised
	process.Setup()   // the GC's start, the environment hidden from our children
	// SIGHUP too (the terminal closed, the SSH connection dropped): its
	// default handling would end the process at once and leave the scripts
	// running, each in a process group of its own that the terminal's
	// hangup does not reach. Unless it is ignored (nohup): catching it
	// would undo that, and a hangup would stop the run nohup kept.
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		signals = append(signals, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	// The first SIGINT/SIGTERM/SIGHUP cancels the run cleanly (agents are
	// stopped, the state is written). Once it has, the default handling is
	// back, so a second one ends the process at once if stopping ever hangs;
	// the state file is complete at any moment.
	go func() { <-ctx.Done(); stop() }()
	// A reader that goes away early (`| head`, quitting less) must not kill
	// the run with SIGPIPE: the state and the report are still written.
	// Caught (not ignored), so writes fail with EPIPE instead, and scripts
	// started by the run get the default handling back.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code := run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, prog: programName(os.Args[0])})
	stop()
	os.Exit(code)
}
