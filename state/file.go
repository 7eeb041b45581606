package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/ensemble-run/ensemble/internal/filelock"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// The JSON state file format (docs/semantics.md#durable-runs): what
// `ensemble state export` prints, what earlier releases wrote with --state
// (rewritten whole after every turn, as `ensemble resume` still does for
// such a file), and a run of a state database (package store) as it
// loads.
const (
	FileFormat  = "ensemble-state" // the "format" field of every state file
	FileVersion = 1                // the only version this package reads and writes
)

// File is a state file: the ConversationState of a run as of its last
// completed turn, with what is needed to continue it the same way. It holds
// no secrets: files are named by path and hash, model profiles only name the
// environment variables of their keys, and nothing of the environment is
// recorded.
type File struct {
	Format  string    `json:"format"`   // FileFormat
	Version int       `json:"version"`  // FileVersion
	SavedAt time.Time `json:"saved_at"` // when it was written (UTC)

	// Ensemble is the ensemble file the run was started from.
	Ensemble FileRef `json:"ensemble"`
	// Responses is the injected responses file (--responses), if any.
	Responses *FileRef `json:"responses,omitempty"`
	// Profiles are the --profiles files (absolute paths). $ENSEMBLE_PROFILES
	// is not recorded: it is read from the environment again on resume.
	Profiles []string `json:"profiles,omitempty"`
	// Options are the command-line overrides of conversation_limits; zero
	// means "not overridden: the ensemble file's value".
	Options Options `json:"options"`

	// CompletionReason is how the run ended (completed, max_total_turns,
	// timeout, cancelled), or "" while it is still going (or was killed).
	CompletionReason string `json:"completion_reason"`

	// Parent is the run this one was forked from, and the turn it was
	// forked at (resume --from-turn); nil for a run that is no fork.
	Parent *Parent `json:"parent,omitempty"`

	// Stopped is what the run's last invocation reported of the turn it
	// cut short (a timeout, a budget, a cancellation), which is not in
	// State; nil when it cut none short.
	Stopped *Stopped `json:"stopped,omitempty"`

	// State is the ConversationState after the last completed turn
	// (turn_count 0: before the first). It includes the input, the agents'
	// memory (LLM conversations) and pending agent requests. The position
	// in injected responses is the agents' execution counts: execution N of
	// an agent takes response N.
	State *State `json:"state"`
}

// Stopped is what the last invocation of a run reported that its turns do
// not hold: of the turn it cut short, which was never committed
// (docs/semantics.md#turns), its executions, as its result's errors name
// them, and what their model requests spent; and the expectations it
// checked when it completed. It belongs to that invocation's result, not
// to the state: a resume plays the turn again (checks the expectations
// again), and the run's next end replaces it.
type Stopped struct {
	Errors []RunError `json:"errors,omitempty"`
	// Usage is what the turn's requests spent (they were made); nil when
	// they spent nothing.
	Usage *Usage `json:"usage,omitempty"`
	// UsageByAgent is Usage per agent, for the agents that spent any.
	UsageByAgent map[string]*Usage `json:"usage_by_agent,omitempty"`
	// Expectations are the run's expectations as its completion checked
	// them (docs/semantics.md#expectations); absent when it checked none.
	Expectations []Expectation `json:"expectations,omitempty"`
	// Deadlines are when the questions the run waits for stop waiting
	// (an ask agent's timeout:, docs/semantics.md#answers-that-time-out),
	// saved with the suspension; absent when none has a timeout.
	Deadlines []Deadline `json:"deadlines,omitempty"`
}

// Deadline is when the question of an ask agent stops waiting for its
// answer. It stands while the agent has not run since (its execution
// count is still Executions): a later question of the agent has a
// deadline of its own.
type Deadline struct {
	Agent      string    `json:"agent"`
	At         time.Time `json:"at"`
	Executions int       `json:"executions"`
}

// RunError is one entry of a run's result's errors
// (docs/cli.md#the-result): a failed execution, or an execution of a turn
// that was interrupted.
type RunError struct {
	TurnNumber int    `json:"turn_number"`
	AgentName  string `json:"agent_name"`
	Message    string `json:"message"`
	// Handled is a failure delivered through a failure edge to an agent
	// that then succeeded (docs/semantics.md#edges-that-fire-on-failure).
	Handled bool `json:"handled,omitempty"`
}

// Parent names the run a fork was started from (its id in its state
// database) and the turn of it the fork's first turns are a copy of.
type Parent struct {
	Run  string `json:"run_id"`
	Turn int    `json:"turn"`
}

