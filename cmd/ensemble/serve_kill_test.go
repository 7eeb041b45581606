package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// killLoadEnsemble is an injected model turn, a script that logs each of
// its executions ("start"/"end" INPUT NONCE in exec.log, in the ensemble's
// folder) and answers its input and nonce, and another injected turn.
const killLoadEnsemble = `name: killload
models: {m: {provider: openai, model: x, base_url: http://127.0.0.1:1}}
agents:
  - name: extract
    model_profile: m
  - name: count
    script: count.sh
    dependencies: [extract]
  - name: report
    model_profile: m
    dependencies: [count]
`

const killLoadScript = `#!/usr/bin/env bash
IFS= read -r -d '' req
[[ $req =~ \"input\":\ *\"([^\"]*)\" ]] && in=${BASH_REMATCH[1]}
nonce=$$-$RANDOM$RANDOM
echo "start ${in// /_} $nonce" >> exec.log
echo "end ${in// /_} $nonce" >> exec.log
printf '{"input": "%s", "nonce": "%s"}' "$in" "$nonce"
`

// servedBinary is ensemble serve, the binary, on a database: its client,
// and the process.
func servedBinary(t *testing.T, dir, db string) (*exec.Cmd, *serveClient) {
	t.Helper()
	cmd, c, err := startServeBinary(cliCommand(t, []string{"ENSEMBLE_PROFILES="}, "serve", dir, "--responses", "--listen", "127.0.0.1:0", "--state", db, "--no-ui"))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, c
}

// execLog reads exec.log: for each input, the nonces of the executions
// that ended, in order, and how many started.
func execLog(t *testing.T, path string) (ended map[string][]string, started int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	ended = map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		if f[0] == "start" {
			started++
		} else {
			ended[f[1]] = append(ended[f[1]], f[2])
		}
	}
	return ended, started
}

// TestServeKilledUnderLoad posts many runs to ensemble serve (the binary)
// from 16 clients, kills it (SIGKILL) at a moment drawn from a logged
// seed, starts it again on the same database, and checks that every run
// ends with its result (each client retries its POST with its
// Idempotency-Key when the server is gone), none lost, and that no script
// execution whose turn was saved ran again: the execution a run's result
// holds is the last of its input's, and only executions cut short by the
// kill (at most --max-runs) were run again.
func TestServeKilledUnderLoad(t *testing.T) {
	t.Parallel()
	const n, clients, maxRuns = 400, 16, 8
	seed := time.Now().UnixNano()
	if s := os.Getenv("SERVE_KILL_SEED"); s != "" { // to replay a failure
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (SERVE_KILL_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	killAfter := n/5 + rng.IntN(2*n/5) // executions ended before the kill

	dir := t.TempDir()
	for name, body := range map[string]string{"ensemble.yaml": killLoadEnsemble, "count.sh": killLoadScript,
		"responses.yaml": "extract: [{facts: [a, b]}]\nreport: [\"All fine.\"]\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(t.TempDir(), "serve.db")
	logPath := filepath.Join(dir, "exec.log")
	cmd, c := servedBinary(t, dir, db)
	var current atomic.Pointer[serveClient]
	current.Store(c)

	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(10 * time.Minute)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1)) - 1; k < n; k = int(next.Add(1)) - 1 {
				ids[k] = postUntilDone(t, &current, k, deadline)
			}
		}()
	}

	for {
		ended, _ := execLog(t, logPath)
		if len(ended) >= killAfter {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d executions before the deadline", len(ended))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The scripts it had started end on their own: let every one log its end.
	for {
		ended, started := execLog(t, logPath)
		total := 0
		for _, e := range ended {
			total += len(e)
		}
		if total == started {
			t.Logf("killed after %d inputs' executions ended (%d started)", len(ended), started)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d executions started, %d ended", started, total)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd2, c2 := servedBinary(t, dir, db)
	defer func() { cmd2.Process.Kill(); cmd2.Wait() }()
	current.Store(c2)
	wg.Wait()
	if t.Failed() {
		return
	}

	ended, _ := execLog(t, logPath)
	again := 0
	for k, id := range ids {
		in := fmt.Sprintf("doc %d", k)
		var res struct {
			Reason string                     `json:"completion_reason"`
			Final  map[string]json.RawMessage `json:"final_state"`
			Count  map[string]int             `json:"agent_execution_count"`
		}
		if _, err := c2.call("GET", "/v1/runs/"+id, nil, &res); err != nil {
			t.Fatal(err)
		}
		var out struct{ Input, Nonce string }
		json.Unmarshal(res.Final["count"], &out)
		if res.Reason != "completed" || out.Input != in || res.Count["extract"] != 1 || res.Count["count"] != 1 || res.Count["report"] != 1 {
			t.Errorf("input %q, run %s: %s %s %v", in, id, res.Reason, res.Final["count"], res.Count)
			continue
		}
		execs := ended[strings.ReplaceAll(in, " ", "_")]
		if len(execs) == 0 || execs[len(execs)-1] != out.Nonce {
			t.Errorf("input %q: the run's execution %s is not the last of %v: a saved turn ran again", in, out.Nonce, execs)
		}
		again += len(execs) - 1
	}
	if again > maxRuns {
		t.Errorf("%d executions ran again, more than the %d a kill can cut short", again, maxRuns)
	}
	t.Logf("%d executions ran again after the kill", again)
}

// postUntilDone posts input k (Idempotency-Key input-k) to the server
// current holds until it answers, then waits for its run to end, across
// the kill and restart: it returns the run's id.
func postUntilDone(t *testing.T, current *atomic.Pointer[serveClient], k int, deadline time.Time) string {
	var id string
	for id == "" {
		var r serveRun
		_, err := current.Load().call("POST", "/v1/ensembles/killload/runs", map[string]any{"input": fmt.Sprintf("doc %d", k)}, &r,
			"Prefer", "wait=120", "Idempotency-Key", fmt.Sprintf("input-%d", k))
		if err == nil {
			id = r.RunID
			if r.Status == "completed" {
				return id
			}
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("input %d: %v", k, err)
			return ""
		}
		time.Sleep(100 * time.Millisecond) // the server is gone: the next one takes over
	}
	for {
		var status string
		_, err := current.Load().call("GET", "/v1/runs/"+id, nil, nil, func(h http.Header) { status = h.Get("Ensemble-Run-Status") })
		if err == nil && status != "queued" && status != "running" && status != "interrupted" {
			return id
		}
		if time.Now().After(deadline) {
			t.Errorf("input %d: run %s: %s %v", k, id, status, err)
			return id
		}
		time.Sleep(100 * time.Millisecond)
	}
}
