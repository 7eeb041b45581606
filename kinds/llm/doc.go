// Package llm is the LLM kind: agents with a model_profile, their fields
// (Kind), and the runner of LLM agents (docs/llm.md) and simulated users
// (docs/testing.md#the-responses-file).
//
// A Runner talks to three providers behind one small Provider interface:
// openai (Chat Completions, also for any compatible server via base_url),
// anthropic (the Messages API) and ollama (its OpenAI-compatible /v1
// endpoint, http://localhost:11434/v1 by default, no key). Their wire
// formats are spoken with net/http and encoding/json (wire.go), retries
// included.
//
// A program does not build a Runner itself: package session assembles every
// run, and through package kinds it builds one Runner for the session, hands
// it every LLM agent, and lends its Simulate to injected responses:
//
//	e, err := session.Load("ensemble.yaml", nil, session.LoadOptions{LookupEnv: lookupEnv})
//	s, err := session.Open(ctx, e, session.Options{LookupEnv: lookupEnv, Models: session.Models{Stream: true}})
//	defer s.Close()
//	r, err := s.Start(input, session.RunOptions{})
//	res, err := r.Run(ctx)
//
// One execution continues the agent's stored conversation (Request.Memory)
// with one user message, then runs the tool loop: send; run the reply's tool
// calls concurrently, tool_parallel at a time and at most 128 (arguments
// validated against the tool's JSON Schema first); append one result per
// call in the order the model issued them;
// send again; until a reply has no tool calls or max_steps requests were
// made. Result.Memory is the whole conversation afterwards; context_window
// trims only what is sent. See README.md in this folder for every decision
// taken where the spec is silent.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package llm
