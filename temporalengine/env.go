//go:build !notemporal

package temporalengine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
)

// Env is what a worker runs ensembles with: how it loads a file and the
// session its agents' executions run in (package session, as every front
// door's runs). The zero Env loads with the built-in kinds and runs agents
// as `ensemble run --no-input --state` does, with the process's
// environment; Close ends the MCP servers its sessions started.
type Env struct {
	// LookupEnv reads the environment (API keys, ENSEMBLE_PROFILES); nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Runner, when set, runs the agents of every kind in place of the
	// kinds' own runners (a test's fake agents); injected responses still
	// come first.
	Runner agent.Runner

	mu       sync.Mutex
	loaded   map[string]*loadedFile // by path, profiles and sha256
	sessions map[string]*session.Session
}

type loadedFile struct {
	e *ensemble.Ensemble
}

func (env *Env) lookup(k string) (string, bool) {
	if env.LookupEnv != nil {
		return env.LookupEnv(k)
	}
	return os.LookupEnv(k)
}

// ChangedFileError is a file whose contents are not those the run was
// started with: a worker never runs a different workflow under the run's
// name.
type ChangedFileError struct{ Path, Want, Got string }

func (e *ChangedFileError) Error() string {
	return fmt.Sprintf("the ensemble file %s is not the one the run was started with (sha256 %.12s…, here %.12s…)", e.Path, e.Want, e.Got)
}

// load loads the ensemble file at path, once per process for the same
// contents, and refuses one whose sha256 is not want.
func (env *Env) load(path, want string, profiles []string) (*loadedFile, error) {
	key := path + "\x00" + strings.Join(profiles, "\x00") + "\x00" + want
	env.mu.Lock()
	defer env.mu.Unlock()
	if f := env.loaded[key]; f != nil {
		return f, nil
	}
	e, err := session.Load(path, nil, session.LoadOptions{Profiles: profiles, LookupEnv: env.lookup})
	if err != nil {
		return nil, err
	}
	if e.Hash != want {
		return nil, &ChangedFileError{Path: path, Want: want, Got: e.Hash}
	}
	f := &loadedFile{e: e}
	if env.loaded == nil {
		env.loaded = map[string]*loadedFile{}
	}
	env.loaded[key] = f
	return f, nil
}

// session is the session of f's executions with the injected responses
// and live agents in: opened once per worker (its MCP servers started then,
// and kept until Close).
func (env *Env) session(ctx context.Context, f *loadedFile, in *ExecInput) (*session.Session, error) {
	key := fmt.Sprintf("%p\x00%s\x00%s\x00%t\x00%t", f, in.Responses, strings.Join(in.Live, "\x00"), in.LiveAll, in.Batch)
	env.mu.Lock()
	defer env.mu.Unlock()
	if s := env.sessions[key]; s != nil {
		return s, nil
	}
	opts, err := env.options(in)
	if err != nil {
		return nil, err
	}
	// The servers outlive the activity that starts them: every execution
	// of the file on this worker uses them.
	s, err := session.Open(context.WithoutCancel(ctx), f.e, opts)
	if err != nil {
		return nil, err
	}
	if env.sessions == nil {
		env.sessions = map[string]*session.Session{}
	}
	env.sessions[key] = s
	return s, nil
}

// options are the session options of the executions of in, as `ensemble
// run --no-input --state` (or a batch's) with its --responses and --live
// flags.
func (env *Env) options(in *ExecInput) (session.Options, error) {
	opts := session.Options{
		LookupEnv: env.lookup,
		Ask:       ask.Options{Suspend: !in.Batch, Batch: in.Batch, NoInput: true},
		Models:    session.Models{Live: in.Live, LiveAll: in.LiveAll},
	}
	if env.Runner != nil {
		reg := kinds.Builtin()
		opts.Replace = map[string]agent.Runner{}
		for _, k := range reg.Kinds() {
			opts.Replace[k.String()] = env.Runner
		}
	}
	if in.Responses != "" {
		resp, err := responses.LoadResponses(in.Responses)
		if err != nil {
			return opts, err
		}
		opts.Models.Responses, opts.Models.ResponsesFile = resp, in.Responses
	}
	return opts, nil
}

// Close ends the MCP servers the worker's sessions started.
func (env *Env) Close() error {
	env.mu.Lock()
	defer env.mu.Unlock()
	for k, s := range env.sessions {
		s.Close()
		delete(env.sessions, k)
	}
	return nil
}
