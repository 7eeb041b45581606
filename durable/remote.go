package durable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/session"
)

// Temporal names the Temporal cluster that plays a run instead of this
// process, its workers running the agents (docs/temporal.md): a new run's
// NewOptions.Temporal, a batch's. The zero value (no Addr): the run is
// played here.
type Temporal struct {
	Addr      string // the cluster's frontend, HOST:PORT
	Namespace string
	TaskQueue string
	// Blobs is the folder, shared by every worker and client, through
	// which payloads over 512 KiB go by reference; "": none.
	Blobs string
}

// On says whether the run is played on Temporal.
func (t Temporal) On() bool { return t.Addr != "" }

// RemoteSpec is what the runs an engine plays elsewhere start with beside
// their input: the ensemble, the files and overrides they are started
// with, the models they may call.
type RemoteSpec struct {
	Ensemble *ensemble.Ensemble
	Refs     Refs // Responses and Profiles
	Limits   session.Limits
	Live     []string
	LiveAll  bool
	// Batch marks the runs of a batch, whose ask agents never ask nor
	// wait.
	Batch bool
}

// Player plays runs on another engine (OpenTemporal).
type Player interface {
	// Play plays run id with input (redacted already: the engine's state
	// must not depend on a worker's keys) to its end, sink receiving its
	// events as they come (nil: none). It returns the run's result, that
	// result's JSON as a local run writes it, and its exit code.
	Play(ctx context.Context, id, input string, sink events.Sink) (*engine.Result, []byte, int, error)
	Close() error
}

// RefusedError is a run that the engine cannot play as this process
// would (the ensemble uses what its workers do not run, a file it cannot
// read): nothing started.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// DialError is a cluster that could not be reached.
type DialError struct {
	Addr string
	Err  error
}

func (e *DialError) Error() string { return fmt.Sprintf("temporal %s: %v", e.Addr, e.Err) }
func (e *DialError) Unwrap() error { return e.Err }

// The runs a Temporal cluster does not play, each refused before it
// starts (the front door names its flags).
var (
	// ErrTemporalSaved: a run on Temporal is durable already, not saved
	// in a state file too (NewOptions.Path).
	ErrTemporalSaved = errors.New("a run on Temporal is durable already")
	// ErrTemporalRecorded: its workers neither record nor replay.
	ErrTemporalRecorded = errors.New("a run on Temporal is neither recorded nor replayed")
	// ErrTemporalStrict: it does not end on warnings (Checks.Strict).
	ErrTemporalStrict = errors.New("a run on Temporal does not end on warnings")
	// ErrTemporalBudget: it has no budget (Limits.Budget): each
	// execution is an activity, not capped mid-turn.
	ErrTemporalBudget = errors.New("a run on Temporal has no budget")
)

var (
	temporalMu   sync.Mutex
	temporalOpen func(spec RemoteSpec, t Temporal) (Player, error)
)

// RegisterTemporal makes open the Temporal engine of this program, which
// OpenTemporal calls: package temporalengine registers itself as it
// initialises, so a program that imports it plays runs on Temporal. open
// checks spec first (a *RefusedError), then dials the cluster (a
// *DialError).
func RegisterTemporal(open func(spec RemoteSpec, t Temporal) (Player, error)) {
	temporalMu.Lock()
	defer temporalMu.Unlock()
	temporalOpen = open
}

// OpenTemporal is the player of spec's runs on the cluster t names; its
// errors: ErrNoTemporal in a program without the engine,
// ErrTemporalBudget for a budget, a *RefusedError, a *DialError.
func OpenTemporal(spec RemoteSpec, t Temporal) (Player, error) {
	temporalMu.Lock()
	open := temporalOpen
	temporalMu.Unlock()
	if open == nil {
		return nil, ErrNoTemporal
	}
	if spec.Limits.Budget != nil {
		return nil, ErrTemporalBudget
	}
	return open(spec, t)
}

// HasTemporal says whether this program has a Temporal engine.
func HasTemporal() bool {
	temporalMu.Lock()
	defer temporalMu.Unlock()
	return temporalOpen != nil
}

// remoteRun is a new run on Temporal, which Start opened.
type remoteRun struct {
	player Player
	id     string
	input  string
	sink   events.Sink
	json   []byte
	code   int
}

// newID is the id of a new run of e on Temporal that was given none.
func newID(e *ensemble.Ensemble) string {
	return fmt.Sprintf("%s-%d", e.Name, time.Now().UnixNano())
}

// Started is a run that Creation.Start started: in the session it opened,
// or on Temporal (NewOptions.Temporal), whose cluster plays it. Run plays
// it; Close ends its session, or lets go of its cluster.
type Started struct {
	Session *session.Session // nil on Temporal
	run     *session.Run
	remote  *remoteRun
}

// Run plays the run to its end (session.Run.Run); on Temporal an error
// is the engine's: a run that could not start or be followed.
func (s *Started) Run(ctx context.Context) (*engine.Result, error) {
	if s.remote == nil {
		return s.run.Run(ctx)
	}
	rm := s.remote
	res, out, code, err := rm.player.Play(ctx, rm.id, rm.input, rm.sink)
	if err != nil {
		return nil, err
	}
	rm.json, rm.code = out, code
	return res, nil
}

// OnTemporal is the id of the run on Temporal; ok is false for a run in
// this process.
func (s *Started) OnTemporal() (id string, ok bool) {
	if s.remote == nil {
		return "", false
	}
	return s.remote.id, true
}

// WriteJSON writes the result of the run (once it has run) as a local run
// does (engine.Result.WriteJSON); on Temporal, as the workflow wrote it.
func (s *Started) WriteJSON(w io.Writer, res *engine.Result) error {
	if s.remote == nil {
		return res.WriteJSON(w)
	}
	_, err := w.Write(s.remote.json)
	return err
}

// ExitCode is the exit code of the run's result res (engine.ExitCodes);
// on Temporal, the workflow's.
func (s *Started) ExitCode(res *engine.Result) int {
	if s.remote == nil {
		return res.ExitCode()
	}
	return s.remote.code
}

// Close ends the run's session (closing its MCP servers, exporting its
// spans), or lets go of the cluster.
func (s *Started) Close() error {
	if s.remote != nil {
		return s.remote.player.Close()
	}
	return s.Session.Close()
}

// StartedIn is run r of session sess as a Started (a resumed run's,
// Resumption.Start).
func StartedIn(sess *session.Session, r *session.Run) *Started {
	return &Started{Session: sess, run: r}
}
