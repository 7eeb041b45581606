package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/session"
)

// The keys are checked once per child file, not once per path to it: a
// tree 30 wide and 5 deep (24 million paths to its last file) is checked
// at once, whole when every key is set; the missing key of its last file
// is found.
func TestKeysOfAWideTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const width, depth = 80, 5
	for d := range depth {
		var b strings.Builder
		fmt.Fprintf(&b, "name: d%d\nagents:\n", d)
		for i := range width {
			fmt.Fprintf(&b, "  - {name: a%d, ensemble: d%d.yaml}\n", i, d+1)
		}
		write(t, filepath.Join(dir, fmt.Sprintf("d%d.yaml", d)), b.String())
	}
	write(t, filepath.Join(dir, fmt.Sprintf("d%d.yaml", depth)), `name: last
models:
  fast: {provider: openai, model: m, api_key_env: ENSEMBLE_TEST_UNSET_KEY}
agents:
  - {name: writer, model_profile: fast}
`)
	e, err := session.Load(filepath.Join(dir, "d0.yaml"), nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	withKey := func(name string) (string, bool) { return "sk-test-0123456789", name == "ENSEMBLE_TEST_UNSET_KEY" }
	s, err := session.Open(context.Background(), e, session.Options{LookupEnv: withKey})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = session.Open(context.Background(), e, session.Options{LookupEnv: noEnv})
	if err == nil || !strings.Contains(err.Error(), `agent "a0/a0/a0/a0/a0/writer" calls model profile "fast", whose key is read from ENSEMBLE_TEST_UNSET_KEY, which is not set`) {
		t.Fatalf("err %v", err)
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// --live analyst[1]/think lets one fan-out instance's child call its
// model: its key is checked before the first turn, as analyst/think's.
func TestKeysOfALiveInstancePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "main.yaml"), `name: main
agents:
  - {name: split, script: split.sh}
  - {name: analyst, ensemble: child.yaml, fan_out: {over: context.split}, dependencies: [split]}
`)
	write(t, filepath.Join(dir, "split.sh"), "#!/bin/sh\necho '[\"a\", \"b\"]'\n")
	if err := os.Chmod(filepath.Join(dir, "split.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "child.yaml"), `name: child
models:
  fast: {provider: openai, model: m, api_key_env: ENSEMBLE_TEST_UNSET_KEY}
agents:
  - {name: think, model_profile: fast}
`)
	e, err := session.Load(filepath.Join(dir, "main.yaml"), nil, session.LoadOptions{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := responses.ParseResponses("r.yaml", []byte("split: [[a, b]]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(context.Background(), e, session.Options{LookupEnv: noEnv, Models: session.Models{Responses: resp}})
	if err != nil {
		t.Fatalf("no live agent, no key needed: %v", err)
	}
	s.Close()
	_, err = session.Open(context.Background(), e, session.Options{LookupEnv: noEnv, Models: session.Models{Responses: resp, Live: []string{"analyst[1]/think"}}})
	if err == nil || !strings.Contains(err.Error(), `agent "analyst/think" calls model profile "fast", whose key is read from ENSEMBLE_TEST_UNSET_KEY`) {
		t.Fatalf("err %v", err)
	}
}
