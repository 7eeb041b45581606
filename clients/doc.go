// Package clients tests `ensemble serve` with the official client
// libraries of the protocols it speaks that the ensemble module does not
// otherwise depend on: openai-go against the chat completions endpoint.
//
// It is a module of its own, so that the ensemble module's build and its
// `make test` never compile those clients (openai-go alone is about 90 s
// of CPU on an empty build cache); `make test-clients` runs it, and CI does.
// The clients of MCP and A2A are in the SDKs the server is built on, and
// are tested in the main module.
package clients
