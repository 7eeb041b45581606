package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// The statuses of a run, beside the completion reasons of a saved run
// (completed, awaiting_input, failed, timeout, ...).
const (
	StatusQueued    = "queued"    // accepted, waiting for a free slot (--max-runs)
	StatusRunning   = "running"   // going on in this server
	StatusCancelled = "cancelled" // a caller cancelled it
	// StatusInterrupted is a run that has not finished and that this
	// server does not run: another process holds it, or it did not
	// start again (the server's log says why).
	StatusInterrupted = "interrupted"
)

// Error is a refusal of the run machinery, which a front door turns into
// its own error shape: Code is one of the codes below.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// The codes of an *Error.
const (
	CodeNotFound   = "not_found"   // no such ensemble, run or turn
	CodeBadRequest = "bad_request" // the request is malformed
	CodeConflict   = "conflict"    // the run is not in a state that allows it
	CodeBusy       = "busy"        // the queue is full
	CodeClosing    = "closing"     // the server is shutting down
)

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// StartOptions are what a new run has of its own beside its input.
type StartOptions struct {
	// RunID is the run's id; "" makes a new one.
	RunID string
	// Webhook is a URL posted to when the run suspends and when it ends.
	Webhook string
	// IdempotencyKey makes a second Start with the same key return the
	// first's run instead of starting another.
	IdempotencyKey string
	// Stream streams the run's model replies as text_delta events (chat.go).
	Stream bool
	// Waited: the caller waits for the run and answers with WaitResult,
	// which commits the run's start before it answers: Start leaves its
	// start to be committed with the other runs' writes.
	Waited bool
}

// Runs is the run machinery of a server: the runs it starts, goes on with
// and keeps in its state database, at most MaxRuns at once. It is what an
// HTTP adapter (the run API of this package, or a chat endpoint mounted
// beside it) calls; it knows nothing of HTTP.
type Runs struct {
	o      *Options
	sync   store.Sync
	j      *journal
	list   []*served
	byName map[string]*served

	ctx    context.Context // the life of every run; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{}
	work   *workers      // the goroutines the runs go on in (workers.go)
	sess   sessions      // the sessions new runs share (sessions.go)
	stop   chan struct{} // closed when the server stops starting runs

	// rd is the server's one connection reading the state database (the
	// runs write through their own); its lock (store.DB.Hold) serialises
	// its use.
	rd *store.DB
	// wdb is the connection new runs are saved through, shared as a
	// batch's runs share theirs: its lock serialises its use.
	wdb *store.DB
	// keyMu serialises the starts that carry an idempotency key.
	keyMu sync.Mutex
	// streamNext: runs whose next going on streams its model replies (chat.go).
	streamNext sync.Map
	// results: by run, the result its run_completed event carried,
	// written (writeAhead, resultbuf.go).
	results sync.Map
	// deliveries: by run, the last delivery given to Deliver (mount.go).
	deliveries sync.Map
	// onEnd are told of every run that ends or suspends (mount.go).
	onEnd []func(id string)

	// to is what the sweeper of questions that time out knows (asktimeout.go).
	to timeouts
	// hidden are the variables that hold the server's secrets, sorted;
	// secretValues are their values and the token, which serverSecrets
	// redacts from the answers and each run's session from all it makes,
	// its streamed text held back across deltas (envsecrets.go).
	hidden        []string
	secretValues  []string
	serverSecrets *secrets.Redactor

	mu       sync.Mutex
	active   map[string]*active
	claimed  map[string]bool // runs an answer, a cancel or a fork is being given to
	starting map[string]bool // run ids being started (StartOptions.RunID)
	queued   int
	closing  bool
}

// active is a run this server goes on with.
type active struct {
	status string
	cancel context.CancelFunc
	done   chan struct{}
	user   bool // cancelled by a caller
	// res is a new run's result once it ended or suspended here, as run
	// --output json prints it (WaitResult, ended.go); set before done
	// is closed.
	res *engine.Result
	// written is res written compact, when its run_completed event
	// carried it so (writeAhead): the answer is these bytes.
	written []byte
}

