// Package features is the project's own behaviour suite: Gherkin scenarios
// of multi-turn ensembles (the ADR-005 behaviours, SPEC §2–§5) run by
// `go test ./features/...` with godog, strict, against the real ensembles in
// testdata/: script agents run for real, LLM agents answer from injected
// responses or from an in-process fake OpenAI-compatible server through the
// real LLM runner.
//
// The steps are the built-in steps of `ensemble test` (package bdd) plus the
// fake model's steps (fakemodel_test.go).
package features
