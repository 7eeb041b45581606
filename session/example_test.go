package session_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/session"
	"github.com/ensemble-run/ensemble/store"
)

// noEnv is an empty environment: the examples need no key, no variable.
func noEnv(string) (string, bool) { return "", false }

// Load an ensemble file with the built-in kinds of agent, as every front
// door does; its problems come back as one *ensemble.ErrorList, each with
// its FILE:LINE:COL.
func ExampleLoad() {
	e, err := session.Load("testdata/release.yaml", nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Name, e.AgentNames())

	_, err = session.Load("broken.yaml", []byte("name: broken\nagents:\n  - name: a\n    scrip: a.sh\n"), session.LoadOptions{LookupEnv: noEnv})
	fmt.Println(err)
	// Output:
	// release [writer approver publisher]
	// broken.yaml:4:5: unknown key "scrip" in agent "a"; did you mean "script"?
}

// Run an ensemble with injected responses in place of its model and its
// person, then read the result: how it ended, and each execution's record.
func Example() {
	ctx := context.Background()
	e, err := session.Load("testdata/release.yaml", nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		log.Fatal(err)
	}
	responses, err := session.ParseResponses("responses", []byte(`
writer: ["Ensemble 1.1 lets a run wait for a person."]
approver: [{approved: true}]
publisher: ["Published."]
`))
	if err != nil {
		log.Fatal(err)
	}
	s, err := session.Open(ctx, e, session.Options{Models: session.Models{Responses: responses}, LookupEnv: noEnv})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	r, err := s.Start("", session.RunOptions{}) // "": the file's input
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.CompletionReason, "after", res.TurnCount, "turns")
	for _, rec := range res.ConversationHistory {
		fmt.Printf("turn %d: %s said %v\n", rec.TurnNumber, rec.AgentName, rec.OutputData)
	}
	// Output:
	// completed after 3 turns
	// turn 1: writer said Ensemble 1.1 lets a run wait for a person.
	// turn 2: approver said map[approved:true]
	// turn 3: publisher said Published.
}

// Save a run in a state database as it goes (package durable), let it wait
// for a person, then resume it with the answer, as a later process would.
func Example_resume() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ensemble-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "runs.db")
	e, err := session.Load("testdata/release.yaml", nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		log.Fatal(err)
	}
	responses, err := session.ParseResponses("responses", []byte(`
writer: ["Ensemble 1.1 lets a run wait for a person."]
publisher: ["Published."]
`))
	if err != nil {
		log.Fatal(err)
	}
	// Suspend: an ask agent with no answer ends the run awaiting_input
	// rather than failing it.
	opts := session.Options{Models: session.Models{Responses: responses}, Ask: ask.Options{Suspend: true}, LookupEnv: noEnv}

	// The first process: the run stops where it needs the approver.
	s, err := session.Open(ctx, e, opts)
	if err != nil {
		log.Fatal(err)
	}
	d, err := durable.Create(path, "", durable.Refs{}, store.SyncNormal)
	if err != nil {
		log.Fatal(err)
	}
	r, err := s.Start("", session.RunOptions{Save: d, RunID: d.ID()})
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	s.Close()
	fmt.Println(res.CompletionReason, "for", res.PendingInput[0].Agent)

	// Days later, another process: find the run, answer, go on.
	saved, err := durable.Open(path, "", store.SyncNormal) // its one unfinished run, locked
	if err != nil {
		log.Fatal(err)
	}
	defer saved.Close()
	s, err = session.Open(ctx, e, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	d, err = saved.Continue(durable.SavedRefs(saved.File))
	if err != nil {
		log.Fatal(err)
	}
	r, err = s.Resume(saved.File, session.RunOptions{Save: d, Answers: map[string]string{"approver": `{"approved": true}`}})
	if err != nil {
		log.Fatal(err)
	}
	if res, err = r.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.CompletionReason, "after", res.TurnCount, "turns:", res.FinalState["publisher"])
	// Output:
	// awaiting_input for approver
	// completed after 3 turns: Published.
}
