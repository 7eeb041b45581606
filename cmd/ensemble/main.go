// Command ensemble runs multi-agent workflows declared in YAML.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	hideEnviron()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first SIGINT/SIGTERM cancels the run cleanly (agents are stopped,
	// the state is written). Once it has, the default handling is back, so
	// a second one ends the process at once if stopping ever hangs; the
	// state file is complete at any moment.
	go func() { <-ctx.Done(); stop() }()
	code := run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}