func newRuns(o *Options, list []*served) (*Runs, error) {
	sync, err := durable.SyncFrom(o.LookupEnv)
	if err != nil {
		return nil, err
	}
	j, err := openJournal(o.State)
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		s.mcp = usesMCP(s.e)
		// read once, as a batch reads them: the runs record this file's hash
		if s.refs, err = (durable.Refs{Responses: s.responses, Profiles: o.Profiles}).Resolve(); err != nil {
			return nil, err
		}
		if s.responses != "" {
			if s.resp, err = responses.LoadResponsesFor(s.responses, s.e); err != nil {
				return nil, err
			}
		}
	}
	rd, err := store.Open(o.State, false, store.SyncNormal)
	if err != nil {
		return nil, fmt.Errorf("--state: %w", err)
	}
	wdb, err := store.Open(o.State, false, sync)
	if err != nil {
		rd.Close()
		return nil, fmt.Errorf("--state: %w", err)
	}
	rs := &Runs{o: o, sync: sync, j: j, rd: rd, wdb: wdb, list: list, byName: map[string]*served{}, active: map[string]*active{},
		claimed: map[string]bool{}, starting: map[string]bool{}, slots: make(chan struct{}, o.MaxRuns), work: newWorkers(o.MaxRuns), stop: make(chan struct{})}
	// The new runs commit their writes together; a run's end is committed
	// before anyone is told it ended (launch), and its start before it is
	// answered for (Start, WaitResult): each waits for the group's next
	// commit, which the runs that end meanwhile share.
	wdb.GroupCommit(false)
	j.maxSize = o.EventsMaxSize
	rs.compactEvents() // before any run goes on
	rs.wg.Add(1)
	go rs.compactor()
	for _, s := range list {
		rs.byName[s.e.Name] = s
	}
	rs.ctx, rs.cancel = context.WithCancel(context.Background())
	return rs, nil
}

// Ensembles describes the ensembles served, by name.
func (rs *Runs) Ensembles() []EnsembleInfo {
	out := make([]EnsembleInfo, 0, len(rs.list))
	for _, s := range rs.list {
		out = append(out, s.info())
	}
	return out
}

// Ensemble is the served ensemble named name; nil.
func (rs *Runs) Ensemble(name string) *ensemble.Ensemble {
	if s := rs.byName[name]; s != nil {
		return s.e
	}
	return nil
}

// redact redacts every key of every served ensemble's profiles.
func (rs *Runs) redact(s string) string {
	for _, x := range rs.list {
		s = x.secrets.String(s)
	}
	return rs.serverSecrets.String(s)
}

func (rs *Runs) redactBytes(b []byte) []byte {
	for _, x := range rs.list {
		b = x.secrets.Bytes(b)
	}
	return rs.serverSecrets.Bytes(b)
}

// Status is run id's status: queued or running while this server goes on
// with it, cancelled when a caller cancelled it, else its completion
// reason (interrupted for a run that has not finished and does not run
// here). reason is the run's saved completion reason.
func (rs *Runs) status(id, reason string) string {
	rs.mu.Lock()
	a := rs.active[id]
	st := ""
	if a != nil {
		st = a.status
		if a.user {
			st = StatusCancelled
		}
	}
	rs.mu.Unlock()
	if st != "" {
		return st
	}
	if m := rs.j.meta(id); m != nil && m.Cancelled {
		return StatusCancelled
	}
	if reason == "" || reason == engine.Cancelled {
		return StatusInterrupted
	}
	return reason
}

// await waits until run id, if it goes on in this server, ends or
// suspends, for d at most (or until ctx is done), and returns it (nil when
// it does not go on here).
func (rs *Runs) await(ctx context.Context, id string, d time.Duration) *active {
	rs.mu.Lock()
	a := rs.active[id]
	rs.mu.Unlock()
	if a != nil && d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-a.done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return a
}

