package serve_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// Clients that go away mid-stream from a run that goes on leave no
// goroutine behind. Not parallel: it counts the goroutines of the
// process.
func TestClientsThatLeaveLeakNothing(t *testing.T) {
	dir := ensembles(t)
	s := startServer(t, dir, nil)
	code, b, _ := s.do(t, "POST", "/v1/ensembles/count/runs", map[string]any{"input": "park"})
	if code != 201 {
		t.Fatalf("%d %s", code, b)
	}
	id := decodeRun(t, b).RunID
	defer killPid(parked(t, dir)) // the run goes on, its second agent asleep
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	count := func() int { tr.CloseIdleConnections(); runtime.GC(); return runtime.NumGoroutine() }
	before := count()
	for range 40 {
		req, _ := http.NewRequest("GET", s.url+"/v1/runs/"+id+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := client.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Read(make([]byte, 64)) // the stream has begun
		cancel()
		resp.Body.Close()
	}
	deadline := time.Now().Add(patience)
	for {
		n := count()
		if n <= before+2 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