// FileRef names a file and the sha256 of its contents when it was used.
type FileRef struct {
	Name   string `json:"name,omitempty"` // the ensemble's name
	Path   string `json:"path"`           // absolute
	SHA256 string `json:"sha256"`         // hex
}

// Options are the overrides of conversation_limits a run was started with.
type Options struct {
	MaxTurns       int     `json:"max_turns,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	Parallel       int     `json:"parallel,omitempty"`
	// The budget caps given on the command line (docs/semantics.md#budgets).
	MaxTokens   int     `json:"max_tokens,omitempty"`
	MaxRequests int     `json:"max_requests,omitempty"`
	MaxCost     float64 `json:"max_cost,omitempty"`
	// Recording is the recording the run was started with (--record or
	// --replay), so that a resumed run records or replays as it did.
	Recording *Recording `json:"recording,omitempty"`
}

// Recording is a run's recording folder (docs/recording.md).
type Recording struct {
	Dir   string `json:"dir"`  // absolute
	Mode  string `json:"mode"` // record, replay or record-missing
	Tools bool   `json:"tools,omitempty"`
}

// Timeout is TimeoutSeconds as a duration.
func (o Options) Timeout() time.Duration {
	return time.Duration(math.Round(o.TimeoutSeconds * float64(time.Second)))
}

// SetTimeout sets TimeoutSeconds from d.
func (o *Options) SetTimeout(d time.Duration) { o.TimeoutSeconds = d.Seconds() }

// HashFile returns the hex sha256 of a file's contents, as FileRef.SHA256
// and ensemble.Ensemble.Hash hold it.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Save writes f to path atomically: the JSON goes to a temporary file in the
// same directory, which is synced, renamed over path, and then the directory
// is synced. A reader, or a process killed at any moment, sees the previous
// complete file or the new one, never a mix. A symbolic link at path stays
// in place: the file it points to is replaced. Format, Version and SavedAt
// are filled in. The file is created with mode 0600: it holds the run's
// conversations.
func Save(path string, f *File) error {
	data, err := encode(f)
	if err != nil {
		return err
	}
	resolved, err := ResolvePath(path)
	if err != nil {
		return fmt.Errorf("saving the state to %s: %w", path, err)
	}
	return writeAtomic(resolved, data, func(tmp *os.File) error {
		if err := os.Rename(tmp.Name(), resolved); err != nil {
			return err
		}
		return tmp.Close()
	})
}

func encode(f *File) ([]byte, error) {
	if f == nil || f.State == nil {
		return nil, errors.New("saving the state: nothing to save")
	}
	f.SavedAt = time.Now().UTC()
	return Marshal(f)
}

// Marshal returns f in the state file format, as Save writes it (Format
// and Version filled in), but with f.SavedAt as it is: what `ensemble state
// export` prints of a run kept in a database.
func Marshal(f *File) ([]byte, error) {
	if f == nil || f.State == nil {
		return nil, errors.New("saving the state: nothing to save")
	}
	f.Format, f.Version = FileFormat, FileVersion
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("saving the state: %w", err)
	}
	return append(data, '\n'), nil
}

