package main

import (
	"fmt"
	"slices"

	"github.com/ensemble-run/ensemble/ensemble"
)

// liveFlags are --live and --live-all: which LLM agents without an entry in
// the --responses file may call their real model.
type liveFlags struct {
	live    []string // --live AGENT (repeatable)
	liveAll bool     // --live-all
}

// check rejects a --live that names no agent of e.
func (l *liveFlags) check(e *ensemble.Ensemble) error {
	for _, name := range l.live {
		if e.Agent(name) == nil {
			return usageErr("--live: unknown agent %q%s", name, ensemble.Suggest(name, e.AgentNames()))
		}
	}
	return nil
}

// guard is the rule of a run given the responses file file: an LLM agent
// with no entry in it fails instead of calling its real model, unless --live
// names it or --live-all is given.
func (l *liveFlags) guard(file string) func(agent string) error {
	if l.liveAll {
		return nil
	}
	return func(agent string) error {
		if slices.Contains(l.live, agent) {
			return nil
		}
		return fmt.Errorf("agent %q has no responses in %s and would call the real model; add responses for it, or pass --live %s (or --live-all)",
			agent, file, agent)
	}
}
