package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serve refuses what it cannot serve, before it listens, with exit 2.
func TestServeRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "s.db")
	ens := example + "ensemble.yaml"
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve"}, nil, "serve needs one or more ensemble files or folders"},
		{[]string{"serve", ens, "--state", state, "--temporal", "127.0.0.1:1"}, nil, "--temporal"}, // no engine in this build, or no cluster there
		{[]string{"serve", ens, "--state", state, "--listen", "0.0.0.0:0"}, nil, "not a loopback address: give a token"},
		{[]string{"serve", ens, "--state", state, "--max-runs", "0"}, nil, "--max-runs must be 1 or more"},
		{[]string{"serve", ens, "--state", state, "--max-body", "lots"}, nil, "--max-body"},
		{[]string{"serve", ens, "--state", state, "--token-file", filepath.Join(dir, "none")}, nil, "--token-file"},
		{[]string{"serve", filepath.Join(dir, "missing.yaml"), "--state", state}, nil, "missing.yaml"},
	} {
		env := map[string]string{"PATH": os.Getenv("PATH")}
		o := ensembleEnv(t, env, tc.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%s: exit %d %q, want 2 and %q", strings.Join(tc.args, " "), o.code, o.stderr, tc.want)
		}
	}
}

// serve prints its URL and a generated token, runs an ensemble through the
// run API, and stops at Ctrl-C (its context) with exit 0.
func TestServeServes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pr, pw := io.Pipe()
	var errb strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "../../examples/hello-scripts", "--listen", "127.0.0.1:0", "--state", filepath.Join(dir, "s.db"), "--responses"},
			&stdio{in: strings.NewReader(""), out: pw, err: &errb, getenv: os.LookupEnv})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var base, token string
	for lines.Scan() {
		if m := regexp.MustCompile(`^ensemble serve: (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
		if m := regexp.MustCompile(`^token: ([0-9a-f]{48})$`).FindStringSubmatch(lines.Text()); m != nil {
			token = m[1]
			break
		}
	}
	if base == "" || token == "" {
		t.Fatalf("no URL and token printed; stderr %q", errb.String())
	}
	go io.Copy(io.Discard, pr)
	// the A2A card, which takes no token
	card, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := io.ReadAll(card.Body)
	card.Body.Close()
	if card.StatusCode != 200 || !strings.Contains(string(cb), `"id":"hello-scripts"`) {
		t.Errorf("the A2A card: %d %s", card.StatusCode, cb)
	}
	req, _ := http.NewRequest("POST", base+"/v1/ensembles/hello-scripts/runs", strings.NewReader(`{"input": "serve"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Prefer", "wait=300")
	resp, err := (&http.Client{Timeout: 10 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Status string
		Result struct {
			FinalState map[string]any `json:"final_state"`
		}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &reply); err != nil || resp.StatusCode != 201 || reply.Status != "completed" || len(reply.Result.FinalState) == 0 {
		t.Fatalf("POST: %d %s", resp.StatusCode, b)
	}
	cancel()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("exit %d after Ctrl-C; stderr %q", c, errb.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("serve did not stop")
	}
}
