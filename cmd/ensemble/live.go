package main

// liveFlags are --live and --live-all: which LLM agents without an entry in
// the --responses file may call their real model (session.Models.Live).
type liveFlags struct {
	live    []string // --live AGENT (repeatable)
	liveAll bool     // --live-all
}
