package serve_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ensemble-run/ensemble/serve"
)

// Runs started while the server closes either start before it closes
// (and it waits for them) or are refused or let go as saved: none is
// launched after Close has begun waiting, which -race reported as a
// WaitGroup Add racing its Wait, and none opens a session that nothing
// closes. Every run a Start created is in the database afterwards, ended
// or resumable.
func TestStartsRacingClose(t *testing.T) {
	t.Parallel()
	needPython(t)
	dir := ensembles(t)
	db := filepath.Join(dir, "s.db")
	for round := range 5 {
		srv, err := serve.New(serve.Options{Paths: []string{dir}, State: db, Token: testToken, NoUI: true, LookupEnv: lookup(nil)})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		runs := srv.Runs()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 6 {
			wg.Go(func() {
				<-start
				in := "racing"
				runs.Start(context.Background(), "count", &in, serve.StartOptions{}) // refused once closing: fine
			})
		}
		wg.Go(func() {
			<-start
			runs.Close(0)
		})
		close(start)
		wg.Wait()
		runs.Close(0) // again: a no-op
	}
	// The database is whole and closed: a new server opens it and goes on
	// with what was left.
	srv, err := serve.New(serve.Options{Paths: []string{dir}, State: db, Token: testToken, NoUI: true, LookupEnv: lookup(nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Runs().Close(0)
}
