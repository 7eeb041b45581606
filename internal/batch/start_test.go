package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// fakePlayer is a Temporal engine that plays nothing: it keeps the runs
// it is asked for.
type fakePlayer struct {
	spec   durable.RemoteSpec
	mu     sync.Mutex
	played map[string]string // input by run id
	closed bool
}

func (p *fakePlayer) Play(_ context.Context, id, input string, _ events.Sink) (*engine.Result, []byte, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.played[id] = input
	return &engine.Result{CompletionReason: engine.Completed}, nil, 0, nil
}

func (p *fakePlayer) Close() error { p.closed = true; return nil }

func loadRelease(t *testing.T, env func(string) (string, bool)) *ensemble.Ensemble {
	t.Helper()
	e, err := session.Load(filepath.Join("..", "..", "session", "testdata", "release.yaml"), nil, session.LoadOptions{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Start chooses the Temporal engine when the options name a cluster:
// each input a run of the batch's id and its position, its input
// redacted, its ask agents never asking; a batch saved or strict is
// refused, and a program without the engine says so. (Not in parallel: it swaps the
// program's engine.)
func TestStartOnTemporal(t *testing.T) {
	var p *fakePlayer
	durable.RegisterTemporal(func(spec durable.RemoteSpec, _ durable.Temporal) (durable.Player, error) {
		p = &fakePlayer{spec: spec, played: map[string]string{}}
		return p, nil
	})
	defer durable.RegisterTemporal(nil)
	env := func(k string) (string, bool) {
		if k == "OPENAI_API_KEY" {
			return "sk-secret-value-1234", true
		}
		return "", false
	}
	e := loadRelease(t, env)
	on := durable.Temporal{Addr: "127.0.0.1:7233"}
	ctx := context.Background()
	if _, err := Start(ctx, e, Options{State: "b.db", Temporal: on}); !errors.Is(err, durable.ErrTemporalSaved) {
		t.Errorf("a saved batch on Temporal: %v", err)
	}
	strict := session.Options{Checks: session.Checks{Strict: true}, LookupEnv: env}
	if _, err := Start(ctx, e, Options{Temporal: on, Session: strict}); !errors.Is(err, durable.ErrTemporalStrict) {
		t.Errorf("a strict batch on Temporal: %v", err)
	}
	st, err := Start(ctx, e, Options{Temporal: on, Session: session.Options{LookupEnv: env}, Refs: durable.Refs{Responses: "r.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.OnTemporal, "release-batch-") || st.Store != nil || !p.spec.Batch || p.spec.Refs.Responses != "r.yaml" {
		t.Fatalf("started %+v with %+v", st, p.spec)
	}
	for i, in := range []string{"one", "key sk-secret-value-1234"} {
		if _, err := st.RunOne(ctx, &Input{Index: i, Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.played) != 2 || p.played[st.OnTemporal+"-1"] != "one" || strings.Contains(p.played[st.OnTemporal+"-2"], "sk-secret") {
		t.Errorf("played %q", p.played)
	}
	st.Close()
	if !p.closed {
		t.Error("Close did not let go of the cluster")
	}

	durable.RegisterTemporal(nil)
	if _, err := Start(ctx, e, Options{Temporal: on}); !errors.Is(err, durable.ErrNoTemporal) {
		t.Errorf("without the engine: %v", err)
	}
}

// In this process, Start loads the injected responses, opens the runs'
// session, and with State creates the batch, refusing an id its database
// holds (a *CreateError).
func TestStartHere(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	e := loadRelease(t, noEnv)
	dir := t.TempDir()
	resp := filepath.Join(dir, "responses.yaml")
	if err := os.WriteFile(resp, []byte("writer: [a note]\napprover: [{approved: true}]\npublisher: [done]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := session.Options{LookupEnv: noEnv, Ask: ask.Options{Batch: true}}
	refs := durable.Refs{Responses: resp}
	spec, err := NewSpec(e, resp, "sum", "-", refs, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "b.db")
	o := Options{Session: opts, Refs: refs, State: db, ID: "nightly", Spec: spec, Sync: store.SyncNormal}
	ctx := context.Background()
	st, err := Start(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	if st.Store == nil || st.Store.ID() != "nightly" || st.OnTemporal != "" {
		t.Fatalf("started %+v", st)
	}
	res, err := st.RunOne(ctx, &Input{Index: 0, Input: "x"})
	if err != nil || res.CompletionReason != engine.Completed {
		t.Fatalf("a run: %+v, %v", res, err)
	}
	st.Close()
	if _, err := Start(ctx, e, o); !errors.As(err, new(*CreateError)) || !errors.As(err, new(*ExistsError)) {
		t.Errorf("a batch id taken: %v", err)
	}
	bad := o
	bad.Refs.Responses = filepath.Join(dir, "none.yaml")
	if _, err := Start(ctx, e, bad); !errors.As(err, new(*durable.OpenError)) {
		t.Errorf("responses that do not load: %v", err)
	}
}
