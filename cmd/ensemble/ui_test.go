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

// ui refuses what it cannot serve, before it listens.
func TestUIRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jsonState := filepath.Join(dir, "run.json")
	if err := os.WriteFile(jsonState, []byte(`{"format": "ensemble-state"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ui"}, "ui needs one or more state databases DB"},
		{[]string{"ui", filepath.Join(dir, "missing.db")}, "missing.db"},
		{[]string{"ui", jsonState}, "is a JSON state file: the inspector reads state databases"},
		{[]string{"ui", example + "ensemble.yaml"}, "ensemble.yaml is an ensemble file, not a state file: the inspector reads state databases"},
		{[]string{"ui", jsonState, "--port", "70000"}, "--port must be from 0 to 65535"},
		{[]string{"ui", jsonState, "--listen", "127.0.0.1:9", "--port", "8"}, "not both"},
	} {
		o := ensembleCmd(t, "", tc.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%s: exit %d %q, want 2 and %q", strings.Join(tc.args, " "), o.code, o.stderr, tc.want)
		}
	}
}

// ui serves the databases given on a loopback port, prints the URL with
// its token, and stops at Ctrl-C (its context) with exit 0.
func TestUIServes(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	if o := ensembleCmd(t, "", "run", example+"ensemble.yaml", "--responses", example+"responses.yaml", "--state", db, "-q", "--output", "json"); o.code != 0 {
		t.Fatalf("run: exit %d %s", o.code, o.stderr)
	}
	pr, pw := io.Pipe()
	var errb strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"ui", db}, &stdio{in: strings.NewReader(""), out: pw, err: &errb, getenv: noEnv})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var url string
	for lines.Scan() {
		if m := regexp.MustCompile(`^  (http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{32})$`).FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatalf("no URL printed; stderr %q", errb.String())
	}
	go io.Copy(io.Discard, pr)
	base, token, _ := strings.Cut(url, "/?token=")
	client := &http.Client{Timeout: time.Minute}
	get := func(path, tok string) (int, []byte) {
		req, _ := http.NewRequest("GET", base+path, nil)
		if tok != "" {
			req.Header.Set("X-Ensemble-Token", tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := get("/api/runs", token)
	var runs struct {
		Runs []struct{ Ensemble, Status string }
	}
	if err := json.Unmarshal(body, &runs); code != 200 || err != nil || len(runs.Runs) != 1 || runs.Runs[0].Ensemble != "iterative-analysis" || runs.Runs[0].Status != "completed" {
		t.Errorf("GET /api/runs: %d %s", code, body)
	}
	if code, _ := get("/api/runs", ""); code != 403 {
		t.Errorf("GET /api/runs without the token: %d, want 403", code)
	}
	if code, body := get("/", ""); code != 200 || !strings.Contains(string(body), "app.js") {
		t.Errorf("GET /: %d %s", code, body)
	}
	cancel()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("exit %d after Ctrl-C; stderr %q", c, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("ui did not stop")
	}
}
