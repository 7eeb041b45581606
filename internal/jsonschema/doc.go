// Package jsonschema is a copy of github.com/santhosh-tekuri/jsonschema/v6
// v6.0.3 (Apache License 2.0, LICENSE beside this file), the JSON Schema
// compiler and validator of output_schema, tool parameters and the
// ensemble file's own schema.
//
// It is kept here for one change: the compiler's queue of the schemas of
// one Compile call is indexed by location. Upstream looks a location up by
// scanning the queue, so that a schema of n subschemas compiled in O(n²):
// an output_schema of 50,000 properties took 80 s to load. The rest is as
// upstream wrote it; the upstream tests are not copied (they need its test
// suite's files). To update: copy the new version's non-test files, kind/
// and metaschemas/, rewrite its import paths, and apply the queue change in
// compiler.go again.
package jsonschema