// Wait waits until run id ends or suspends, for d at most (or until ctx is
// done), and returns its status then.
func (rs *Runs) Wait(ctx context.Context, id string, d time.Duration) (string, error) {
	rs.await(ctx, id, d)
	info, err := rs.info(id)
	if err != nil {
		return "", err
	}
	return rs.status(id, info.CompletionReason), nil
}

// info is run id's row.
func (rs *Runs) info(id string) (*store.RunInfo, error) {
	if !runIDPattern.MatchString(id) {
		return nil, errorf(CodeNotFound, "no run %q", id)
	}
	rs.rd.Hold()
	r, err := rs.rd.Run(id)
	rs.rd.Release()
	if errors.Is(err, store.ErrNoRun) {
		return nil, errorf(CodeNotFound, "no run %q", id)
	}
	return r, err
}

// runs lists the runs of the state database.
func (rs *Runs) runs() ([]*store.RunInfo, error) {
	rs.rd.Hold()
	defer rs.rd.Release()
	return rs.rd.Runs()
}

// RunSummary is a run as GET /v1/runs lists it.
type RunSummary struct {
	ID               string    `json:"run_id"`
	Ensemble         string    `json:"ensemble"`
	Status           string    `json:"status"`
	CompletionReason string    `json:"completion_reason"`
	Turns            int       `json:"turn_count"`
	Started          time.Time `json:"started_at"`
	Saved            time.Time `json:"saved_at"`
	Parent           string    `json:"parent,omitempty"`
	ParentTurn       int       `json:"parent_turn,omitempty"`
}

// List lists the runs of the state database in the order they were
// created: those of ensemble (""; any), whose status is status (""; any),
// after the run after (""; from the first), limit of them at most, and
// the id to list the next page after ("" at the end).
func (rs *Runs) List(ensembleName, status, after string, limit int) ([]RunSummary, string, error) {
	runs, err := rs.runs()
	if err != nil {
		return nil, "", err
	}
	if after != "" {
		i := slices.IndexFunc(runs, func(r *store.RunInfo) bool { return r.ID == after })
		if i < 0 {
			return nil, "", errorf(CodeBadRequest, "after: no run %q", after)
		}
		runs = runs[i+1:]
	}
	out := []RunSummary{}
	for i, r := range runs {
		if len(out) == limit {
			return out, runs[i-1].ID, nil
		}
		st := rs.status(r.ID, r.CompletionReason)
		if ensembleName != "" && r.Ensemble != ensembleName || status != "" && st != status {
			continue
		}
		out = append(out, RunSummary{ID: r.ID, Ensemble: r.Ensemble, Status: st, CompletionReason: r.CompletionReason,
			Turns: r.Turns, Started: r.Started, Saved: r.Saved, Parent: r.Parent, ParentTurn: r.ParentTurn})
	}
	return out, "", nil
}

// Result is run id's result as of its last saved turn, written as `ensemble
// run --output json` and `state show` write it (engine.Result.WriteJSON),
// redacted, and its status.
func (rs *Runs) Result(id string) (result []byte, status string, err error) {
	res, status, err := rs.RunResult(id)
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		return nil, "", err
	}
	return rs.redactBytes(buf.Bytes()), status, nil
}

// RunResult is run id's result as Result writes it, as a value (its final
// state, usage, what it waits for: PendingInput), and its status. What a
// front door shows of it goes through Redact.
func (rs *Runs) RunResult(id string) (*engine.Result, string, error) {
	info, err := rs.info(id)
	if err != nil {
		return nil, "", err
	}
	rs.rd.Hold()
	sf, err := rs.rd.Load(info)
	rs.rd.Release()
	if err != nil {
		return nil, "", err
	}
	return rs.resultOf(sf, info), rs.status(id, sf.CompletionReason), nil
}

// Redact is s with the key of every served ensemble's profiles redacted.
func (rs *Runs) Redact(s string) string { return rs.redact(s) }

// resultOf is the result of a saved run, as state show builds it.
func (rs *Runs) resultOf(sf *state.File, info *store.RunInfo) *engine.Result {
	return durable.ResultOf(rs.ensembleOf(sf), sf, info)
}

