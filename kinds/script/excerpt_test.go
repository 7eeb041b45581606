package script

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/secrets"
)

// Broken JSON on stdout fails the execution with an excerpt of it, cut at
// 200 bytes: a key the cut goes through leaves no part of it there (the
// engine's redaction, later, would no longer recognise a half key).
func TestBrokenJSONExcerptIsRedactedBeforeItIsCut(t *testing.T) {
	t.Parallel()
	const key = "sk-excerpt-Secret-0123456789abcdef"
	dir := t.TempDir()
	// The key starts at byte 185 of stdout: the cut at 200 goes through it.
	stdout := `{"a": "` + strings.Repeat("x", 185-len(`{"a": "`)) + key + `", broken`
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte("#!/bin/sh\nprintf '%s' '"+stdout+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &ensemble.Agent{Name: "s", Kind: Kind{}, Spec: &Spec{Script: "s.sh", Path: filepath.Join(dir, "s.sh")}}
	e := &ensemble.Ensemble{Path: filepath.Join(dir, "e.yaml"), Dir: dir, Name: "t", Agents: []*ensemble.Agent{a}}
	e.Index()
	req := &agent.Request{Ensemble: e, Agent: a, Turn: 1, Execution: 1, Services: agent.Services{Secrets: secrets.New(key)}}
	res := (&Runner{}).Run(context.Background(), req)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "is not valid JSON") {
		t.Fatalf("err %v", res.Err)
	}
	if msg := res.Err.Error(); strings.Contains(msg, key[:10]) {
		t.Errorf("the excerpt holds the start of the key: %s", msg)
	}
}
