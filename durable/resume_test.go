package durable_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

func noEnv(string) (string, bool) { return "", false }

// waitingRun saves, in a new database of a folder of its own, a run of
// the release ensemble (a copy) with injected responses from a file: it
// waits for the approver. It returns the database, the ensemble and the
// responses file.
func waitingRun(t *testing.T) (db, ens, resp string) {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("../session/testdata/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	db, ens, resp = filepath.Join(dir, "runs.db"), filepath.Join(dir, "release.yaml"), filepath.Join(dir, "responses.yaml")
	if err := os.WriteFile(ens, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resp, []byte("writer: [\"A note.\"]\npublisher: [\"Published.\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := session.Load(ens, nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	responses, err := responses.LoadResponsesFor(resp, e)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(context.Background(), e, session.Options{Models: session.Models{Responses: responses}, Ask: ask.Options{Suspend: true}, LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := durable.Create(db, "", durable.Refs{Responses: resp}, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Start("", session.RunOptions{Save: d, RunID: d.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Run(context.Background()); err != nil || res.CompletionReason != engine.AwaitingInput {
		t.Fatalf("the first run: %v %v", res.CompletionReason, err)
	}
	return db, ens, resp
}

// Prepare refuses what resume refuses, each with an error of its own type
// (a front door words it), and lets Force and an override through;
// Start then goes on with the run's saved responses and the answers.
func TestPrepareAndStart(t *testing.T) {
	t.Parallel()
	approve := map[string]string{"approver": `{"approved": true}`}
	for _, c := range []struct {
		name   string
		change func(ens, resp string) error // before the resume
		o      durable.ResumeOptions
		want   func(error) bool // nil: no error, the run completes
		forced int              // files that changed, let through
	}{
		{name: "answered", o: durable.ResumeOptions{Answers: approve}},
		{name: "an answer for an agent that does not wait", o: durable.ResumeOptions{Answers: map[string]string{"writer": "x"}},
			want: func(err error) bool { _, ok := errors.AsType[*durable.AnswerError](err); return ok }},
		{name: "the responses file changed", change: appendTo("resp"), o: durable.ResumeOptions{Answers: approve},
			want: func(err error) bool { _, ok := errors.AsType[*durable.ChangedFilesError](err); return ok }},
		{name: "the responses file changed, forced", change: appendTo("resp"), o: durable.ResumeOptions{Answers: approve, Force: true}, forced: 1},
		{name: "the ensemble file changed, forced", change: appendTo("ens"), o: durable.ResumeOptions{Answers: approve, Force: true}, forced: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, ens, resp := waitingRun(t)
			if c.change != nil {
				if err := c.change(ens, resp); err != nil {
					t.Fatal(err)
				}
			}
			saved, err := durable.Open(db, "", store.SyncNormal)
			if err != nil {
				t.Fatal(err)
			}
			defer saved.Close()
			c.o.LookupEnv = noEnv
			p, err := durable.Prepare(saved, c.o)
			if c.want != nil {
				if !c.want(err) {
					t.Fatalf("Prepare: %T %v", err, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if len(p.Changed) != c.forced {
				t.Errorf("changed files let through: %v, want %d", p.Changed, c.forced)
			}
			s, r, err := p.Start(context.Background(), session.Options{Ask: ask.Options{Suspend: true}, LookupEnv: noEnv}, session.RunOptions{})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer s.Close()
			res, err := r.Run(context.Background())
			if err != nil || res.CompletionReason != engine.Completed || res.FinalState["publisher"] != "Published." {
				t.Errorf("the resumed run: %s %v %v", res.CompletionReason, res.FinalState, err)
			}
		})
	}
}

// appendTo appends a comment to the ensemble ("ens") or responses file.
func appendTo(which string) func(ens, resp string) error {
	return func(ens, resp string) error {
		path := ens
		if which == "resp" {
			path = resp
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(path, []byte(strings.TrimRight(string(data), "\n")+"\n# changed\n"), 0o644)
	}
}
