package serve

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The server's log is redacted line by line: a line whose caller did not
// redact its error, and what net/http logs, hold no secret of the server.
func TestLogIsRedacted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/count")); err != nil {
		t.Fatal(err)
	}
	const tok, hook = "log-token-0123456789", "whsec-log-0123456789"
	var log bytes.Buffer
	srv, err := New(Options{Paths: []string{dir}, Listen: "127.0.0.1:0", State: filepath.Join(dir, "serve.db"), Token: tok, NoUI: true,
		Stderr: &log, LookupEnv: func(k string) (string, bool) {
			if k == WebhookSecretEnv {
				return hook, true
			}
			return "", false
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Runs().Close(0)
	srv.runs.logf("run x: %s", errors.New("the token "+tok+" and the secret "+hook))
	logWriter{srv.runs}.Write([]byte("http: panic serving: " + tok + "\n"))
	if got := log.String(); strings.Contains(got, tok) || strings.Contains(got, hook) || strings.Count(got, "[REDACTED]") != 3 {
		t.Fatalf("log:\n%s", got)
	}
}
