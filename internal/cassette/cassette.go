// Package cassette records the model exchanges, tool results and human
// answers of a run into a folder, one YAML file per agent, and serves them
// back on a later run (docs/recording.md). A recorded model exchange is
// found again by a hash of its normalised request, so a changed prompt is
// a miss, reported with the first message that differs from the closest
// recorded request.
//
// The package knows nothing of the kinds of agent: the LLM kind turns its
// requests into Request, and the ask kind its questions into text. A run
// lends its Cassette to its executions (agent.Services.Recording).
package cassette

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Mode is what a Cassette does.
type Mode int

const (
	// Record sends every request to the model and writes every exchange,
	// replacing the files of the agents that run.
	Record Mode = iota + 1
	// Replay serves every request from the recording; a request that is not
	// there fails.
	Replay
	// RecordMissing serves what the recording has and records what it lacks.
	RecordMissing
)

// Options configure a Cassette.
type Options struct {
	Dir  string
	Mode Mode
	// Tools records tool results too (Record, RecordMissing); recorded tool
	// results are served in every mode.
	Tools bool
	// Continue, with Record, keeps what the folder's files hold and adds
	// to them: a resumed run goes on recording where it stopped.
	Continue bool
}

// Cassette is a recording folder in use by a run. Safe for concurrent use.
type Cassette struct {
	opts  Options
	mu    sync.Mutex
	files map[string]*file // by agent path
	hits  int              // the responses Replayed served
}

// Replays is how many recorded responses the cassette has served: the
// model requests it answered in the model's place.
func (c *Cassette) Replays() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

// Open opens the recording folder: created for Record, required to exist
// otherwise. Its errors start with the folder.
func Open(opts Options) (*Cassette, error) {
	if opts.Dir == "" {
		return nil, errors.New("recording: no folder given")
	}
	switch opts.Mode {
	case Record:
		if err := os.MkdirAll(opts.Dir, 0o755); errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s: not a folder", opts.Dir)
		} else if err != nil {
			return nil, dirError(opts.Dir, err)
		}
	case Replay, RecordMissing:
		st, err := os.Stat(opts.Dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: the recording folder does not exist", opts.Dir)
		} else if errors.Is(err, syscall.ENOTDIR) || err == nil && !st.IsDir() {
			return nil, fmt.Errorf("%s: not a folder", opts.Dir)
		} else if err != nil {
			return nil, dirError(opts.Dir, err)
		}
		if opts.Mode == RecordMissing {
			if err := checkWritable(opts.Dir); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("recording: unknown mode %d", opts.Mode)
	}
	return &Cassette{opts: opts, files: map[string]*file{}}, nil
}

// dirError is err about the recording folder dir, which it starts with
// (a caller names the flag that gave it): "DIR: mkdir: permission denied".
func dirError(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s: %w", dir, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s: %w", dir, err)
}

