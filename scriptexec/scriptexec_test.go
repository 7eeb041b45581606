package scriptexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

func keyedEnsemble(dir string) *ensemble.Ensemble {
	e := &ensemble.Ensemble{Name: "t", Path: filepath.Join(dir, "e.yaml"), Dir: dir,
		Models: map[string]*ensemble.ModelProfile{"m": {Name: "m", Provider: "openai", Model: "x", APIKeyEnv: "SECRET_KEY"}},
		Agents: []*ensemble.Agent{{Name: "a"}}}
	e.Index()
	return e
}

// A script's environment: the parent's, extra on top, never a profile's
// API key, even when extra sets it.
func TestScriptEnv(t *testing.T) {
	t.Parallel()
	e := keyedEnsemble(t.TempDir())
	got := ScriptEnv([]string{"HOME=/h", "SECRET_KEY=k", "X=old"}, e, map[string]string{"X": "new", "SECRET_KEY": "k2", "A": "1"})
	if want := []string{"HOME=/h", "A=1", "X=new"}; !slices.Equal(got, want) {
		t.Errorf("ScriptEnv = %q, want %q", got, want)
	}
}

// ExecScript runs in the ensemble's folder with the execution's variables,
// which extra cannot override, and a failing script is an *ExitError.
func TestExecScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"$(basename \"$PWD\") $ENSEMBLE_AGENT $ENSEMBLE_TURN $ENSEMBLE_EXECUTION $SECRET_KEY\"\nexit ${CODE:-0}\n"
	if err := os.WriteFile(filepath.Join(dir, "s.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := keyedEnsemble(dir)
	req := &agent.Request{Ensemble: e, Agent: e.Agent("a"), Turn: 2, Execution: 3}
	environ := func() []string { return []string{"SECRET_KEY=k"} }
	for _, tt := range []struct {
		name  string
		extra map[string]string
		code  int
	}{
		{"ok", map[string]string{"ENSEMBLE_TURN": "9"}, 0},
		{"exits 4", map[string]string{"CODE": "4"}, 4},
	} {
		out, err := ExecScript(context.Background(), req, environ, tt.extra, Spec{Path: "s.sh"})
		var exit *ExitError
		switch {
		case tt.code == 0 && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.code != 0 && (!errors.As(err, &exit) || exit.Code != tt.code):
			t.Errorf("%s: err %v, want exit %d", tt.name, err, tt.code)
		}
		if want := filepath.Base(dir) + " a 2 3"; out == nil || strings.TrimSpace(string(out.Stdout)) != want {
			t.Errorf("%s: stdout %v, want %q", tt.name, out, want)
		}
	}
}
