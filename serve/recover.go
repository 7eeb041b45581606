package serve

// Recover goes on with the unfinished runs of the state database, each
// from its last saved turn, as Serve does first: for a front door that
// uses Runs without serving HTTP (ensemble mcp serve --state). Call it
// once, and not with Serve; Runs().Close ends what it started.
func (s *Server) Recover() { s.runs.recover() }
