package bdd

import (
	"context"
	"net/http/httptrace"
)

// Model requests are counted as sent, not as answered
// (docs/testing.md#testing-with-live-models): a run that an early stop or
// Ctrl-C cancels while its request is with the model server made that
// request all the same, and --max-requests must count it. The engine's
// usage counts the requests answered (and those a recording replayed);
// each run of a test run with repeats also counts the requests it wrote to
// a model server, through an HTTP client trace on its context: every
// request written, retries and requests cancelled in flight included, as
// the server counts them. A run's requests are the larger of the two: the
// requests written plus those replayed, or the engine's count (which is
// all a runner that needs no server, such as a test's, gives).

// sentCounter counts the model requests one run writes to a model server.
// Its fields are guarded by the repeatRun's lock.
type sentCounter struct {
	rr    *repeatRun
	sent  int
	ended bool
}

// trace is ctx with an HTTP client trace that counts each request written
// in full: the run's, and, while the run is under way, the test run's
// requests in flight (rr.sending), which the spend guards count at once.
func (c *sentCounter) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(w httptrace.WroteRequestInfo) {
			if w.Err != nil {
				return
			}
			rr := c.rr
			rr.mu.Lock()
			defer rr.mu.Unlock()
			if c.ended { // a write the run no longer waited for
				rr.spent.Requests++
				return
			}
			c.sent++
			rr.sending++
			rr.checkBudget()
		},
	})
}

// end counts the run's requests into res as it ends: those sent, or those
// the engine counted when that is more. The lock is held.
func (c *sentCounter) end(res *runResult) {
	c.ended = true
	c.rr.sending -= c.sent
	res.usage.Requests = max(res.usage.Requests, c.sent+res.replays)
}

// replays is how many model requests the scenario's recordings answered.
func (s *Scenario) replays() int {
	n := 0
	for _, c := range s.cassettes {
		n += c.Replays()
	}
	return n
}