// ensembleOf is the ensemble of a saved run: the served one of its file,
// or its file as it loads now; nil when it does not load.
func (rs *Runs) ensembleOf(sf *state.File) *ensemble.Ensemble {
	for _, s := range rs.list {
		if s.e.Path == sf.Ensemble.Path {
			return s.e
		}
	}
	e, err := session.Load(sf.Ensemble.Path, nil, session.LoadOptions{Profiles: sf.Profiles, LookupEnv: rs.o.LookupEnv})
	if err != nil {
		return nil
	}
	return e
}

// Events are run id's events after sequence number after, each the JSON
// of an event as `--output jsonl` prints it, the sequence number of the
// first, whether the run goes on in this server (more may come), and a
// channel closed when more come.
func (rs *Runs) Events(id string, after int) (evs [][]byte, first int, live bool, more <-chan struct{}, err error) {
	if _, err := rs.info(id); err != nil {
		return nil, 0, false, nil, err
	}
	rs.mu.Lock()
	live = rs.active[id] != nil
	rs.mu.Unlock()
	evs, first, more = rs.j.log(id).after(after)
	return evs, first, live, more, nil
}

// claim marks run id as being given an answer, a cancel or a fork, so
// that a second one at once is refused (the first wins); release undoes
// it.
func (rs *Runs) claim(id, what string) (release func(), err error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closing {
		return nil, errorf(CodeClosing, "the server is shutting down: try again once it is back")
	}
	if a := rs.active[id]; a != nil {
		return nil, errorf(CodeConflict, "run %s is %s: it waits for no answer now (an answer was given already, or it has not suspended)", id, a.status)
	}
	if rs.claimed[id] {
		return nil, errorf(CodeConflict, "run %s is being %s by another request: the first wins", id, what)
	}
	rs.claimed[id] = true
	return func() {
		rs.mu.Lock()
		delete(rs.claimed, id)
		rs.mu.Unlock()
	}, nil
}

// recover goes on with every run of the state database that has not
// finished and was not cancelled by a caller: a server killed mid-run
// continues each from its last saved turn. Runs that wait for an answer
// stay as they are.
func (rs *Runs) recover() {
	rs.resumeDeliveries() // outbox.go
	runs, err := rs.runs()
	if err != nil {
		rs.logf("listing the runs to go on with: %s", err)
		return
	}
	for _, r := range runs {
		if r.CompletionReason != "" && r.CompletionReason != engine.Cancelled {
			continue
		}
		if m := rs.j.meta(r.ID); m != nil && (m.Cancelled || m.EngineRefused != "") {
			continue
		}
		saved, err := rs.open(r.ID)
		if err != nil {
			rs.logf("run %s does not go on: %s", r.ID, rs.redact(err.Error()))
			continue
		}
		goOn := func() error { return rs.goOn(saved, nil, false, nil) }
		if rs.o.Engine != nil {
			goOn = func() error { return rs.goOnRemote(saved, nil) } // engine.go
		}
		if err := goOn(); err != nil {
			rs.logf("run %s does not go on: %s", r.ID, rs.redact(err.Error()))
		}
	}
}

// Close stops starting runs, waits for the runs going on to end for grace
// at most, then interrupts those left (saved as they stand: they go on
// from their last saved turn when the server starts again) and waits for
// them and for webhook deliveries.
func (rs *Runs) Close(grace time.Duration) {
	rs.mu.Lock()
	if rs.closing {
		rs.mu.Unlock()
		return
	}
	rs.closing = true
	close(rs.stop)
	rs.mu.Unlock()
	done := make(chan struct{})
	go func() { rs.wg.Wait(); close(done) }()
	if rs.o.Engine != nil {
		grace = 0 // the engine's runs go on without this process (engine.go)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	rs.cancel()
	<-done
	rs.work.close()
	rs.closeSessions()
	rs.rd.Hold()
	rs.rd.Close()
	rs.rd.Release()
	rs.wdb.Hold()
	rs.wdb.Close()
	rs.wdb.Release()
	rs.j.close()
}