func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".ensemble-check-*")
	if err != nil {
		return dirError(dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Mode is the cassette's mode.
func (c *Cassette) Mode() Mode { return c.opts.Mode }

// Dir is the recording folder.
func (c *Cassette) Dir() string { return c.opts.Dir }

// Path is the file that holds the recording of the agent at path.
func (c *Cassette) Path(agent string) string {
	return filepath.Join(c.opts.Dir, FileName(agent))
}

// Live reports whether a request the recording lacks goes to the model
// (Record, RecordMissing): only then are API keys needed.
func (c *Cassette) Live() bool { return c.opts.Mode != Replay }

// FileName is the file of the agent at path in a recording folder: the path
// with "/" as "." (names never hold a dot), an instance keeping its
// brackets: review_round/critic → review_round.critic.yaml,
// summarize[2] → summarize[2].yaml. Any other character is replaced by "_".
func FileName(path string) string {
	var b strings.Builder
	for _, r := range path {
		switch {
		case r == '/':
			b.WriteByte('.')
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '[', r == ']':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteString("_")
	}
	return b.String() + ".yaml"
}

// file returns the agent's file, loading it on first use (Record starts
// every agent's file afresh, but checks that what it replaces is a
// recording). Called with c.mu held.
func (c *Cassette) file(agent string) (*file, error) {
	if f, ok := c.files[agent]; ok {
		return f, nil
	}
	f := &file{path: c.Path(agent), Agent: agent}
	if err := f.load(); err != nil {
		if c.opts.Mode == Record {
			// Never overwrite what is not a recording (an ensemble file in
			// the same folder).
			return nil, fmt.Errorf("%w; record into a folder of its own", err)
		}
		return nil, err
	}
	if c.opts.Mode == Record && !c.opts.Continue {
		f.Exchanges, f.Tools, f.Answers = nil, nil, nil // recorded afresh
	}
	f.index()
	c.files[agent] = f
	return f, nil
}

// Replayed is the recorded response to req by agent (its path). It
// returns (nil, nil) when req must go to the model: always when recording,
// and on a miss with RecordMissing. A miss in Replay is a *MissError.
// Requests with the same hash are served their recordings in order, the
// last one again when there are more requests than recordings.
func (c *Cassette) Replayed(agent string, req *Request) (*Response, error) {
	if c.opts.Mode == Record {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.file(agent)
	if err != nil {
		return nil, err
	}
	n := f.served
	f.served++
	if x := f.take(hashOf(req)); x != nil {
		c.hits++
		resp := x.Response
		return &resp, nil
	}
	if c.opts.Mode == RecordMissing {
		return nil, nil
	}
	return nil, f.miss(req, n)
}

// Record adds an exchange of agent and writes the agent's file, with
// every string of the exchange passed through redact (nil: none).
func (c *Cassette) Record(agent string, req *Request, resp *Response, redact func(string) string) error {
	if c.opts.Mode == Replay {
		return nil
	}
	x := Exchange{Request: *req, Response: *resp}
	x.redact(redact)
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.file(agent)
	if err != nil {
		return err
	}
	f.Exchanges = append(f.Exchanges, x)
	f.addHash(len(f.Exchanges) - 1)
	return f.add(kindExchanges, sections{Exchanges: []Exchange{x}})
}

// Tool is the recorded result of agent's call of tool with args, if the
// recording has one (ok false otherwise, and always when recording).
func (c *Cassette) Tool(agent, tool, args string) (res ToolResult, ok bool, err error) {
	if c.opts.Mode == Record {
		return ToolResult{}, false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.file(agent)
	if err != nil {
		return ToolResult{}, false, err
	}
	r := f.takeTool(tool, canonicalJSON(args))
	if r == nil {
		return ToolResult{}, false, nil
	}
	return *r, true, nil
}

// RecordTool adds a tool result of agent when the cassette records tools.
func (c *Cassette) RecordTool(agent string, res ToolResult, redact func(string) string) error {
	if !c.opts.Tools || c.opts.Mode == Replay {
		return nil
	}
	res.Result = apply(redact, res.Result)
	res.Arguments = apply(redact, res.Arguments)
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.file(agent)
	if err != nil {
		return err
	}
	f.Tools = append(f.Tools, res)
	return f.add(kindTools, sections{Tools: []ToolResult{res}})
}

// Answer is the recorded answer of agent to question. ok is false when the
// question must be asked (recording, or a miss with RecordMissing); a miss
// in Replay is a *MissError.
func (c *Cassette) Answer(agent, question string) (answer string, ok bool, err error) {
	if c.opts.Mode == Record {
		return "", false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.file(agent)
	if err != nil {
		return "", false, err
	}
	if a := f.takeAnswer(question); a != nil {
		return a.Answer, true, nil
	}
	if c.opts.Mode == RecordMissing {
		return "", false, nil
	}
	return "", false, f.answerMiss(question)
}

// RecordAnswer adds a human answer of agent.
func (c *Cassette) RecordAnswer(agent, question, answer string) error {
	if c.opts.Mode == Replay {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.file(agent)
	if err != nil {
		return err
	}
	a := Answer{Question: question, Answer: answer}
	f.Answers = append(f.Answers, a)
	return f.add(kindAnswers, sections{Answers: []Answer{a}})
}

func apply(redact func(string) string, s string) string {
	if redact == nil || s == "" {
		return s
	}
	return redact(s)
}
