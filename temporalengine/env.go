//go:build !notemporal

package temporalengine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/kinds"
	"github.com/ensemble-run/ensemble/runners"
)

// Env is what a worker runs ensembles with: how it loads a file and builds
// the runner of its agents. The zero Env loads with the built-in kinds and
// runs agents as `ensemble run --no-input` does, with the process's
// environment.
type Env struct {
	// LookupEnv reads the environment (API keys, ENSEMBLE_PROFILES); nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Runner, when set, replaces the built-in runner (a test's fake
	// agents); injected responses still wrap it.
	Runner runners.Runner

	mu     sync.Mutex
	loaded map[string]*loadedFile // by path, profiles and sha256
}

type loadedFile struct {
	e   *ensemble.Ensemble
	sec *secrets.Redactor
	run runners.Runner // nil until an activity needs it
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
	files := slices.Clone(profiles)
	if p, ok := env.lookup("ENSEMBLE_PROFILES"); ok && p != "" {
		files = append(files, p)
	}
	e, err := ensemble.Load(path, kinds.Builtin().Load(ensemble.LoadOptions{ProfileFiles: files, LookupEnv: env.lookup}))
	if err != nil {
		return nil, err
	}
	if e.Hash != want {
		return nil, &ChangedFileError{Path: path, Want: want, Got: e.Hash}
	}
	f := &loadedFile{e: e, sec: secrets.Of(e.Models, env.lookup)}
	if env.loaded == nil {
		env.loaded = map[string]*loadedFile{}
	}
	env.loaded[key] = f
	return f, nil
}

// runner is the runner of f's agents: built once, unless answers are given
// (an ask agent's execution that takes its answer).
func (env *Env) runner(f *loadedFile, responses string, answers map[string]string) (runners.Runner, error) {
	env.mu.Lock()
	cached := f.run
	env.mu.Unlock()
	if cached != nil && answers == nil {
		return cached, nil
	}
	var next runners.Runner = env.Runner
	var d *kinds.Dispatch
	if next == nil {
		d = kinds.Builtin().Runner(&agent.Host{LookupEnv: env.lookup, Suspend: true, NoInput: true, Answers: answers}, nil)
		next = d
	}
	r := next
	if responses != "" {
		resp, err := runners.LoadResponses(responses)
		if err != nil {
			return nil, err
		}
		if err := resp.Validate(f.e); err != nil {
			return nil, err
		}
		inj := runners.Injected(resp, next)
		if d != nil {
			inj.Simulate = d.Simulator()
		}
		r = inj
	}
	if answers == nil {
		env.mu.Lock()
		f.run = r
		env.mu.Unlock()
	}
	return r, nil
}
