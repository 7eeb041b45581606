package durable_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// New and Start are a new run in one call each: saved in a state database
// under the id asked for, or not saved at all; a session that does not
// open is an *OpenError, and the saving is let go (Abandon).
func TestNewRunStarts(t *testing.T) {
	t.Parallel()
	dir, e := releaseEnsemble(t)
	resp := responses.NewResponses()
	resp.AddText("writer", "A note.")
	opts := session.Options{Models: session.Models{Responses: resp}, Ask: ask.Options{Suspend: true}, LookupEnv: noEnv}
	db := filepath.Join(dir, "runs.db")

	c, err := durable.New(e, "", durable.NewOptions{Path: db, ID: "first", Sync: store.SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abandon()
	st, err := c.Start(context.Background(), opts, session.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.OnTemporal(); ok || st.Session == nil {
		t.Fatalf("a local run: on Temporal, or no session")
	}
	res, err := st.Run(context.Background())
	st.Close()
	if err != nil || res.CompletionReason != engine.AwaitingInput || c.Save().ID() != "first" {
		t.Fatalf("run: %v, %+v, id %q", err, res, c.Save().ID())
	}
	if _, info, err := durable.Load(db, "first"); err != nil || info.ID != "first" || info.Turns == 0 {
		t.Fatalf("the saved run: %+v, %v", info, err)
	}

	// Not saved: no Path.
	c, err = durable.New(e, "", durable.NewOptions{})
	if err != nil || c.Save() != nil {
		t.Fatalf("a run not saved: %v, %v", c, err)
	}
	c.Abandon() // nothing to let go
	// A session that does not open: an unknown --live agent.
	bad := opts
	bad.Models.Live = []string{"nobody"}
	if _, err := c.Start(context.Background(), bad, session.RunOptions{}); !errors.As(err, new(*durable.OpenError)) {
		t.Fatalf("a session that does not open: %v", err)
	}
}

// releaseEnsemble copies session's release ensemble into a new folder,
// dir, and loads it.
func releaseEnsemble(t *testing.T) (dir string, e *ensemble.Ensemble) {
	t.Helper()
	dir = t.TempDir()
	path := filepath.Join(dir, "release.yaml")
	data, err := os.ReadFile("../session/testdata/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err = session.Load(path, nil, session.LoadOptions{LookupEnv: noEnv}); err != nil {
		t.Fatal(err)
	}
	return dir, e
}
