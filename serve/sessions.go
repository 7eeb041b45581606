package serve

import (
	"sync"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/session"
)

// The sessions of new runs. Opening a session (session.Open) checks the
// options and keys, builds the kinds' runners and starts the MCP servers
// the agents name: a batch opens one for all its runs, and a served run
// opened one of its own, which cost it more than its events' encoding
// (docs/performance.md#serving). The new runs of an ensemble now share
// one, opened by the first (one with streaming, one without), as a
// batch's runs share theirs, and closed with the server. An ensemble
// whose agents use MCP servers still opens one per run: each run starts
// its servers afresh and stops them, as it did. A session that fails to
// open is not kept: the next run tries again.

// sessionKey names a shared session.
type sessionKey struct {
	s      *served
	stream bool
}

// sessions are the shared sessions (guarded by mu).
type sessions struct {
	mu   sync.Mutex
	open map[sessionKey]*session.Session
}

// runSession is the session a new run of s starts in, with opts, and
// done, which lets it go once the run is over.
func (rs *Runs) runSession(s *served, opts session.Options) (*session.Session, func(), error) {
	if s.mcp {
		sess, err := session.Open(rs.ctx, s.e, opts)
		if err != nil {
			return nil, nil, err
		}
		return sess, func() { sess.Close() }, nil
	}
	k := sessionKey{s, opts.Models.Stream}
	rs.sess.mu.Lock()
	defer rs.sess.mu.Unlock()
	if sess := rs.sess.open[k]; sess != nil {
		return sess, func() {}, nil
	}
	sess, err := session.Open(rs.ctx, s.e, opts)
	if err != nil {
		return nil, nil, err
	}
	rs.mu.Lock()
	closing := rs.closing
	rs.mu.Unlock()
	if closing { // closeSessions may have run: the run closes its own
		return sess, func() { sess.Close() }, nil
	}
	if rs.sess.open == nil {
		rs.sess.open = map[sessionKey]*session.Session{}
	}
	rs.sess.open[k] = sess
	return sess, func() {}, nil
}

// closeSessions closes the shared sessions (Close, once no run goes on).
func (rs *Runs) closeSessions() {
	rs.sess.mu.Lock()
	defer rs.sess.mu.Unlock()
	for k, sess := range rs.sess.open {
		sess.Close()
		delete(rs.sess.open, k)
	}
}

// usesMCP reports whether an agent of e (or of an ensemble it runs) has a
// tool of an MCP server.
func usesMCP(e *ensemble.Ensemble) bool {
	found := false
	agent.Walk(e, func(_ *ensemble.Ensemble, a *ensemble.Agent) {
		for _, n := range agent.Tools(a) {
			if _, _, ok := ensemble.SplitMCPTool(n); ok {
				found = true
			}
		}
	})
	return found
}
