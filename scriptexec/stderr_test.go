package scriptexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/secrets"
)

// A key printed on stderr where the tail is cut (its start dropped with
// the older output, its end kept) leaves no part of it in the tail: the
// tail is redacted before it is cut. Nor does a stderr made of keys, which
// redaction shortens below the tail's size.
func TestStderrTailCutInsideAKey(t *testing.T) {
	t.Parallel()
	const key = "sk-tail-Secret-abcdefghij-0123456789"
	dir := t.TempDir()
	e := keyedEnsemble(dir)
	cases := map[string]string{
		// The key's last 20 bytes are in the last StderrTail bytes.
		"cut inside the key": fmt.Sprintf("head -c 5000 /dev/zero | tr '\\0' A >&2; printf %%s '%s' >&2; head -c %d /dev/zero | tr '\\0' B >&2", key, StderrTail-20),
		"only keys":          fmt.Sprintf("i=0; while [ $i -lt 400 ]; do printf '%%s\\n' '%s' >&2; i=$((i+1)); done; printf 'X%s' >&2", key, key[:7]),
	}
	for name, body := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".sh")
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\necho 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		req := &agent.Request{Ensemble: e, Agent: e.Agent("a"), Turn: 1, Execution: 1,
			Services: agent.Services{Secrets: secrets.New(key)}}
		out, err := ExecScript(context.Background(), req, os.Environ, nil, Spec{Path: path})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(out.Stderr) > StderrTail+len("…") || !strings.HasPrefix(out.Stderr, "…") {
			t.Errorf("%s: a tail of %d bytes: %.40q", name, len(out.Stderr), out.Stderr)
		}
		for i := 0; i+8 <= len(key); i++ {
			if part := key[i : i+8]; strings.Contains(out.Stderr, part) && !strings.Contains("X"+key[:7], part) {
				t.Errorf("%s: the tail holds %q of the key: %.60q…", name, part, out.Stderr)
				break
			}
		}
	}
}
