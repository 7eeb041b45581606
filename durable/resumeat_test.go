package durable_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// Resume finds, locks and prepares a saved run in one call: a run id or a
// fork asked of a JSON state file is refused first, and a run that
// Prepare refuses is let go (another Resume finds it).
func TestResumeAt(t *testing.T) {
	t.Parallel()
	dir, e := releaseEnsemble(t)
	resp := responses.NewResponses()
	resp.AddText("writer", "A note.")
	resp.AddText("publisher", "Published.")
	opts := session.Options{Models: session.Models{Responses: resp}, Ask: ask.Options{Suspend: true}, LookupEnv: noEnv}
	ctx := context.Background()
	waiting := func(path string) {
		t.Helper()
		c, err := durable.New(e, "", durable.NewOptions{Path: path, Sync: store.SyncNormal})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Start(ctx, opts, session.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.Run(ctx)
		st.Close()
		if err != nil || res.CompletionReason != engine.AwaitingInput {
			t.Fatalf("run: %+v, %v", res, err)
		}
	}
	db, js := filepath.Join(dir, "runs.db"), filepath.Join(dir, "run.json")
	waiting(db)
	sf, _, err := durable.Load(db, "")
	if err != nil {
		t.Fatal(err)
	}
	data, err := state.Marshal(sf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(js, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rf := filepath.Join(dir, "responses.yaml")
	if err := os.WriteFile(rf, []byte("publisher: [Published.]\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, at := range []durable.At{{Path: js, ID: "x"}, {Path: js, Fork: true}} {
		var je *durable.JSONFileError
		if _, err := durable.Resume(at, durable.ResumeOptions{}); !errors.As(err, &je) || je.Fork != at.Fork || je.Path != js {
			t.Errorf("%+v: %v, want a *JSONFileError", at, err)
		}
	}
	o := durable.ResumeOptions{LookupEnv: noEnv, Responses: rf, Answers: map[string]string{"publisher": "no"}}
	if _, err := durable.Resume(durable.At{Path: db, Sync: store.SyncNormal}, o); !errors.As(err, new(*durable.AnswerError)) {
		t.Fatalf("an answer for an agent that does not wait: %v", err)
	}
	o.Answers = map[string]string{"approver": `{"approved": true}`}
	p, err := durable.Resume(durable.At{Path: db, Sync: store.SyncNormal}, o)
	if err != nil {
		t.Fatalf("the run was not let go: %v", err)
	}
	defer p.Saved.Close()
	sess, r, err := p.Start(ctx, opts, session.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if res, err := r.Run(ctx); err != nil || res.CompletionReason != engine.Completed {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	// A fork of the database's run, from its input.
	f, err := durable.Resume(durable.At{Path: db, ID: p.Saved.Info.ID, Fork: true, Sync: store.SyncNormal}, durable.ResumeOptions{LookupEnv: noEnv})
	if err != nil || !f.Saved.IsFork() {
		t.Fatalf("a fork: %v", err)
	}
	f.Saved.Close()
}
