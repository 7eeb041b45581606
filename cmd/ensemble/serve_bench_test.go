package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
)

// BenchmarkServe posts 1,000 runs of the batch benchmark's ensemble
// (injected responses, every run saved) to ensemble serve from 16 clients
// at once, each POST waiting for its run (Prefer: wait), beside `ensemble
// batch --state` over the same 1,000 inputs at --concurrency 16: the
// service's rate against the batch's, and its p99 latency
// (docs/performance.md).
func BenchmarkServe(b *testing.B) {
	const n, clients = 1000, 16
	dir := b.TempDir()
	args := writeBatchFiles(b, dir, n)
	b.Run("batch/concurrency=16/state", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			a := append(args[:len(args):len(args)], "--concurrency", fmt.Sprint(clients), "--state", filepath.Join(dir, fmt.Sprintf("batch%d.db", i)))
			std := &stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}
			if code := run(context.Background(), a, std); code != 0 {
				b.Fatalf("exit %d", code)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/input")
	})
	b.Run("serve/clients=16/wait", func(b *testing.B) {
		i := 0
		var lat []time.Duration
		for b.Loop() {
			i++
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv, err := serve.New(serve.Options{Paths: []string{filepath.Join(dir, "ensemble.yaml")}, Responses: true, Listen: l.Addr().String(),
				State: filepath.Join(dir, fmt.Sprintf("serve%d.db", i)), Token: "bench", MaxRuns: clients, NoUI: true})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx, l) }()
			url := "http://" + l.Addr().String() + "/v1/ensembles/three/runs"
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
			var next atomic.Int64
			var mu sync.Mutex
			var wg sync.WaitGroup
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := next.Add(1); k <= n; k = next.Add(1) {
						req, _ := http.NewRequest("POST", url, strings.NewReader(fmt.Sprintf(`{"input": "document %d"}`, k)))
						req.Header.Set("Authorization", "Bearer bench")
						req.Header.Set("Prefer", "wait=60")
						t0 := time.Now()
						resp, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						body, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						d := time.Since(t0)
						if resp.StatusCode != 201 || !strings.Contains(string(body), `"status":"completed"`) {
							b.Errorf("%d %s", resp.StatusCode, body)
							return
						}
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/input")
		if len(lat) > 0 {
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		}
	})
}
