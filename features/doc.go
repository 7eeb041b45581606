// Package features is the project's own behaviour suite: Gherkin scenarios
// of multi-turn ensembles (cycles, conditions, limits, failures, state) run
// by `go test ./features/...` with godog, strict. The .feature files and the
// real ensembles they use live in testdata/, where `ensemble test` does not
// look: script agents run for real, LLM agents answer from injected
// responses or from an in-process fake OpenAI-compatible server through the
// real LLM runner.
//
// The steps are the built-in steps of `ensemble test` (package bdd) plus the
// fake model's steps (fakemodel_test.go).
package features
