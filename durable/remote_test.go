package durable_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/session"
)

// fakePlayer is a Temporal engine that plays nothing: it keeps what it is
// asked and answers a fixed result.
type fakePlayer struct {
	spec   durable.RemoteSpec
	t      durable.Temporal
	played []string // id and input of each run
	closed bool
}

func (p *fakePlayer) Play(_ context.Context, id, input string, sink events.Sink) (*engine.Result, []byte, int, error) {
	p.played = append(p.played, id, input)
	if sink != nil {
		sink(events.Event{Type: events.RunStarted})
	}
	return &engine.Result{CompletionReason: engine.MaxTotalTurns}, []byte(`{"from":"the workflow"}` + "\n"), 42, nil
}

func (p *fakePlayer) Close() error { p.closed = true; return nil }

// The tests of the Temporal engine's choice swap the program's engine:
// they do not run in parallel with one another.

func loadRelease(t *testing.T) *ensemble.Ensemble {
	t.Helper()
	e, err := session.Load("../session/testdata/release.yaml", nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Without an engine in the program, a run on Temporal is refused first,
// whatever else it asks.
func TestNewOnTemporalWithoutTheEngine(t *testing.T) {
	defer durable.SwapTemporal(nil)()
	e := loadRelease(t)
	_, err := durable.New(e, "", durable.NewOptions{Path: t.TempDir() + "/runs.db", Temporal: durable.Temporal{Addr: "127.0.0.1:1"}})
	if !errors.Is(err, durable.ErrNoTemporal) || !strings.Contains(err.Error(), "no Temporal engine") {
		t.Fatalf("New: %v, want ErrNoTemporal", err)
	}
	if _, err := durable.OpenTemporal(durable.RemoteSpec{Ensemble: e}, durable.Temporal{Addr: "x"}); !errors.Is(err, durable.ErrNoTemporal) {
		t.Fatalf("OpenTemporal: %v, want ErrNoTemporal", err)
	}
}

// With an engine, New and Start choose it when the options name a
// cluster: the run is played there, with its input redacted, its id, and
// the workflow's own JSON and exit code; what the cluster does not play
// is refused.
func TestNewOnTemporal(t *testing.T) {
	var p *fakePlayer
	defer durable.SwapTemporal(func(spec durable.RemoteSpec, tc durable.Temporal) (durable.Player, error) {
		if tc.Addr == "refuse" {
			return nil, &durable.RefusedError{Err: errors.New("no such thing")}
		}
		p = &fakePlayer{spec: spec, t: tc}
		return p, nil
	})()
	e := loadRelease(t)
	on := durable.Temporal{Addr: "127.0.0.1:7233", Namespace: "ns", TaskQueue: "q"}
	env := func(k string) (string, bool) {
		if k == "OPENAI_API_KEY" {
			return "sk-secret-value-1234", true
		}
		return "", false
	}
	ctx := context.Background()

	for _, c := range []struct {
		name string
		o    durable.NewOptions
		want error
	}{
		{"saved", durable.NewOptions{Path: "runs.db", Temporal: on}, durable.ErrTemporalSaved},
		{"recorded", durable.NewOptions{Recording: session.Recording{Record: "rec"}, Temporal: on}, durable.ErrTemporalRecorded},
		{"replayed", durable.NewOptions{Recording: session.Recording{Replay: "rec"}, Temporal: on}, durable.ErrTemporalRecorded},
	} {
		if _, err := durable.New(e, "", c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: New: %v, want %v", c.name, err, c.want)
		}
	}
	c, err := durable.New(e, "", durable.NewOptions{Temporal: on})
	if err != nil || !c.OnTemporal() {
		t.Fatalf("New: %v", err)
	}
	for _, o := range []struct {
		opts session.Options
		want error
	}{
		{session.Options{Checks: session.Checks{Strict: true}}, durable.ErrTemporalStrict},
		{session.Options{Limits: session.Limits{Budget: &ensemble.Budget{MaxTokens: 5}}}, durable.ErrTemporalBudget},
	} {
		if _, err := c.Start(ctx, o.opts, session.RunOptions{}); !errors.Is(err, o.want) {
			t.Errorf("Start: %v, want %v", err, o.want)
		}
	}
	refused, _ := durable.New(e, "", durable.NewOptions{Temporal: durable.Temporal{Addr: "refuse"}})
	if _, err := refused.Start(ctx, session.Options{}, session.RunOptions{}); !errors.As(err, new(*durable.RefusedError)) {
		t.Errorf("a refusal of the engine: %v", err)
	}

	c, _ = durable.New(e, "the key is sk-secret-value-1234", durable.NewOptions{ID: "nightly", Temporal: on,
		Refs: durable.Refs{Responses: "r.yaml", Profiles: []string{"p.yaml"}}})
	var got []events.Event
	st, err := c.Start(ctx, session.Options{LookupEnv: env, Limits: session.Limits{MaxTurns: 3}, Models: session.Models{Live: []string{"writer"}}},
		session.RunOptions{Events: func(ev events.Event) { got = append(got, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := st.OnTemporal(); !ok || id != "nightly" || st.Session != nil {
		t.Fatalf("OnTemporal: %q, %v; session %v", id, ok, st.Session)
	}
	if p.t != on || p.spec.Ensemble != e || p.spec.Limits.MaxTurns != 3 || p.spec.Refs.Responses != "r.yaml" || len(p.spec.Live) != 1 || p.spec.Batch {
		t.Errorf("the engine was opened with %+v on %+v", p.spec, p.t)
	}
	res, err := st.Run(ctx)
	if err != nil || res.CompletionReason != engine.MaxTotalTurns || len(got) != 1 {
		t.Fatalf("Run: %+v, %v; events %v", res, err, got)
	}
	if len(p.played) != 2 || p.played[0] != "nightly" || strings.Contains(p.played[1], "sk-secret") || !strings.Contains(p.played[1], "the key is") {
		t.Errorf("played %q: want run nightly, its input redacted", p.played)
	}
	var out bytes.Buffer
	if err := st.WriteJSON(&out, res); err != nil || out.String() != `{"from":"the workflow"}`+"\n" || st.ExitCode(res) != 42 {
		t.Errorf("the result: %q, %v, exit %d: want the workflow's", out.String(), err, st.ExitCode(res))
	}
	st.Close()
	if !p.closed {
		t.Error("Close did not let go of the cluster")
	}

	// No id given: a new one, named for the ensemble.
	c, _ = durable.New(e, "", durable.NewOptions{Temporal: on})
	st, err = c.Start(ctx, session.Options{}, session.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := st.OnTemporal(); !strings.HasPrefix(id, "release-") || len(id) < len("release-")+10 {
		t.Errorf("a new id: %q", id)
	}
}