// writeAtomic writes data to a new temporary file beside path, syncs it and
// hands it to place, which puts it at path (and takes over the open file).
func writeAtomic(path string, data []byte, place func(tmp *os.File) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("saving the state: %w", err)
	}
	defer func() {
		if err != nil {
			filelock.UnlockWhole(tmp)
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("saving the state to %s: %w", path, err)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = place(tmp); err != nil {
		return err
	}
	// The rename is durable once the directory is synced. Some file systems
	// cannot sync a directory; the file itself is complete either way.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// FileError is a state file that cannot be used: missing, not JSON
// (corrupt or truncated), not a state file, of an unknown version, or
// inconsistent.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("state file %s: %v", e.Path, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// ErrUnknownVersion is wrapped by the error of Load for a version it cannot
// read.
var ErrUnknownVersion = errors.New("unknown state file version")

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// MaxFileSize is the largest JSON state file Load reads: far more than a
// run holds, but an endless file (a FIFO, a device) fails instead of
// exhausting the memory.
const MaxFileSize = 1 << 30

// Load reads a state file written by Save. Every problem is a *FileError
// with a message a user can act on; Load never panics on bad input.
func Load(path string) (*File, error) {
	data, err := readcap.ReadTextFile(path, MaxFileSize)
	if _, ok := errors.AsType[*readcap.TooLargeError](err); ok {
		err = fmt.Errorf("the file is %w, the limit of a JSON state file", err)
	}
	if _, ok := errors.AsType[*readcap.NotTextError](err); ok {
		err = fmt.Errorf("the file is %w: a JSON state file is text", err)
	}
	if err != nil {
		return nil, &FileError{path, unwrapPath(err)}
	}
	f, err := Parse(data)
	if err != nil {
		return nil, &FileError{path, err}
	}
	return f, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ErrEmptyFile is a state file with nothing in it: what a run killed as it
// created its state database leaves, before SQLite wrote a byte.
var ErrEmptyFile = errors.New("the file is empty: it holds no runs (a run stopped as it created the file saved none; run --state with this file starts a run in it)")

// Parse decodes and checks the contents of a state file (see Load).
func Parse(data []byte) (*File, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrEmptyFile
	}
	var head struct {
		Format  *string          `json:"format"`
		Version *json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not valid JSON, the file is corrupt or truncated: %v", err)
	}
	if head.Format == nil || *head.Format != FileFormat {
		return nil, fmt.Errorf("not an ensemble state file (it has no \"format\": %q)", FileFormat)
	}
	var version int
	if head.Version == nil || json.Unmarshal(*head.Version, &version) != nil {
		return nil, errors.New(`"version" is missing or not an integer`)
	}
	if version != FileVersion {
		return nil, fmt.Errorf("%w %d: this ensemble reads version %d (was it written by another release?)",
			ErrUnknownVersion, version, FileVersion)
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("corrupt: %v", err)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("corrupt: %v", err)
	}
	if err := f.State.consistent(); err != nil {
		return nil, err
	}
	return &f, nil
}

// Validate checks f as Parse checks a file it decoded: what a resumed run
// needs (paths, hashes, limits), and a state that a run could have saved
// (docs/semantics.md#durable-runs). It fills in the maps f.State lacks.
// The store of runs in a database (package store) calls it on every run
// it loads.
func (f *File) Validate() error {
	if err := f.check(); err != nil {
		return fmt.Errorf("corrupt: %v", err)
	}
	return f.State.consistent()
}

// check rejects what would make a resumed run misbehave, and fills in the
// maps that a hand-edited file may lack.
func (f *File) check() error {
	switch {
	case f.Ensemble.Path == "":
		return errors.New(`"ensemble.path" is missing`)
	case !hexHash.MatchString(f.Ensemble.SHA256):
		return errors.New(`"ensemble.sha256" is not a sha256`)
	case f.Responses != nil && (f.Responses.Path == "" || !hexHash.MatchString(f.Responses.SHA256)):
		return errors.New(`"responses" needs a path and a sha256`)
	case f.Options.MaxTurns < 0 || f.Options.Parallel < 0 || f.Options.TimeoutSeconds < 0 ||
		f.Options.MaxTokens < 0 || f.Options.MaxRequests < 0 || f.Options.MaxCost < 0 || math.IsNaN(f.Options.MaxCost) ||
		math.IsNaN(f.Options.TimeoutSeconds) || f.Options.TimeoutSeconds > math.MaxInt64/float64(time.Second):
		return errors.New(`"options" holds a negative or impossible limit`)
	case f.State == nil:
		return errors.New(`"state" is missing`)
	}
	s := f.State
	if s.TurnCount < 0 {
		return errors.New(`"state.turn_count" is negative`)
	}
	s.fill()
	for name, n := range s.executions {
		if n < 0 {
			return fmt.Errorf("the execution count of agent %q is negative", name)
		}
	}
	for name, n := range s.outputs {
		if n < 0 || n > s.executions[name] {
			return fmt.Errorf("agent %q has more outputs (%d) than executions (%d)", name, n, s.executions[name])
		}
	}
	for target, m := range s.edges {
		for dep, es := range m {
			if es == nil {
				delete(m, dep)
				continue
			}
			if es.Triggered < 0 || es.Consumed < 0 {
				return fmt.Errorf("the edge %s ← %s has negative counts", target, dep)
			}
		}
		if m == nil {
			delete(s.edges, target)
		}
	}
	for i, r := range s.history {
		if r == nil {
			return fmt.Errorf("history record %d is null", i+1)
		}
		if r.TurnNumber < 1 || r.TurnNumber > s.TurnCount {
			return fmt.Errorf("history record %d has turn %d, outside 1..%d", i+1, r.TurnNumber, s.TurnCount)
		}
	}
	for i, q := range s.pending {
		if q.Target == "" {
			return fmt.Errorf("pending request %d has no target", i+1)
		}
	}
	return nil
}
